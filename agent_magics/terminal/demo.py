"""``agent-magics demo``: one real turn, offline, driven by a scripted model.

A small sample project is copied into a temporary folder; a scripted Responses server on
127.0.0.1 plays the model's part (plan, look, patch, test, answer), while everything else
is real: the HTTP client, the session loop, the tools, approvals and the patch applier.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path
from typing import Any

from agent_magics.config import SessionConfig
from agent_magics.testing import ScriptedResponsesServer, custom_tool_call, function_call, message

SAMPLE = {
    "stats.py": ("def mean(values):\n    return sum(values) / len(values) + 1\n"),
    "test_stats.py": (
        "from stats import mean\n\nassert mean([1, 2, 3]) == 2\nprint('all tests passed')\n"
    ),
}

FIX = """*** Begin Patch
*** Update File: stats.py
@@
 def mean(values):
-    return sum(values) / len(values) + 1
+    return sum(values) / len(values)
*** End Patch
"""


NEXT_STEPS = (
    "Next: open notebooks/quickstart.ipynb in Jupyter to run the agent in %%agent cells, "
    "with approval cards and your variables at hand.",
    "With a real model: set OPENAI_API_KEY, or pass --base-url to an OpenAI-compatible "
    'server, e.g. agent-magics exec --base-url http://127.0.0.1:8000/v1 -m MODEL "your task".',
)


def script() -> list[Any]:
    plan = [
        {"step": "Read the code and the test", "status": "in_progress"},
        {"step": "Fix mean()", "status": "pending"},
        {"step": "Run the test", "status": "pending"},
    ]
    done = [dict(s, status="completed") for s in plan]
    return [
        [function_call("update_plan", {"plan": plan})],
        [function_call("exec_command", {"cmd": "cat stats.py test_stats.py"})],
        [custom_tool_call("apply_patch", FIX)],
        [function_call("exec_command", {"cmd": f"{sys.executable} test_stats.py"})],
        [function_call("update_plan", {"plan": done})],
        [
            message(
                "`mean()` added 1 to every result; I removed the `+ 1` in `stats.py` and "
                "`test_stats.py` now passes."
            )
        ],
    ]


async def run_demo() -> int:
    from agent_magics.agent.session import Session
    from agent_magics.protocol.approval import approve_all
    from agent_magics.terminal.console import TerminalConsole

    with tempfile.TemporaryDirectory(prefix="agent-magics-demo-") as folder:
        root = Path(folder)
        for name, text in SAMPLE.items():
            (root / name).write_text(text, encoding="utf-8")
        with ScriptedResponsesServer(script()) as server:
            config = SessionConfig(model="scripted-demo", base_url=server.base_url, cwd=root)
            session = Session(config, approver=approve_all)
            session.subscribe(TerminalConsole(interactive=False).report)
            print(
                "Offline demo: a scripted model on 127.0.0.1 drives real tools in a "
                "temporary copy of a sample project.",
                file=sys.stderr,
            )
            try:
                result = await session.run_turn("mean() gives wrong results; fix it.")
            finally:
                await session.aclose()
        print(result.final_text)
        print("\n--- stats.py after the turn ---\n" + (root / "stats.py").read_text())
    print("\n".join(NEXT_STEPS), file=sys.stderr)
    return 0


def main() -> int:
    return asyncio.run(run_demo())
