"""A saved session as a document: its turns, and in each the entries a person reads.

:mod:`.saved` folds a session file's records (or a history alone) into this; the
export formats (:mod:`.export_md`, :mod:`.export_html`, :mod:`.ipynb`) and
``%agent history`` (:mod:`.history`) render it, so they show the same things.
Everything here comes from a file that may have been edited by hand: a record or item
of an unexpected shape is shown as what it is (or skipped and counted), never trusted
to mean more.
"""

from __future__ import annotations

import json
import re
import shlex
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
