"""Scripts per conversation, for recording Codex's sub-agents (stdlib only).

With sub-agents a child's requests interleave with its parent's, so replaying
turns by request index no longer works.  A case with ``agents`` maps the first
user text of each conversation to its own list of turns:

    {"prompt": "parent task",
     "agents": {"parent task": [[calls...], ...],
                "child task": [[calls...], {"final": "child answer"}]}}

A request belongs to the conversation whose key equals the last user message
it carries that equals any key (a forked child carries its parent's history
first, then its own message).  Each conversation's turns are served in order;
once they run out it gets a final assistant message ``<key>: done``.

A turn is a list of calls (as in ``turns``), or a dict with any of
``calls`` (that list), ``final`` (assistant text), ``delay_s`` (wait before
answering), ``http_status`` (+ ``body``: answer with that HTTP error),
``broken: true`` (start the stream, then close it without completing).
In arguments, ``{{agent:CALL_ID}}`` becomes the ``agent_id`` from the output
of that spawn call, found in the requesting conversation's input.
"""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any

_AGENT_TOKEN = re.compile(r"\{\{agent:([A-Za-z0-9_\-]+)\}\}")
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")


def user_texts(body: dict) -> list[str]:
    """Texts of the user-role messages of a request, in order."""
    out = []
    for item in body.get("input", []):
        if item.get("type") == "message" and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                out.append(content)
            else:
                out.append("".join(c.get("text", "") for c in content or []))
    return out


def route(body: dict, keys: list[str]) -> str | None:
    """The conversation a request belongs to (see the module docstring)."""
    for text in reversed(user_texts(body)):
        if text in keys:
            return text
    return None


def _agent_ids(body: dict) -> dict[str, str]:
    ids = {}
    for item in body.get("input", []):
        if item.get("type") in OUTPUT_TYPES:
            try:
                ids[item.get("call_id")] = json.loads(item.get("output"))["agent_id"]
            except (TypeError, ValueError, KeyError):
                pass
    return ids


def _normalize_turn(turn: Any) -> dict:
    return {"calls": turn} if isinstance(turn, list) else dict(turn)


def make_agents_provider(case: dict, ws: str, cfg: dict, build_turns, sid_provider):
    """Mock-server callback serving each conversation its own script.

    ``build_turns`` and ``sid_provider`` are harness.build_turns and
    harness.make_turn_provider (passed in to avoid an import cycle)."""
    scripts = {k: [_normalize_turn(t) for t in v] for k, v in case["agents"].items()}
    keys = list(scripts)
    counters = {k: 0 for k in keys}
    lock = threading.Lock()
    routed: list[tuple[str | None, int]] = []

    def provider(i: int, body: dict):
        key = route(body, keys)
        with lock:
            n = counters.get(key, 0) if key is not None else 0
            if key is not None:
                counters[key] = n + 1
            routed.append((key, n))
        label = key if key is not None else "unrouted"
        script = scripts.get(key, []) if key is not None else []
        if n >= len(script):
            return [_final(f"{label}: done", i)]
        turn = script[n]
        if turn.get("delay_s"):
            time.sleep(turn["delay_s"])
        if "http_status" in turn or turn.get("broken"):
            return {k: turn[k] for k in ("http_status", "body", "broken") if k in turn}
        items = build_turns({"turns": [turn.get("calls", [])]}, ws, cfg)[0]
        ids = _agent_ids(body)
        for it in items:
            for k in ("arguments", "input"):
                if isinstance(it.get(k), str) and "{{agent:" in it[k]:
                    it[k] = _AGENT_TOKEN.sub(lambda m: ids.get(m.group(1), "unknown"), it[k])
        items = sid_provider([items])(0, body)
        if "final" in turn:
            items.append(_final(turn["final"], i))
        return items

    provider.routed = routed  # type: ignore[attr-defined]
    return provider


def _final(text: str, i: int) -> dict:
    return {"type": "message", "role": "assistant", "id": f"msg_final_{i}",
            "content": [{"type": "output_text", "text": text}]}


def _tool_names(tools: list[dict]) -> list[Any]:
    out: list[Any] = []
    for t in tools or []:
        name = t.get("name") or t.get("type")
        if t.get("type") == "namespace":
            out.append({name: [s.get("name") for s in t.get("tools", [])]})
        else:
            out.append(name)
    return out


def collect_conversations(case: dict, requests: list[dict], routed, replace) -> dict:
    """Every request of every conversation, in arrival order: the input items
    (in full for a conversation's first request, then only the items added
    since its previous request when that one is a prefix), the tool names,
    the instructions of first requests, and the headers that tell agents apart."""
    convs: dict[str, list[dict]] = {}
    prev: dict[str, list] = {}
    seq = []
    for i, req in enumerate(requests):
        key, n = routed[i] if i < len(routed) else (None, 0)
        label = key if key is not None else "unrouted"
        body = req["body"]
        inp = body.get("input", [])
        rec: dict[str, Any] = {"request_index": i, "turn": n}
        before = prev.get(label)
        if before is not None and inp[: len(before)] == before:
            rec["new_input"] = replace(inp[len(before):])
        else:
            rec["input"] = replace(inp)
            rec["instructions"] = replace(body.get("instructions"))
        rec["tools"] = _tool_names(body.get("tools"))
        hdrs = {k.lower(): v for k, v in (req.get("headers") or {}).items()
                if k.lower().startswith(("x-openai", "x-codex", "session", "openai"))}
        if hdrs:
            rec["headers"] = replace(hdrs)
        for k in ("parallel_tool_calls", "model", "tool_choice"):
            if k in body:
                rec[k] = body[k]
        prev[label] = inp
        convs.setdefault(label, []).append(rec)
        seq.append(label)
    return {"conversations": convs, "request_order": seq}
