"""The agent's clock (agent_magics/clock.py): its seconds at any rate, and the waits that
ask it. A faster clock changes no text or number the model or the person reads: a retry
is still announced with the backoff Codex would wait."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_magics import clock
from agent_magics.clock import REAL, Clock
from agent_magics.events import Event, RetryScheduled
from agent_magics.testing import HttpFailure, ScriptedResponsesServer, StreamCut, message
from tests.helpers.cli import agent_magics
from tests.helpers.sessions import KEY, session_for


@pytest.mark.parametrize("rate", [0.5, 0.0, -1.0, float("nan")])
def test_a_clock_never_runs_slower_than_real_time(rate: float) -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Clock(rate)


def test_the_process_runs_on_the_real_clock() -> None:
    assert clock.current() is REAL and REAL.rate == 1.0


async def test_a_faster_clock_counts_its_own_seconds() -> None:
    fast = Clock(rate=200)
    assert fast.real(30) == 0.15 and fast.real(-1) == 0.0
    start = fast.monotonic()
    await fast.sleep(5)
    assert fast.monotonic() - start >= 5 - 1e-3


async def test_wait_gives_the_first_done_or_nothing_at_the_timeout() -> None:
    fast = Clock(rate=1000)
    ready, never = asyncio.get_running_loop().create_future(), asyncio.Event()
    ready.set_result(1)
    pending = asyncio.ensure_future(never.wait())
    assert await fast.wait([ready, pending], 10) == {ready}
    assert await fast.wait([pending], 10) == set()
    assert not pending.done()  # left running for the caller to cancel
    pending.cancel()


async def test_retries_on_a_faster_clock_announce_codexs_delays(
    tmp_path: Path, speed_clock: Callable[[float], Clock]
) -> None:
    """An overloaded answer (retried by the HTTP layer) and a cut stream (retried by the
    session): each retry is announced with its nominal backoff, 200 ms ± 10 %."""
    speed_clock(1000)
    overloaded = HttpFailure(503, json.dumps({"error": {"message": "overloaded"}}))
    events: list[Event] = []
    with ScriptedResponsesServer([overloaded, StreamCut(), [message("done")]]) as server:
        session = session_for(tmp_path, server.base_url)
        session.subscribe(events.append)
        try:
            await session.run_turn("go")
        finally:
            await session.aclose()
    retries = [e for e in events if isinstance(e, RetryScheduled)]
    assert len(retries) == 2
    assert all(r.attempt == 1 and 0.18 <= r.delay_s <= 0.22 for r in retries), retries


def test_a_cli_started_on_a_faster_clock_says_the_nominal_delay(tmp_path: Path) -> None:
    """A test starts ``agent-magics exec`` with its clock set (tests/helpers/cli.py): the
    retry's line is the one a person reads at the real rate."""
    overloaded = HttpFailure(503, json.dumps({"error": {"message": "overloaded"}}))
    with ScriptedResponsesServer([overloaded, [message("done")]]) as server:
        base = ["--provider", "responses", "--base-url", server.base_url, "-m", "m"]
        done = agent_magics(
            tmp_path, "exec", "--json", *base, "go", env={"OPENAI_API_KEY": KEY}, clock_rate=1000
        )
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    said = [e["message"] for e in lines if e["type"] == "error"]
    assert said == ["Retrying in 0.2 s (attempt 1): HTTP 503"]
