"""A saved session's lines folded into the transcript model, as the live events are.

A session file is read back line by line (or a live session's history is turned into
the same records, :func:`history_records`); each record becomes the event the session
emitted when it was written (:class:`~agent_magics.events.AssistantMessage`,
:class:`~agent_magics.events.ToolCallProposed`, an approval, the turn's end...) and is
folded by :meth:`.model.Transcript.apply`, so a document and the cards read the same
blocks. What no event carries (a tool's saved output, a message sent beside the prompt,
an item of an unknown kind, an undo) is set on the same blocks. Records of an unknown
type or shape are counted, not trusted.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from agent_magics.agent.compact_history import SUMMARY_PREFIX, is_context, is_summary
from agent_magics.events import (
    ApprovalDecided,
    AssistantMessage,
    ContextCompacted,
    FileDiff,
    ReasoningSummary,
    ToolCallProposed,
    TurnAbortedEvent,
    TurnDiff,
    TurnFailed,
    TurnFinished,
    TurnStarted,
    Usage,
    WebSearched,
)
from agent_magics.protocol.approval import ReviewDecision
from agent_magics.protocol.web_search import WEB_SEARCH_CALL, card_fields
from agent_magics.transcript.document import SessionDoc
from agent_magics.transcript.model import (
    CompactionBlock,
    NoticeBlock,
    TextBlock,
    ToolBlock,
    Transcript,
    compacted_line,
)
from agent_magics.transcript.saved_agents import AGENT_RECORDS, AgentFolder

USAGE_FIELDS = tuple(Usage.__dataclass_fields__)


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = [c.get("text") for c in content if isinstance(c, dict)]
    return "\n".join(p for p in parts if isinstance(p, str))


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


def _usage(value: Any) -> Usage | None:
    if not isinstance(value, dict):
        return None
    counts = {k: v for k, v in value.items() if k in USAGE_FIELDS}
    return Usage(
        **{k: v if isinstance(v, int) and not isinstance(v, bool) else 0 for k, v in counts.items()}
    )


class _Folder:
    def __init__(self) -> None:
        self.turns: dict[tuple[int, int], Transcript] = {}
        self.calls: dict[str, tuple[Transcript, ToolBlock]] = {}
        self.skipped = 0
        self.searches = 0
        self.part = 0  # one more for each settings line after the first (a resume)
        self.started: str | None = None
        self.resumed: str | None = None
        self.agents = AgentFolder()  # sub-agents' records

    def turn(self, record: Mapping[str, Any]) -> Transcript:
        n = record.get("turn")
        n = n if isinstance(n, int) and not isinstance(n, bool) else 0
        if (self.part, n) not in self.turns:
            self.turns[self.part, n] = Transcript(number=n)
        return self.turns[self.part, n]

    def call(self, record: Mapping[str, Any]) -> tuple[Transcript, ToolBlock] | None:
        call_id = record.get("call_id")
        return self.calls.get(call_id) if isinstance(call_id, str) else None

    def item(self, turn: Transcript, item: Any) -> None:
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            self.skipped += 1
            return
        kind = item["type"]
        if kind == "message":
            text = text_of(item.get("content"))
            if item.get("role") == "assistant":
                turn.apply(AssistantMessage(text))
            elif turn.prompt is not None and text == turn.prompt:
                pass  # the prompt itself: shown once, at the turn's top
            elif text.strip():
                turn.add(NoticeBlock("context", text))
        elif kind == "reasoning":
            text = text_of(item.get("summary"))
            if text.strip():
                turn.apply(ReasoningSummary(text))
        elif kind in ("function_call", "custom_tool_call"):
            call_id, name = str(item.get("call_id")), item.get("name")
            raw = item.get("arguments" if kind == "function_call" else "input", "")
            block = turn.apply(
                ToolCallProposed(
                    call_id,
                    name if isinstance(name, str) else "(no name)",
                    raw if isinstance(raw, str) else json.dumps(raw),
                    "custom" if kind == "custom_tool_call" else "function",
                )
            )
            assert isinstance(block, ToolBlock)
            self.calls[call_id] = turn, block
        elif kind in ("function_call_output", "custom_tool_call_output"):
            found = self.call(item)
            if found is None and item.get("name") == "goal_objective":
                return  # Codex's extra output after create_goal: its card holds the goal
            if found is None:
                self.skipped += 1
                return
            found[1].output, found[1].images = _output_parts(item.get("output"))
        elif kind == WEB_SEARCH_CALL:
            self.searches += 1
            turn.apply(WebSearched(*card_fields(item, self.searches)))
        else:
            turn.add(NoticeBlock("item", kind))

    def record(self, record: Any) -> None:
        kind = record.get("type") if isinstance(record, dict) else None
        if kind == "turn_started":
            turn = self.turn(record)
            prompt = _str(record, "prompt")
            turn.apply(TurnStarted(prompt or ""))
            turn.prompt, turn.started = prompt, _str(record, "time")
        elif kind == "item":
            self.item(self.turn(record), record.get("item"))
        elif kind in ("decision", "tool_finished") and (found := self.call(record)):
            self.call_record(kind, record, *found)
        elif kind == "turn_ended":
            self.ended(self.turn(record), record)
        elif kind == "turn_diff" and isinstance(record.get("files"), list):
            files = [f for f in record["files"] if isinstance(f, dict)]
            turn = self.turn(record)
            turn.apply(TurnDiff(turn.number, tuple(map(_file_diff, files))))
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
        elif kind in AGENT_RECORDS:
            if not self.agents.record(self.turn(record), record):
                self.skipped += 1
        elif kind == "compacted":
            event = _compacted(record)
            block = CompactionBlock(
                "info", compacted_line(event), summary=event.summary, kept=event.kept
            )
            self.turn(record).add(block)
        elif kind in ("rollback", "settings", "cell_edits"):
            # A failed turn stays in the document (only the history forgets it); a cell's
            # new options and the cells a turn edited are for resume and undo, not reading.
            pass
        else:
            self.skipped += 1

    def call_record(
        self, kind: str, record: Mapping[str, Any], turn: Transcript, call: ToolBlock
    ) -> None:
        if kind == "decision":
            try:
                decision = ReviewDecision(str(record.get("decision")))
            except ValueError:
                self.skipped += 1
                return
            cached = record.get("by") == "policy"
            turn.apply(ApprovalDecided(call.call_id, decision, cached))
            return
        status = _str(record, "status")
        took = record.get("duration_s")
        call.duration_s = float(took) if isinstance(took, int | float) else None
        call.success = None if status is None else status == "ok"
        if status is not None and call.status not in ("denied", "aborted"):
            call.status = "done" if call.success else "failed"

    def ended(self, turn: Transcript, record: Mapping[str, Any]) -> None:
        status, error = _str(record, "status"), _str(record, "error")
        usage = _usage(record.get("usage"))
        if status == "done":
            turn.apply(TurnFinished("", usage or Usage()))
        elif status == "aborted":
            turn.apply(TurnAbortedEvent(error or ""))
        elif status is not None:
            turn.apply(TurnFailed(error or "", usage or Usage()))
        turn.message, turn.usage = error or "", usage


def _item_type(block: TextBlock | NoticeBlock) -> str | None:
    """The type an ``item`` notice names: not a text of the conversation (kept as is)."""
    return block.text if isinstance(block, NoticeBlock) and block.kind == "item" else None


def _file_diff(entry: Mapping[str, Any]) -> FileDiff:
    diff = entry.get("diff")
    return FileDiff(
        str(entry.get("path")),
        str(entry.get("status", "changed")),
        diff if isinstance(diff, str) else "",
    )


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
        _redact_turn(turn, redact)
    return doc


def _redact_turn(turn: Transcript, redact: Callable[[str], str]) -> None:
    """Every text of ``turn``, its sub-agents' (a live child's history holds its
    commands' outputs as they ran) and their final texts included."""
    turn.prompt = redact(turn.prompt) if turn.prompt is not None else None
    turn.message = redact(turn.message)
    for block in turn.blocks:
        if isinstance(block, TextBlock | NoticeBlock) and block.text != _item_type(block):
            block.text = redact(block.text)
        elif isinstance(block, ToolBlock):
            block.arguments = redact(block.arguments)
            block.output = redact(block.output) if block.output is not None else None
            for run in block.agents:
                run.prompt = redact(run.prompt)
                run.final_text = redact(run.final_text) if run.final_text is not None else None
                _redact_turn(run.transcript, redact)


def history_records(items: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Records for a session that was not written to disk, from its history alone (wire
    JSON): each run of user messages starts a turn, whose prompt is the run's last
    message; a compaction's summary ends its run and stands as a ``compacted`` record
    (with the run before it as what it kept). Decisions, statuses, usage and how large
    the context was are not in the history, so they stay unknown."""
    items = list(items)
    records: list[dict[str, Any]] = []
    turn, start = 0, 0

    def user(i: int) -> bool:
        return 0 <= i < len(items) and _is_user(items[i]) and not _is_summary(items[i])

    for i, item in enumerate(items):
        if _is_summary(item):
            records.append(_summary_record(items[start:i], text_of(item.get("content")), turn))
        elif user(i) and not user(i - 1):
            turn, start, run = turn + 1, i, i
            while user(run + 1):
                run += 1
            prompt = text_of(items[run].get("content"))
            records.append({"type": "turn_started", "turn": turn, "prompt": prompt})
            records.append({"type": "item", "turn": turn, "item": dict(item)})
        else:
            records.append({"type": "item", "turn": turn, "item": dict(item)})
    return records


def _is_summary(item: Mapping[str, Any]) -> bool:
    return _is_user(item) and is_summary(text_of(item.get("content")))


def _summary_record(run: list[Mapping[str, Any]], text: str, turn: int) -> dict[str, Any]:
    kept = [i for i in run if _is_user(i) and not is_context(text_of(i.get("content")))]
    summary = text.removeprefix(SUMMARY_PREFIX).lstrip("\n")
    return {
        "type": "compacted",
        "turn": turn,
        "summary": summary,
        "kept_messages": len(kept),
        "replacement_history": [dict(i) for i in kept],
    }


def _is_user(item: Mapping[str, Any]) -> bool:
    return item.get("type") == "message" and item.get("role") == "user"


def _compacted(record: Mapping[str, Any]) -> ContextCompacted:
    """The event a ``compacted`` record of a session file stands for."""

    def count(name: str) -> int:
        value = record.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    window = count("window") or None
    summary = _str(record, "summary") or ""
    kept = _kept_texts(record.get("replacement_history"), count("kept_messages"))
    trigger, phase = _str(record, "trigger") or "auto", _str(record, "phase") or ""
    before, after = count("tokens_before"), count("tokens_after")
    return ContextCompacted(trigger, phase, before, after, summary, kept, 0, window)


def _kept_texts(history: Any, count: int) -> tuple[str, ...]:
    """The person's messages a compaction kept, read from its replacement history (not
    context, not the summary); ``count`` blank ones when it holds fewer."""
    items = history if isinstance(history, list) else []
    texts = [
        text
        for item in items
        if isinstance(item, dict) and _is_user(item)
        if (text := text_of(item.get("content"))) and not is_context(text) and not is_summary(text)
    ]
    return tuple(texts[-count:]) if count and len(texts) >= count else ("",) * count
