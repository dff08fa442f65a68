"""The fold of a saved session's records into a :class:`~.document.SessionDoc`.

A session file is read back line by line (or a live session's history is turned into
the same records, :func:`history_records`); each record lands in its turn. Records of
an unknown type or shape are counted, not trusted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agent_magics.transcript.document import Call, Other, SessionDoc, Text, TurnDoc, text_of


def _output_parts(output: Any) -> tuple[str, list[str]]:
    """A tool output's text and the data URLs of the images it carries."""
    if isinstance(output, str):
        return output, []
    texts: list[str] = []
    images: list[str] = []
    for part in output if isinstance(output, list) else []:
        if not isinstance(part, dict):
            continue
        url = part.get("image_url")
        if isinstance(url, str) and url.startswith("data:image/"):
            images.append(url)
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "\n".join(texts), images


class _Folder:
    def __init__(self) -> None:
        self.turns: dict[tuple[int, int], TurnDoc] = {}
        self.calls: dict[str, Call] = {}
        self.skipped = 0
        self.part = 0  # one more for each settings line after the first (a resume)
        self.started: str | None = None
        self.resumed: str | None = None

    def turn(self, record: Mapping[str, Any]) -> TurnDoc:
        n = record.get("turn")
        n = n if isinstance(n, int) and not isinstance(n, bool) else 0
        if (self.part, n) not in self.turns:
            self.turns[self.part, n] = TurnDoc(n)
        return self.turns[self.part, n]

    def call(self, record: Mapping[str, Any]) -> Call | None:
        call_id = record.get("call_id")
        return self.calls.get(call_id) if isinstance(call_id, str) else None

    def item(self, turn: TurnDoc, item: Any) -> None:
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            self.skipped += 1
            return
        kind = item["type"]
        if kind == "message":
            text = text_of(item.get("content"))
            if item.get("role") == "assistant":
                turn.entries.append(Text("assistant", text))
            elif turn.prompt is not None and text == turn.prompt:
                turn.prompt = text  # the prompt itself: shown once, at the turn's top
            elif text.strip():
                turn.entries.append(Text("context", text))
        elif kind == "reasoning":
            text = text_of(item.get("summary"))
            if text.strip():
                turn.entries.append(Text("reasoning", text))
        elif kind in ("function_call", "custom_tool_call"):
            call_id, name = item.get("call_id"), item.get("name")
            raw = item.get("arguments" if kind == "function_call" else "input", "")
            call = Call(
                call_id=str(call_id),
                tool=name if isinstance(name, str) else "(no name)",
                kind="custom" if kind == "custom_tool_call" else "function",
                arguments=raw if isinstance(raw, str) else json.dumps(raw),
            )
            self.calls[call.call_id] = call
            turn.entries.append(call)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            found = self.call(item)
            if found is None:
                self.skipped += 1
                return
            found.output, found.images = _output_parts(item.get("output"))
        else:
            turn.entries.append(Other(kind))

    def record(self, record: Any) -> None:
        kind = record.get("type") if isinstance(record, dict) else None
        if kind == "turn_started":
            turn = self.turn(record)
            prompt, time = record.get("prompt"), record.get("time")
            turn.prompt = prompt if isinstance(prompt, str) else None
            turn.started = time if isinstance(time, str) else None
        elif kind == "item":
            self.item(self.turn(record), record.get("item"))
        elif kind in ("decision", "tool_finished") and (call := self.call(record)):
            if kind == "decision":
                call.decision, call.decided_by = _str(record, "decision"), _str(record, "by")
            else:
                call.status = _str(record, "status")
                took = record.get("duration_s")
                call.duration_s = float(took) if isinstance(took, int | float) else None
        elif kind == "turn_ended":
            turn = self.turn(record)
            turn.status, turn.error = _str(record, "status"), _str(record, "error")
            usage = record.get("usage")
            turn.usage = usage if isinstance(usage, dict) else None
        elif kind == "turn_diff" and isinstance(record.get("files"), list):
            self.turn(record).diff = [f for f in record["files"] if isinstance(f, dict)]
        elif kind == "undo" and isinstance(record.get("files"), list):
            self.turn(record).undone = [_path(f) for f in record["files"]]
            cells = record.get("cells")
            if isinstance(cells, list):
                self.turn(record).undone_cells = [c for c in cells if isinstance(c, str)]
        elif kind == "session_meta":
            self.part += 1
            when = _str(record, "started")
            self.started = self.started or when  # the first one's: the session's start
            if record.get("resume") is True:
                self.resumed = when
        elif kind in ("rollback", "settings", "cell_edits"):
            # A failed turn stays in the document (only the history forgets it); a cell's
            # new options and the cells a turn edited are for resume and undo, not reading.
            pass
        else:
            self.skipped += 1


def _str(record: Mapping[str, Any], key: str) -> str | None:
    value = record.get(key)
    return value if isinstance(value, str) else None


def _path(entry: Any) -> str:
    return str(entry.get("path")) if isinstance(entry, dict) else str(entry)


def fold(
    meta: Mapping[str, Any] | None,
    records: Iterable[Any],
    *,
    damaged: str | None = None,
    redact: Callable[[str], str] | None = None,
) -> SessionDoc:
    """The document of a session from its meta record and its other records, in order.

    ``redact`` (the live session's redactor) runs over every text shown; the records of
    a session file were redacted when they were written."""
    folder = _Folder()
    for record in records:
        folder.record(record)
    meta = meta or {}
    config = meta.get("config")
    model = config.get("model") if isinstance(config, dict) else None
    doc = SessionDoc(
        id=str(meta.get("id") or "(unknown)"),
        started=folder.started or _str(meta, "started"),
        resumed=folder.resumed,
        model=model if isinstance(model, str) else None,
        cwd=_str(meta, "cwd"),
        turns=[folder.turns[k] for k in sorted(folder.turns)],
        damaged=damaged,
        skipped=folder.skipped,
    )
    return doc if redact is None else _redacted(doc, redact)


def _redacted(doc: SessionDoc, redact: Callable[[str], str]) -> SessionDoc:
    for turn in doc.turns:
        turn.prompt = redact(turn.prompt) if turn.prompt is not None else None
        turn.error = redact(turn.error) if turn.error is not None else None
        for entry in turn.entries:
            if isinstance(entry, Text):
                entry.text = redact(entry.text)
            elif isinstance(entry, Call):
                entry.arguments = redact(entry.arguments)
                entry.output = redact(entry.output) if entry.output is not None else None
    return doc


def history_records(items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Records for a session that was not written to disk, from its history alone (wire
    JSON): each run of user messages starts a turn, whose prompt is the run's last
    message. Decisions, statuses and usage are not in the history, so they stay unknown."""
    items = list(items)
    records: list[dict[str, Any]] = []
    turn = 0
    for i, item in enumerate(items):
        if _is_user(item) and not (i > 0 and _is_user(items[i - 1])):
            turn += 1
            run = i
            while run + 1 < len(items) and _is_user(items[run + 1]):
                run += 1
            prompt = text_of(items[run].get("content"))
            records.append({"type": "turn_started", "turn": turn, "prompt": prompt})
        records.append({"type": "item", "turn": turn, "item": dict(item)})
    return records


def _is_user(item: Mapping[str, Any]) -> bool:
    return item.get("type") == "message" and item.get("role") == "user"
