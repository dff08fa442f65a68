"""Record ``demo.jsonl`` for real: our own session against a scripted loopback model.

    python -m agent_magics.recordings.record_demo [OUT]

A scripted Responses server on 127.0.0.1 plays the model; the session, its HTTP
client, the tools and the recorder are the real ones, so the recording holds exactly
what a live session sends and receives. Commands are written portably (``python3``,
relative paths) so the recording plays back in any folder holding the demo files.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from agent_magics.config import SessionConfig
from agent_magics.recordings import DEMO_PROMPT, write_demo_files
from agent_magics.terminal.demo import FIX
from agent_magics.testing import ScriptedResponsesServer, custom_tool_call, function_call, message

HERE = Path(__file__).resolve().parent
FINAL = (
    "`mean()` added 1 to every result. I removed the `+ 1` in `stats.py`, and "
    "`test_stats.py` now passes."
)


def script() -> list[Any]:
    plan = [
        {"step": "Read the code and the test", "status": "in_progress"},
        {"step": "Fix mean()", "status": "pending"},
        {"step": "Run the test", "status": "pending"},
    ]
    done = [dict(step, status="completed") for step in plan]
    cat = {"cmd": "cat stats.py test_stats.py", "login": False}
    test = {"cmd": "python3 test_stats.py", "login": False}
    return [
        [function_call("update_plan", {"plan": plan}, "call_demo_plan")],
        [function_call("exec_command", cat, "call_demo_cat")],
        [custom_tool_call("apply_patch", FIX, "call_demo_patch")],
        [function_call("exec_command", test, "call_demo_test")],
        [function_call("update_plan", {"plan": done}, "call_demo_done")],
        [message(FINAL, "msg_demo_final")],
    ]


async def record(out: Path) -> str:
    from agent_magics.agent.session import Session
    from agent_magics.protocol.approval import approve_all

    with tempfile.TemporaryDirectory(prefix="agent-magics-record-") as folder:
        root = Path(folder)
        write_demo_files(root)
        with ScriptedResponsesServer(script()) as server:
            config = SessionConfig(
                model="scripted-demo",
                provider="responses",
                base_url=server.base_url,
                cwd=root,
                record_path=out,
            )
            session = Session(config, approver=approve_all)
            try:
                result = await session.run_turn(DEMO_PROMPT)
            finally:
                await session.aclose()
    return result.final_text


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else HERE / "demo.jsonl"
    print(asyncio.run(record(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
