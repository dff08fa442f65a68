"""get_goal, create_goal, update_goal through a real session against Codex 0.171.0's
recordings: every answer byte for byte (the thread id and timestamps by shape), the
``goal_objective`` output after create_goal, the note when the budget runs out, the specs
in our own words and their place in the tool list."""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.tools.handlers.goals import GOAL_HANDLERS
from tests.helpers.conformance import assert_schema_in_own_words
from tests.helpers.sessions import session_for

GOALS = Path(__file__).parents[2] / "conformance" / "extra-0.171" / "goals"


class _AnyInt:
    def __eq__(self, other: object) -> bool:
        return isinstance(other, int)


ANY_INT = _AnyInt()
CASES = sorted(p.stem for p in (GOALS / "cases").glob("*.json"))
THREAD = re.compile(r'"threadId":"[^"]+"')
STAMPS = re.compile(r'"(createdAt|updatedAt|timeUsedSeconds)":\d+')


def shape(text: str) -> str:
    """A goal answer with what changes every run masked: the thread id, the times."""
    return STAMPS.sub(r'"\1":N', THREAD.sub('"threadId":T', text))


def outputs_by_request(requests: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Every tool output seen, by call id, with the request that first carried it; an
    output with no call id (``goal_objective``) is keyed by its place among those."""
    seen: dict[str, dict[str, Any]] = {}
    for index, body in enumerate(requests):
        bare = 0
        for item in body["input"]:
            if item.get("type") != "function_call_output":
                continue
            key = item.get("call_id") or f"goal_objective#{bare}"
            bare += "call_id" not in item
            extra = {k: v for k, v in item.items() if k not in ("type", "call_id", "output")}
            seen.setdefault(key, {"request_index": index, "output": item["output"], **extra})
    return seen


def golden_outputs(golden: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The recording's outputs keyed as :func:`outputs_by_request` keys ours."""
    out: dict[str, dict[str, Any]] = {}
    for key, rec in golden["outputs"].items():
        if key != "null":
            out[key] = {"request_index": rec["request_index"], "output": rec["output"]}
    for n, rec in enumerate(golden.get("goal_objective_outputs", [])):
        out[f"goal_objective#{n}"] = dict(rec)
    if "goal_objective_outputs" not in golden and "null" in golden["outputs"]:
        rec = golden["outputs"]["null"]  # recorded with one create_goal: one such output
        out["goal_objective#0"] = {
            k: rec[k] for k in ("request_index", "output", "name", "namespace")
        }
    return out


def same_answer(ours: str, theirs: str) -> bool:
    """Equal but for the masked values; a wrongly typed argument's error names the same
    value and type (the position serde gives is where the value ends, ours where the
    text does, as for every tool: see tests/conformance/README.md)."""
    if theirs.startswith(("invalid type:", "unknown variant")):
        return ours.split(" at line ")[0] == theirs.split(" at line ")[0]
    return shape(ours) == shape(theirs)


async def run_case(tmp_path: Path, name: str) -> tuple[list[dict[str, Any]], str]:
    case = json.loads((GOALS / "cases" / f"{name}.json").read_text())
    script: list[Any] = [
        [function_call(c["name"], c["arguments"], c["call_id"]) for c in turn]
        for turn in case["turns"]
    ]
    with ScriptedResponsesServer(script) as server:
        session = session_for(tmp_path, server.base_url)
        await session.run_turn("Run the scripted tool calls.")
        await session.aclose()
    return server.requests, session.thread_id


@pytest.mark.parametrize("name", CASES)
async def test_answers_as_codex_0171(tmp_path: Path, name: str) -> None:
    golden = json.loads((GOALS / "goldens" / f"{name}.json").read_text())
    requests, thread_id = await run_case(tmp_path, name)
    ours = outputs_by_request(requests)
    recorded = golden_outputs(golden)
    assert set(ours) == set(recorded)
    for key, theirs in recorded.items():
        got = ours[key]
        assert got.pop("request_index") == theirs.pop("request_index"), key
        assert same_answer(got.pop("output"), theirs.pop("output")), key
        assert got == theirs, key  # name and namespace of goal_objective, nothing else
    for key in recorded:
        if '"threadId"' in ours[key].get("output", ""):
            assert json.loads(ours[key]["output"])["goal"]["threadId"] == thread_id
    # the goal_objective output follows create_goal's answer, as in Codex's requests
    last = [i.get("call_id") or i.get("name") for i in requests[-1]["input"] if "output" in i]
    expected = [k if k is not None else "goal_objective" for k in golden["order"]]
    assert [x for x in last if x in expected] == expected


async def test_a_spent_budget_is_told_in_codexs_words(tmp_path: Path) -> None:
    golden = json.loads((GOALS / "goldens" / "budget_exhausted.json").read_text())
    requests, _ = await run_case(tmp_path, "budget_exhausted")
    notes = [
        i["content"][0]["text"]
        for i in requests[-1]["input"]
        if i.get("type") == "message" and "codex_internal_context" in str(i["content"])
    ]
    theirs = [i["content"][0]["text"] for i in golden["extra_input_items"]]
    assert notes == theirs
    # it comes once, right after the outputs of the response that spent the budget
    kinds = [i.get("call_id") or i.get("role") for i in requests[-1]["input"]]
    assert kinds[kinds.index("c3") + 2] == "user"


@pytest.mark.parametrize("make", GOAL_HANDLERS)
def test_specs_are_codexs_in_our_own_words(make: Any) -> None:
    assert_schema_in_own_words(make(), "codex_tool_specs.json")


async def test_offered_where_codex_offers_them(tmp_path: Path) -> None:
    with ScriptedResponsesServer([]) as server:
        session = session_for(tmp_path, server.base_url)
        await session.run_turn("hi")
        await session.aclose()
    names = [t.get("name") for t in server.requests[0]["tools"]]
    codex = json.loads((GOALS / "goldens" / "get_goal_none.json").read_text())["tool_names"]
    assert [n for n in names if n in codex] == [n for n in codex if n in names]
    assert names[names.index("get_goal") : names.index("get_goal") + 3] == [
        "get_goal",
        "create_goal",
        "update_goal",
    ]


async def test_a_resumed_session_has_the_goal_and_its_usage_goes_on(tmp_path: Path) -> None:
    from agent_magics.store.recorder import record_session
    from agent_magics.store.resume import continue_in, load_resume

    folder = tmp_path / "sessions"
    first: list[Any] = [
        [function_call("create_goal", {"objective": "ship it", "token_budget": 100}, "c1")],
        [function_call("get_goal", {}, "c2")],
    ]
    with ScriptedResponsesServer(first) as server:
        session = session_for(tmp_path, server.base_url)
        recorder = record_session(session, folder)
        assert recorder is not None
        await session.run_turn("set a goal")
        recorder.close()
        await session.aclose()
    before = json.loads(outputs_by_request(server.requests)["c2"]["output"])["goal"]
    assert before["tokensUsed"] == 0  # counted once the response's calls ran
    with ScriptedResponsesServer([[function_call("get_goal", {}, "c3")]]) as server:
        resumed = session_for(tmp_path, server.base_url)
        continue_in(resumed, load_resume(folder, "last"))
        await resumed.run_turn("how far along?")
        await resumed.aclose()
    after = json.loads(outputs_by_request(server.requests)["c3"]["output"])
    # the first turn's two responses after the creating one, its final message too
    assert after["goal"] == {**before, "tokensUsed": 30, "timeUsedSeconds": ANY_INT}
    assert after["remainingTokens"] == 70
    # the goal_objective output was saved and goes back as it came: no call id
    kept = [i for i in server.requests[0]["input"] if i.get("name") == "goal_objective"]
    assert kept == [
        {
            "type": "function_call_output",
            "name": "goal_objective",
            "namespace": "agent",
            "output": "ship it",
        }
    ]


async def test_a_new_conversation_has_no_goal(tmp_path: Path) -> None:
    script: list[Any] = [
        [function_call("create_goal", {"objective": "a"}, "c1")],
        [message("ok")],
        [function_call("get_goal", {}, "c2")],
    ]
    with ScriptedResponsesServer(script) as server:
        session = session_for(tmp_path, server.base_url)
        await session.run_turn("set a goal")
        session.reset()
        await session.run_turn("what goal?")
        await session.aclose()
    answer = outputs_by_request(server.requests)["c2"]["output"]
    assert answer == '{"goal":null,"remainingTokens":null,"completionBudgetReport":null}'


def test_a_saved_goal_longer_than_a_goal_may_be_is_not_put_back() -> None:
    """A session file's goal whose objective is past Codex's 4000 characters (a file of
    another version, or edited) is left out on resume, as one that does not read."""
    from agent_magics.tools.context import SessionServices
    from agent_magics.tools.goal_state import MAX_OBJECTIVE_CHARS, Goal, goal_state, restore_goal

    for size, kept in ((MAX_OBJECTIVE_CHARS, True), (5_000_000, False)):
        services = SessionServices()
        restore_goal(services, asdict(Goal("t", "x" * size)))
        assert (goal_state(services).goal is not None) is kept, size
