"""The multi_agent_v1 tools answer as Codex 0.171.0 answered in every recorded sub-agent
case (tests/conformance/extra-0.171/multi_agent): a real session, a scripted model on
127.0.0.1 with one script per conversation, outputs compared byte for byte but for the
agent ids, submission ids and nicknames, which change every run."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_magics.agent.agent_ids import NICKNAMES
from agent_magics.agent.multi_agent import MultiAgentTools
from agent_magics.clock import Clock
from agent_magics.events import AgentStatusChanged, Event
from agent_magics.testing import ConversationsServer, HttpFailure, function_call, user_texts
from tests.helpers.conformance import assert_schema_in_own_words
from tests.helpers.sessions import KEY, session_for
from tests.helpers.subagent_cases import (
    MULTI,
    clock_rate,
    golden_outputs,
    load,
    parent_outputs,
    prompt_of,
    server_for,
    shape,
)

REFUSALS = [
    "spawn_ns",
    "spawn_ns_repeat",
    "spawn_empty_ns",
    "close_unknown_bare",
    "close_unknown_dotted",
    "close_unknown_ns",
    "close_uuid_ns",
    "resume_unknown_ns",
    "send_input_no_message_ns",
    "send_input_unknown_ns",
    "wait_empty_ns",
    "wait_unknown_ns",
]
CONVERSATIONS = [
    "spawn_wait",
    "close_send_resume",
    "depth_child_spawns",
    "live_limit",
    "live_limit_sequential",
    "two_children_wait_both",
    "fork_context",
    "live_limit_completed",
    "child_model_error",
    "wait_timeout",  # waits of 10 s (Codex's least) and 30 s, on a faster clock
]
MULTI_NS = "multi_agent_v1"
DEPARTURES = {("spawn_variants", "v6"), ("fork_context", "e0")}
"""Not compared: Codex refuses reasoning_effort for a model it knows has none (we know
no model's efforts and pass the setting on); fork_context's first call is a command whose
output (chunk id, wall time) is the shell tools' business."""


async def _replay(
    name: str, tmp_path: Path, speed_clock: Callable[[float], Clock]
) -> tuple[dict[str, str], dict[str, str]]:
    case, golden = load(name)
    speed_clock(clock_rate(case))
    server = server_for(case)
    with server:
        session = session_for(
            tmp_path, server.base_url, shell_type="unified_exec", model="peer-mock-model",
            request_max_retries=0, stream_max_retries=0,  # as the recordings ran Codex
        )  # fmt: skip
        try:
            await session.run_turn(prompt_of(case))
        finally:
            await session.aclose()
    ours = parent_outputs(server, prompt_of(case))
    return ours, golden_outputs(golden, prompt_of(case))


def _statuses(text: str) -> tuple[bool, list[str]]:
    """A wait's outcome, its statuses compared whole: an errored child's text is
    Codex's, byte for byte (the server's 400 body, Codex's words for a cut stream)."""
    value = json.loads(text)
    return value["timed_out"], sorted(shape(json.dumps(v)) for v in value["status"].values())


@pytest.mark.parametrize("name", [*REFUSALS, *CONVERSATIONS, "spawn_variants"])
async def test_outputs_are_codexs(
    name: str, tmp_path: Path, speed_clock: Callable[[float], Clock]
) -> None:
    ours, theirs = await _replay(name, tmp_path, speed_clock)
    assert set(ours) == set(theirs)
    for call_id, text in theirs.items():
        if (name, call_id) in DEPARTURES:
            continue
        if text.startswith('{"status":{'):  # a map of agents, in no set order
            assert _statuses(ours[call_id]) == _statuses(text), call_id
        else:
            assert shape(ours[call_id]) == shape(text), call_id


async def test_the_namespace_is_codexs_in_our_words(tmp_path: Path) -> None:
    session = session_for(tmp_path, "http://127.0.0.1:9/v1")
    assert_schema_in_own_words(MultiAgentTools(session.agents), "codex_tool_specs.json")
    await session.aclose()


def test_nicknames_come_from_codexs_pool() -> None:
    recorded = "".join(p.read_text() for p in (MULTI / "goldens").glob("*.json"))
    seen = set(re.findall(r'\\"nickname\\":\\"([^"\\]+)\\"', recorded))
    assert len(seen) > 20  # the recordings name many agents
    assert seen <= set(NICKNAMES)


def _notes(bodies: list[dict[str, Any]]) -> set[str]:
    """The ``<subagent_notification>`` texts a conversation's requests carried."""
    return {
        _masked(text)
        for body in bodies
        for text in user_texts({"input": body.get("input", []) + body.get("new_input", [])})
        if text.startswith("<subagent_notification>")
    }


def _masked(text: str) -> str:
    """:func:`shape`, and the scripted server's port (in Codex's ``url: ...``)."""
    return re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:<port>", shape(text))


@pytest.mark.parametrize("name", ["child_model_error", "child_http_errors"])
async def test_an_errored_childs_text_is_codexs_and_its_card_ours(
    name: str, tmp_path: Path, speed_clock: Callable[[float], Clock]
) -> None:
    """Children whose request failed: HTTP 400 and a stream cut short
    (child_model_error); 500, 429, 404 and an overloaded 503, retries off
    (child_http_errors). The parent's model reads Codex's texts byte for byte, in
    wait_agent's output and in the notifications; the events the cards and the terminal
    show carry our sentences."""
    case, golden = load(name)
    speed_clock(clock_rate(case))
    prompt = prompt_of(case)
    events: list[Event] = []
    with server_for(case) as server:
        session = session_for(
            tmp_path, server.base_url, model="peer-mock-model",
            request_max_retries=0, stream_max_retries=0,
        )  # fmt: skip
        session.subscribe(events.append)
        try:
            await session.run_turn(prompt)
        finally:
            await session.aclose()
    ours, theirs = parent_outputs(server, prompt), golden_outputs(golden, prompt)
    assert set(ours) == set(theirs)
    for call_id, text in theirs.items():  # one agent a wait: whole outputs, byte for byte
        assert _masked(ours[call_id]) == _masked(text), call_id
    assert _notes(server.by_conversation[prompt]) == _notes(golden["conversations"][prompt])
    shown = [e.final_text for e in events if isinstance(e, AgentStatusChanged)]
    errors = [text for text in shown if text and text.startswith("The model")]
    assert len(errors) == len(case["agents"]) - 1  # each child's error, in our words
    if name == "child_model_error":
        assert "The model server rejected the request (HTTP 400): scripted bad request" in errors
        assert "The model's answer failed: stream closed before response.completed." in errors


@pytest.mark.parametrize("status", [400, 404])
async def test_a_key_an_error_body_quotes_never_reaches_the_parents_model(
    status: int, tmp_path: Path
) -> None:
    """Codex's text quotes the server's words (a 400's whole body, a 404's message): a
    server that echoes the API key there gets ``[redacted]`` in the parent's history."""
    body = json.dumps({"error": {"message": f"bad key {KEY} for you", "type": "x"}})
    parent, child = "PARENT: key echo", "CHILD: key echo"
    spawn = {"message": child}
    scripts: dict[str, list[Any]] = {
        parent: [
            [function_call("spawn_agent", spawn, "s1") | {"namespace": MULTI_NS}],
            lambda request: [
                function_call("wait_agent", {"targets": [_spawned(request)]}, "w1")
                | {"namespace": MULTI_NS}
            ],
        ],
        child: [HttpFailure(status, body)],
    }
    with ConversationsServer(scripts) as server:
        session = session_for(tmp_path, server.base_url, request_max_retries=0)
        try:
            await session.run_turn(parent)
        finally:
            await session.aclose()
    sent = json.dumps(server.by_conversation[parent])
    assert KEY not in sent
    assert "bad key [redacted] for you" in parent_outputs(server, parent)["w1"]


def _spawned(request: dict[str, Any]) -> str:
    outputs = [i for i in request["input"] if i.get("type") == "function_call_output"]
    return str(json.loads(outputs[0]["output"])["agent_id"])
