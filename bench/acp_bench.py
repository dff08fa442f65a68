"""What the chat panel costs a person: the same ``ROUNDS`` command rounds (``exec_command``
running ``true``) in one turn asked through ``agent-magics acp`` (a real process, the
SDK's own client over stdio, every update folded and sent) against the same turn run by
a ``Session`` in this process, with a scripted model on 127.0.0.1 for both.

    .venv/bin/python bench/acp_bench.py [--quick]

Each side's session is warmed by one turn first (the agent process started, its imports
and first request paid), so the value is what a prompt costs once the chat is open.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROUNDS = 20
RUNS = 7


def _script(rounds: int) -> list[Any]:
    from agent_magics.testing import function_call, message

    cmd = {"cmd": "true", "yield_time_ms": 10_000}
    turns: list[Any] = [[function_call("exec_command", cmd, f"c{i}")] for i in range(rounds)]
    return [*turns, [message("done")]]


class _Client:
    """An ACP client that takes every update and is never asked (policy never)."""

    def __init__(self) -> None:
        self.updates = 0

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.updates += 1

    async def request_permission(self, *args: Any, **kw: Any) -> Any:
        raise RuntimeError("asked under policy never")


async def _turns(cwd: Path, home: Path, runs: int, rounds: int) -> tuple[list[float], list[float]]:
    """Seconds of each turn, interleaved: (through the ACP process, in this process)."""
    from acp import PROTOCOL_VERSION
    from acp.stdio import spawn_agent_process

    from agent_magics.agent.session import Session
    from agent_magics.config import SessionConfig
    from agent_magics.testing import ScriptedResponsesServer

    script = _script(rounds) * (runs + 1)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(home), "OPENAI_API_KEY": "sk-bench-acp-0123456789"}
    acp_times: list[float] = []
    own_times: list[float] = []
    with (
        ScriptedResponsesServer(script) as chat_model,
        ScriptedResponsesServer(script) as own_model,
    ):
        argv = ["-m", "agent_magics", "acp", "--base-url", chat_model.base_url, "-m", "m"]
        argv += ["--provider", "responses", "-a", "never", "-s", "danger-full-access"]
        argv += ["-c", "allow_login_shell=false", "-c", "sessions_dir=false"]
        config = SessionConfig(
            base_url=own_model.base_url, cwd=cwd, approval_policy="never", provider="responses",
            sandbox_mode="danger-full-access", allow_login_shell=False, model="m",
            api_key="sk-bench-acp-0123456789",
        )  # fmt: skip
        session = Session(config)
        session.subscribe(lambda event: None)  # a front end folds the events too
        client = _Client()
        try:
            async with spawn_agent_process(client, sys.executable, *argv, env=env, cwd=cwd) as (
                conn,
                _,
            ):
                await conn.initialize(protocol_version=PROTOCOL_VERSION)
                chat = await conn.new_session(cwd=str(cwd), mcp_servers=[])
                text = [{"type": "text", "text": "go"}]
                for _ in range(runs + 1):  # the first of each warms its side up
                    start = time.perf_counter()
                    await conn.prompt(session_id=chat.session_id, prompt=text)
                    acp_times.append(time.perf_counter() - start)
                    start = time.perf_counter()
                    await session.run_turn("go")
                    own_times.append(time.perf_counter() - start)
        finally:
            await session.aclose()
    if client.updates < rounds * runs:
        raise RuntimeError(f"only {client.updates} updates reached the client")
    return acp_times[1:], own_times[1:]


def rounds(runs: int = RUNS, n: int = ROUNDS) -> tuple[float, float]:
    """Median seconds of the turn: (through ``agent-magics acp``, in this process)."""
    with tempfile.TemporaryDirectory() as tmp:
        cwd, home = Path(tmp) / "ws", Path(tmp) / "home"
        cwd.mkdir()
        home.mkdir()
        acp, own = asyncio.run(_turns(cwd, home, runs, n))
    return statistics.median(acp), statistics.median(own)


def main() -> None:
    acp, own = rounds(runs=2 if "--quick" in sys.argv else RUNS)
    print(
        f"{ROUNDS} rounds through agent-magics acp: {acp * 1e3:.0f} ms; in this process:"
        f" {own * 1e3:.0f} ms; ratio {acp / own:.2f}"
    )


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
