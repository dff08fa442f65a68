"""The compaction recordings of Codex 0.171 (tests/conformance/compaction-0.171/), replayed
through ``agent-magics exec`` against the same scripted answers: request by request, the
same kind (a turn or a compaction), the same tools offered or none, and the same input
once ids, times, tool output bodies and the base instructions are set aside.

Codex sends its base instructions as the first developer message and its permissions as
a second one; we send ours in ``instructions`` and the environment as a user message:
each run of opening context compares as one ``CTX``. Assistant messages compare by role
(their texts name Codex's request numbers). Where a scenario has a thread-title request
(Codex's TUI), that request is left out: we make none. ``s3*`` differ by design: Codex
fails a turn whose ordinary request overflows; we compact and send it again once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent_magics.agent.compact_history import SUMMARIZATION_PROMPT, SUMMARY_PREFIX, is_context
from tests.helpers.scenario_server import ScenarioServer, usage

RECORDED = Path(__file__).parent.parent / "conformance" / "compaction-0.171"
BASE_INSTRUCTIONS = "You are a scripted mock model."
TITLE_REQUEST = "Generate a concise, single-line task title"
OVERFLOW = {"code": "context_length_exceeded", "message": "Your input exceeds the context window."}
ECHO = "Please run echo hello and tell me the output."
LIMIT = ["-c", "model_auto_compact_token_limit=3000"]
BLOB = "ENC_OPAQUE_COMPACTION_BLOB"
COMPACTION_ITEM = {"type": "compaction", "id": "cmp_1", "encrypted_content": BLOB}


def call(n: int = 1) -> dict[str, Any]:
    arguments = json.dumps({"cmd": "echo hello"})
    return {
        "type": "function_call",
        "id": f"fc_{n}",
        "call_id": f"call_{n}",
        "name": "exec_command",
        "arguments": arguments,
    }


def answer(text: str = "the answer") -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


@dataclass
class Scenario:
    """``answers``: what the ordinary requests get, in order (then a plain answer);
    ``runs``: the prompts of successive ``exec`` runs, each after the first resuming
    the last session (``None``: ``--compact``)."""

    answers: list[dict[str, Any]]
    runs: list[str | None] = field(default_factory=lambda: ["first task"])
    settings: list[str] = field(default_factory=list)
    failing_summaries: int = 0


def tool_round(total: int) -> list[dict[str, Any]]:
    return [{"items": [call()], "usage": usage(total)}, {"items": [answer()], "usage": usage(400)}]


SCENARIOS = {
    "s1_local_midturn": Scenario(tool_round(5000), [ECHO], LIMIT),
    "s1h_human_output": Scenario(tool_round(5000), settings=LIMIT),
    "s2_local_preturn_resume": Scenario(
        [{"items": [answer()], "usage": usage(5000)}],
        ["first task", "second task"],
        LIMIT,
    ),
    "s4_openai_remote_midturn": Scenario(
        tool_round(5000),
        ["first task", "second task"],
        [*LIMIT, "-c", "remote_compaction=true"],
    ),
    "s5_ctxwin_3500": Scenario(tool_round(3500), settings=["-c", "model_context_window=4000"]),
    "s5_ctxwin_3600": Scenario(tool_round(3600), settings=["-c", "model_context_window=4000"]),
    "s5_ctxwin_3700": Scenario(tool_round(3700), settings=["-c", "model_context_window=4000"]),
    "s6_usage_in100_tot5000": Scenario(
        [{"items": [call()], "usage": {**usage(5000), "input_tokens": 100}}], settings=LIMIT
    ),
    "s6_usage_in4995_tot105": Scenario(
        [{"items": [call()], "usage": {**usage(105), "input_tokens": 4995}}], settings=LIMIT
    ),
    "s7_compaction_overflow_trim_retry": Scenario(
        tool_round(5000), settings=LIMIT, failing_summaries=2
    ),
    "s8_exec_slash_compact": Scenario([], ["first task", "/compact"]),
    "s9_custom_compact_prompt": Scenario(
        tool_round(5000),
        settings=[*LIMIT, "-c", 'compact_prompt="MY CUSTOM SUMMARY PROMPT: list open TODOs."'],
    ),
    "s10_user_message_budget": Scenario(
        [{"items": [answer()], "usage": usage(100)}, {"items": [answer()], "usage": usage(5000)}],
        ["A" * 100_000, "B" * 40_000, "third task"],
        LIMIT,
    ),
    "s11_last_vs_sum": Scenario(
        [{"items": [call(1)], "usage": usage(2000)}, {"items": [call(2)], "usage": usage(2000)}],
        settings=LIMIT,
    ),
    "s12_model_context_window_cfg": Scenario(
        tool_round(3700), settings=["-c", "model_context_window=4000"]
    ),
    "s13_post_turn_threshold": Scenario(
        [{"items": [answer()], "usage": usage(2500)}],
        settings=[
            "-c",
            "model_post_turn_compact_threshold_percent=50",
            "-c",
            "model_context_window=4000",
        ],
    ),
    "tui_manual_compact_mock": Scenario([], ["hello there", None, "next question"]),
    "tui_manual_compact_openai": Scenario(
        [], ["hello there", None, "next question"], ["-c", "remote_compaction=true"]
    ),
}


def _texts(item: dict[str, Any]) -> tuple[str, ...]:
    content = item.get("content")
    if isinstance(content, str):
        return (content,)
    return tuple(str(p.get("text", "")) for p in content or [])


def shape(body: dict[str, Any]) -> tuple[Any, ...]:
    """A request as the comparison sees it (see the module's docstring)."""
    tokens: list[Any] = []
    for item in body.get("input", []):
        kind, role = item.get("type"), item.get("role")
        texts = _texts(item) if kind == "message" else ()
        if kind == "message" and role == "developer" and texts == (BASE_INSTRUCTIONS,):
            continue
        if kind == "message" and (role == "developer" or is_context("".join(texts))):
            if tokens[-1:] != ["CTX"]:
                tokens.append("CTX")
        elif kind == "message" and role == "assistant":
            tokens.append("assistant")
        elif kind == "message":
            tokens.append(("user", texts))
        elif kind == "function_call":
            tokens.append(("call", item["name"], item["arguments"], item["call_id"]))
        elif kind == "function_call_output":
            tokens.append(("output", item["call_id"]))
        elif kind == "compaction":
            tokens.append(("compaction", item.get("encrypted_content")))
        else:
            tokens.append((kind,))
    tools = bool(body.get("tools"))
    return tools, body.get("parallel_tool_calls") if not tools else None, tokens


def recorded(name: str) -> list[tuple[Any, ...]]:
    bodies = [
        json.loads(p.read_text())["body"] for p in sorted((RECORDED / name).glob("[0-9]*.json"))
    ]
    return [shape(b) for b in bodies if TITLE_REQUEST not in json.dumps(b.get("input"))]


def _summary_of(name: str) -> str:
    """The summary the recording's server gave (read back from a later request)."""
    for path in sorted((RECORDED / name).glob("[0-9]*.json")):
        for item in json.loads(path.read_text())["body"]["input"]:
            text = "".join(_texts(item)) if item.get("type") == "message" else ""
            if text.startswith(SUMMARY_PREFIX + "\n"):
                return text[len(SUMMARY_PREFIX) + 1 :]
    return "SUMMARY: nothing"


def replier(name: str, scenario: Scenario) -> Any:
    ordinary = iter(scenario.answers)
    summary = _summary_of(name)
    failed = [0]

    def reply(index: int, body: dict[str, Any]) -> dict[str, Any]:
        if any(i.get("type") == "compaction_trigger" for i in body.get("input", [])):
            return {"items": [COMPACTION_ITEM], "usage": usage(350)}
        if not body.get("tools"):  # a summarising request
            if failed[0] < scenario.failing_summaries:
                failed[0] += 1
                return {"failed": OVERFLOW}
            return {"items": [answer(summary)], "usage": usage(300)}
        return next(ordinary, {"items": [answer()], "usage": usage(400)})

    return reply


def run_scenario(
    tmp_path: Path, name: str, scenario: Scenario
) -> Iterator[tuple[list[dict[str, Any]], list[subprocess.CompletedProcess[str]]]]:
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_MAGICS_"))}
    env |= {"HOME": str(home), "OPENAI_API_KEY": "sk-test", "LANG": "C.UTF-8", "TZ": "UTC"}
    server = ScenarioServer(replier(name, scenario))
    done = []
    try:
        for number, prompt in enumerate(scenario.runs):
            argv = [sys.executable, "-m", "agent_magics", "exec", "--base-url", server.base_url]
            argv += ["-m", "peer-mock-model", "-a", "never", "-s", "danger-full-access"]
            argv += scenario.settings + (["--resume", "last"] if number else [])
            argv += ["--compact"] if prompt is None else [prompt]
            run = subprocess.run(
                argv, cwd=ws, env=env, capture_output=True, text=True, timeout=120, check=False
            )
            done.append(run)
        yield server.requests, done
    finally:
        server.close()


TRIMMED = "s7_compaction_overflow_trim_retry"
"""Its summarising requests are each one item shorter, as Codex's; but our opening
context is one message where Codex's is two, so the second one we leave out is the
person's first message where Codex leaves out its second context message."""


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_scenario_replays_as_recorded(tmp_path: Path, name: str) -> None:
    for requests, runs in run_scenario(tmp_path, name, SCENARIOS[name]):
        assert [r.returncode for r in runs] == [0] * len(runs), [r.stderr for r in runs]
        ours, codex = [shape(r) for r in requests], recorded(name)
        if name == TRIMMED:
            assert [len(r["input"]) for r in requests[1:4]] == [5, 4, 3]
            assert [o[:2] for o in ours] == [c[:2] for c in codex]
            ours, codex = [ours[0], ours[-1]], [codex[0], codex[-1]]
        assert ours == codex


def test_the_prompt_and_prefix_are_codex_bytes() -> None:
    body = json.loads(next((RECORDED / "s1_local_midturn").glob("01_*.json")).read_text())["body"]
    assert _texts(body["input"][-1]) == (SUMMARIZATION_PROMPT,)
    assert _summary_of("s1_local_midturn").startswith("SUMMARY:")


def test_a_compaction_says_so_on_stderr(tmp_path: Path) -> None:
    for _, runs in run_scenario(tmp_path, "s1h_human_output", SCENARIOS["s1h_human_output"]):
        assert "Context compacted (during the turn): 5,000 → about" in runs[0].stderr


OVERFLOWED = {
    # Codex: the turn fails (exit 1). Here: compacted and sent again, the turn goes on.
    "s3_ctx_exceeded_first": Scenario([{"failed": OVERFLOW}]),
    "s3b_ctx_exceeded_midturn": Scenario(
        [{"items": [call()], "usage": usage(100)}, {"failed": OVERFLOW}]
    ),
}
PROMPT = ("user", (SUMMARIZATION_PROMPT,))


@pytest.mark.parametrize("name", sorted(OVERFLOWED))
def test_an_overflowing_request_is_compacted_and_sent_again(tmp_path: Path, name: str) -> None:
    for requests, runs in run_scenario(tmp_path, name, OVERFLOWED[name]):
        assert runs[0].returncode == 0, runs[0].stderr
        assert "the server found the request too long; it was sent again" in runs[0].stderr
        shapes = [shape(r) for r in requests]
        overflowed, summarising, resent = shapes[-3:]
        assert summarising == (False, False, [*overflowed[2], PROMPT])
        first = ("user", ("first task",))
        summary = ("user", (f"{SUMMARY_PREFIX}\nSUMMARY: nothing",))
        assert resent == (True, None, ["CTX", first, summary])


def test_a_request_that_overflows_after_compacting_fails_in_one_sentence(tmp_path: Path) -> None:
    always = Scenario([{"failed": OVERFLOW}] * 3, failing_summaries=99)
    for requests, runs in run_scenario(tmp_path, "s3_ctx_exceeded_first", always):
        assert runs[0].returncode == 1
        assert "no longer fits the model's context window, even compacted" in runs[0].stderr
        # the turn, then the summary request shorter by one item each time down to the
        # prompt alone; the turn's request is not sent a third time
        assert [len(r["input"]) for r in requests[1:]] == [3, 2, 1]


def test_an_export_of_the_session_shows_the_compaction(tmp_path: Path) -> None:
    for _, runs in run_scenario(tmp_path, "s1h_human_output", SCENARIOS["s1h_human_output"]):
        assert runs[0].returncode == 0
        out = tmp_path / "session.md"
        argv = [sys.executable, "-m", "agent_magics", "export", "last", str(out)]
        env = {**os.environ, "HOME": str(tmp_path / "home")}
        subprocess.run(argv, cwd=tmp_path / "ws", env=env, check=True, capture_output=True)
        text = out.read_text()
        assert "Context compacted (during the turn): 5,000 → about" in text
        folded = text.index("<details><summary>What the conversation goes on from: the summary")
        assert text.index(_summary_of("s1h_human_output"), folded) < text.index(
            "</details>", folded
        )
