"""A session of one protocol against a loopback fault server (tests/helpers/fault_server.py),
its events and errors collected, and the ``fault_run`` fixture that makes them and closes
their servers (the resilience and bad-input tests)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_magics.errors import UserError
from agent_magics.events import Event, RetryScheduled
from tests.helpers.chat_fault_server import chat_sse
from tests.helpers.fault_server import Answer, FaultServer, responses_sse
from tests.helpers.sessions import session_for

KEY = "sk-resilience-secret-24680"
ENCODERS: dict[str, Callable[[list[dict[str, Any]]], bytes]] = {
    "responses": responses_sse,
    "chat": chat_sse,
}


class FaultRun:
    """A session of one protocol against a fault server; events and errors collected."""

    def __init__(self, tmp_path: Path, protocol: str, answers: list[Answer], **extra: Any):
        self.protocol = protocol
        self.server = FaultServer(answers, encode=ENCODERS[protocol])
        url = self.server.base_url
        self.session = session_for(tmp_path, url, api_key=KEY, provider=protocol, **extra)
        self.events: list[Event] = []
        self.session.subscribe(self.events.append)

    async def turn(self, prompt: str = "go") -> str:
        result = await self.session.run_turn(prompt)
        return result.final_text

    async def failing_turn(self, prompt: str = "go") -> UserError:
        with pytest.raises(UserError) as info:
            await self.session.run_turn(prompt)
        error = info.value
        assert KEY not in str(error)
        return error

    @property
    def retries(self) -> list[RetryScheduled]:
        return [e for e in self.events if isinstance(e, RetryScheduled)]

    def calls_and_outputs_pair(self) -> bool:
        items = [i.wire() for i in self.session.history]
        calls = [i["call_id"] for i in items if i["type"] in ("function_call", "custom_tool_call")]
        outs = [i["call_id"] for i in items if i["type"].endswith("_output")]
        return sorted(calls) == sorted(outs) and len(set(calls)) == len(calls)

    def assert_clean(self) -> None:
        assert KEY not in repr(self.events)
        assert KEY not in json.dumps(self.server.requests)
        assert self.calls_and_outputs_pair()


@pytest.fixture
def fault_run(tmp_path: Path) -> Iterator[Callable[..., FaultRun]]:
    """``fault_run(protocol, answers, **settings)``: a :class:`FaultRun` whose server is
    closed after the test."""
    runs: list[FaultRun] = []

    def make(protocol: str, answers: list[Answer], **extra: Any) -> FaultRun:
        runs.append(FaultRun(tmp_path, protocol, answers, **extra))
        return runs[-1]

    yield make
    for r in runs:
        r.server.close()
