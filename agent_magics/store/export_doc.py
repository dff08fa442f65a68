"""A session as a document: the session file's records folded into turns of entries.

The three export formats (:mod:`.export_ipynb`, :mod:`.export_text`) render this one
fold, so they show the same things. Everything read here comes from a file that may
have been edited by hand: a record or item of an unexpected shape is shown as what it
is (or skipped and counted), never trusted to mean more.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

COMMAND_TOOLS = ("exec_command", "shell", "shell_command", "local_shell")
EXIT_CODE = re.compile(r"^(?:Process exited with code|Exit code:) (-?\d+)$", re.MULTILINE)


@dataclass
class Text:
    """Text of the conversation: ``assistant`` answers, ``reasoning`` summaries, and
    ``context`` (messages sent beside the prompt: the folder, the notebook's cells)."""

    kind: str
    text: str

    def title(self) -> str:
        """What a folded reasoning or context block is called in an export."""
        if self.kind == "reasoning":
            return "Reasoning"
        for opening, title in CONTEXT_TITLES:
            if self.text.lstrip().startswith(opening):
                return title
        return "Context sent with the prompt"


CONTEXT_TITLES = (
    ("<environment_context>", "The environment sent with the prompt"),
    ("<notebook_context>", "The notebook's cells sent with the prompt"),
    ("# AGENTS.md instructions", "The project's instructions sent with the prompt"),
)

DENIED = "Not run: it was denied, and the model was told so."


@dataclass
class Call:
    call_id: str
    tool: str
    kind: str  # "function" or "custom" (apply_patch's freeform grammar)
    arguments: str
    output: str | None = None
    images: list[str] = field(default_factory=list)  # data URLs of images in the output
    decision: str | None = None
    decided_by: str | None = None
    status: str | None = None
    duration_s: float | None = None

    def args(self) -> dict[str, Any] | None:
        try:
            value = json.loads(self.arguments)
        except ValueError:
            return None
        return value if isinstance(value, dict) else None

    def command(self) -> str | None:
        """The command a shell tool ran, as a person would type it."""
        args = self.args() if self.tool in COMMAND_TOOLS else None
        command = args.get("cmd", args.get("command")) if args else None
        if isinstance(command, list):
            return shlex.join(str(c) for c in command)
        return command if isinstance(command, str) else None

    def patch(self) -> str | None:
        if self.tool != "apply_patch":
            return None
        if self.kind == "custom":
            return self.arguments
        value = (self.args() or {}).get("input")
        return value if isinstance(value, str) else None

    def python(self) -> str | None:
        code = (self.args() or {}).get("code") if self.tool == "run_python" else None
        return code if isinstance(code, str) else None

    def shown_output(self) -> tuple[str, int | None]:
        """The tool's own output without the lines about the run, and its exit code; for
        a denied call, what happened in our words (the model read Codex's error text)."""
        if self.decision == "denied":
            return DENIED, None
        text = self.output or ""
        if text.startswith("{"):
            try:
                data = json.loads(text)
            except ValueError:
                data = None
            if isinstance(data, dict) and isinstance(data.get("output"), str):
                meta = data.get("metadata")
                code = meta.get("exit_code") if isinstance(meta, dict) else None
                return data["output"].rstrip("\n"), code if isinstance(code, int) else None
        head, sep, body = text.partition("\nOutput:\n")
        if not sep or self.tool not in (*COMMAND_TOOLS, "write_stdin"):
            return text, None
        found = EXIT_CODE.search(head)
        return body.rstrip("\n"), int(found.group(1)) if found else None


@dataclass
class Other:
    """An item of a kind the document does not render (kept visible as its type)."""

    type: str


Entry = Text | Call | Other


@dataclass
class TurnDoc:
    number: int
    prompt: str | None = None
    started: str | None = None
    entries: list[Entry] = field(default_factory=list)
    status: str | None = None
    usage: dict[str, Any] | None = None
    error: str | None = None
    diff: list[dict[str, Any]] = field(default_factory=list)
    undone: list[str] = field(default_factory=list)
    undone_cells: list[str] = field(default_factory=list)
    """The open notebook's cells an undo reverted (``cell 3 ("# Notes") put back``)."""


@dataclass
class SessionDoc:
    id: str
    started: str | None
    model: str | None
    cwd: str | None
    turns: list[TurnDoc]
    damaged: str | None = None
    skipped: int = 0  # records of unknown type or shape
    note: str | None = None  # e.g. "decisions were not recorded"
    resumed: str | None = None  # when a person last resumed it (started: when it started)

    def usage(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for turn in self.turns:
            for key, value in (turn.usage or {}).items():
                if isinstance(value, int) and not isinstance(value, bool):
                    total[key] = total.get(key, 0) + value
        return total


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
