"""What handing work to a helper costs a person: the same ``ROUNDS`` command rounds
(``exec_command`` running ``true``) done by a sub-agent the parent spawns and waits for,
against the parent doing them itself, through real sessions and a scripted model on
127.0.0.1; and how much memory each open helper holds.

    .venv/bin/python bench/subagent_bench.py

The helper's side pays for one spawn (a child session: its tool registry and shell
setup), two more model requests of the parent (the spawn's answer and the wait's) and
the notification.
"""

from __future__ import annotations

import asyncio
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROUNDS = 20
RUNS = 7
PARENT, CHILD = "PARENT: do the work", "CHILD: do the work"


def _script(rounds: int) -> list[Any]:
    from agent_magics.testing import function_call, message

    cmd = {"cmd": "true", "yield_time_ms": 10_000}
    turns: list[Any] = [[function_call("exec_command", cmd, f"c{i}")] for i in range(rounds)]
    return [*turns, [message("done")]]


def _delegating(rounds: int) -> list[Any]:
    """The parent's script: spawn the helper, wait for it, answer."""
    import json

    from agent_magics.testing import function_call, message

    def wait(body: dict[str, Any]) -> list[dict[str, Any]]:
        said = {
            i["call_id"]: i["output"]
            for i in body["input"]
            if i.get("type") == "function_call_output" and "call_id" in i
        }
        agent_id = json.loads(said["s1"])["agent_id"]
        args = {"targets": [agent_id], "timeout_ms": 600_000}
        return [function_call("wait_agent", args, "w1") | {"namespace": "multi_agent_v1"}]

    spawn = function_call("spawn_agent", {"message": CHILD}, "s1")
    return [[spawn | {"namespace": "multi_agent_v1"}], wait, [message("done")]]


async def _turn(cwd: Path, scripts: dict[str, list[Any]], child_requests: int) -> float:
    from agent_magics.agent.session import Session
    from agent_magics.config import SessionConfig
    from agent_magics.testing import ConversationsServer

    with ConversationsServer(scripts) as server:
        config = SessionConfig(
            base_url=server.base_url, cwd=cwd, approval_policy="never",
            sandbox_mode="danger-full-access", allow_login_shell=False,
        )  # fmt: skip
        session = Session(config)
        try:
            start = time.perf_counter()
            result = await session.run_turn(PARENT)
            spent = time.perf_counter() - start
        finally:
            await session.aclose()
        ran = len(server.by_conversation.get(CHILD, []))
        if result.final_text != "done" or ran != child_requests:
            raise RuntimeError(f"the turn went wrong: {result.final_text!r}, {ran} requests")
    return spent


def rounds(cwd: Path, n: int = ROUNDS, runs: int = RUNS) -> tuple[float, float]:
    """Median seconds of the whole turn: (helper does the rounds, parent does them)."""
    helper, own = [], []
    for _ in range(runs):  # interleaved: both sides see the same load
        delegating = {PARENT: _delegating(n), CHILD: _script(n)}
        helper.append(asyncio.run(_turn(cwd, delegating, n + 1)))
        own.append(asyncio.run(_turn(cwd, {PARENT: _script(n)}, 0)))
    return statistics.median(helper), statistics.median(own)


async def _open_helpers(cwd: Path, count: int) -> float:
    """KB of peak RSS added by ``count`` helpers left open after their answer."""
    from agent_magics.agent.session import Session
    from agent_magics.config import SessionConfig
    from agent_magics.testing import ConversationsServer, function_call, message

    spawns = [
        function_call("spawn_agent", {"message": f"{CHILD} {i}"}, f"s{i}")
        | {"namespace": "multi_agent_v1"}
        for i in range(count)
    ]
    scripts: dict[str, list[Any]] = {PARENT: [spawns, [message("done")]]}
    scripts |= {f"{CHILD} {i}": [[message("ok")]] for i in range(count)}
    with ConversationsServer(scripts) as server:
        config = SessionConfig(base_url=server.base_url, cwd=cwd, allow_login_shell=False)
        session = Session(config)
        await session.run_turn("warm up")  # the parent's own first turn is not counted
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        await session.run_turn(PARENT)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        await session.aclose()
    return (after - before) / count


def main() -> None:
    cwd = Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd()
    helper, own = rounds(cwd)
    print(
        f"{ROUNDS} rounds by a helper: {helper * 1e3:.0f} ms; by the parent: {own * 1e3:.0f} ms;"
        f" ratio {helper / own:.2f}"
    )
    print(f"peak RSS per open helper: {asyncio.run(_open_helpers(cwd, 6)):.0f} KB")


if __name__ == "__main__":
    main()
