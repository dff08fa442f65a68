"""Replaying the recorded sub-agent cases of Codex 0.171.0 against our sessions.

A case (tests/conformance/extra-0.171/multi_agent/cases) holds either ``turns`` (one
conversation, served by request index) or ``agents`` (one script per conversation, keyed
by the conversation's task). Here each becomes a :class:`ConversationsServer` script:
``{{agent:CALL}}`` in arguments is the agent id the spawn call CALL answered (read from
the request, as the recorder did), ``delay_s`` waits before answering (seconds of the
agent's clock, so that a test which speeds it keeps the recorded order of events),
``http_status`` answers with that error and ``broken`` with a stream cut short. Outputs
are compared by shape: agent ids, submission ids and nicknames change on every run.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from pathlib import Path
from typing import Any

from agent_magics.agent.multi_agent import MIN_WAIT_MS
from agent_magics.clock import current as current_clock
from agent_magics.testing import (
    Answer,
    ConversationsServer,
    HttpFailure,
    Items,
    StreamCut,
    Turn,
    function_call,
    message,
)
from tests.helpers.paths import CONFORMANCE

MULTI = CONFORMANCE / "extra-0.171" / "multi_agent"
REAL_MARGIN_S = 1.0
_TOKEN = re.compile(r"\{\{agent:([A-Za-z0-9_\-]+)\}\}")
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_NICK = re.compile(r'"nickname":"[A-Z][A-Za-z]+( the \d+(st|nd|rd|th))?"')


def load(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A case and its golden."""
    case = json.loads((MULTI / "cases" / f"{name}.json").read_text())
    golden = json.loads((MULTI / "goldens" / f"{name}.json").read_text())
    return case, golden


def shape(text: str) -> str:
    """An output with what changes every run masked."""
    return _NICK.sub('"nickname":"<Name>"', _UUID.sub("<id>", text))


def _ids(body: dict[str, Any]) -> dict[str, str]:
    found = {}
    for item in body.get("input", []):
        if item.get("type") == "function_call_output":
            with contextlib.suppress(TypeError, ValueError, KeyError):
                found[str(item["call_id"])] = json.loads(item["output"])["agent_id"]
    return found


def _turn(turn: Any, key: str) -> Turn:
    spec: dict[str, Any] = {"calls": turn} if isinstance(turn, list) else dict(turn)

    def answer(body: dict[str, Any]) -> Answer:
        if spec.get("delay_s"):
            time.sleep(current_clock().real(float(spec["delay_s"])))  # the model's time
        if "http_status" in spec:
            return HttpFailure(int(spec["http_status"]), json.dumps(spec.get("body")))
        if spec.get("broken"):
            return StreamCut()
        ids = _ids(body)
        items: Items = []
        for call in spec.get("calls", []):
            item = (
                dict(call["item"])
                if "item" in call
                else function_call(call["name"], call["arguments"], call["call_id"])
            )
            item["arguments"] = _TOKEN.sub(
                lambda m: ids.get(m.group(1), "unknown"), item.get("arguments", "")
            )
            items.append(item)
        if "final" in spec:
            items.append(message(str(spec["final"])))
        return items or [message(f"{key}: done")]

    return answer


def server_for(case: dict[str, Any]) -> ConversationsServer:
    """A server playing the case's scripts (``turns`` as the conversation of its prompt)."""
    agents = case.get("agents") or {case.get("prompt", "go"): case["turns"]}
    scripts = {key: [_turn(t, key) for t in turns] for key, turns in agents.items()}
    return ConversationsServer(scripts)


def clock_rate(case: dict[str, Any]) -> float:
    """How much faster than real time the agent's clock may run for ``case``: its
    shortest scripted wait (a model's ``delay_s``, wait_agent's least timeout) still
    lasts :data:`REAL_MARGIN_S`, room for the work no clock speeds (sessions starting,
    requests on 127.0.0.1), and the waits keep the order Codex's recording shows."""
    delays = [float(d) for d in re.findall(r'"delay_s": *([0-9.]+)', json.dumps(case))]
    return max(min([*delays, MIN_WAIT_MS / 1000]) / REAL_MARGIN_S, 1.0)


def prompt_of(case: dict[str, Any]) -> str:
    return str(case.get("prompt") or next(iter(case.get("agents") or {"go": 0})))


def parent_outputs(server: ConversationsServer, key: str) -> dict[str, str]:
    """Every tool output the conversation ``key`` was sent, by call id."""
    said: dict[str, str] = {}
    for body in server.by_conversation[key]:
        for item in body.get("input", []):
            if item.get("type") == "function_call_output":
                said[str(item["call_id"])] = str(item["output"])
    return said


def golden_outputs(golden: dict[str, Any], prompt: str) -> dict[str, str]:
    """The outputs Codex sent the parent (from its conversation when the golden's
    ``outputs`` map came out empty)."""
    outputs = golden.get("outputs") or golden.get("all_outputs") or {}
    found = {k: str(v["output"]) for k, v in outputs.items()}
    for request in [] if found else golden.get("conversations", {}).get(prompt, []):
        for item in request.get("input", []) + request.get("new_input", []):
            if item.get("type") == "function_call_output":
                found[str(item["call_id"])] = str(item["output"])
    return found


def workspace(tmp: Path) -> Path:
    (tmp / "ws").mkdir(exist_ok=True)
    return tmp / "ws"
