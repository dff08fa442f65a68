"""A saved session as a document: its turns (each a :class:`~.model.Transcript`) and
what the document views read from a call that the cards read differently.

:mod:`.saved` folds a session file's lines (or a history alone) into this; the export
formats (:mod:`.export_md`, :mod:`.export_html`, :mod:`.ipynb`) and ``%agent history``
(:mod:`.history`) render it. Everything here comes from a file that may have been edited
by hand: a record or item of an unexpected shape is shown as what it is (or skipped and
counted), never trusted to mean more.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from agent_magics.events import FileDiff
from agent_magics.protocol.approval import ReviewDecision
from agent_magics.transcript.calls import (
    COMMAND_TOOLS,
    EXIT_CODE,
    command_text,
    parse_arguments,
    patch_text,
    python_code,
)
from agent_magics.transcript.model import DiffBlock, NoticeBlock, ToolBlock, Transcript

CONTEXT_TITLES = (
    ("<environment_context>", "The environment sent with the prompt"),
    ("<notebook_context>", "The notebook's cells sent with the prompt"),
    ("# AGENTS.md instructions", "The project's instructions sent with the prompt"),
)
DENIED = "Not run: it was denied, and the model was told so."


@dataclass
class SessionDoc:
    id: str
    started: str | None
    model: str | None
    cwd: str | None
    turns: list[Transcript]
    damaged: str | None = None
    skipped: int = 0  # records of unknown type or shape
    note: str | None = None  # e.g. "decisions were not recorded"
    resumed: str | None = None  # when a person last resumed it (started: when it started)

    def usage(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for turn in self.turns:
            for key, value in asdict(turn.usage).items() if turn.usage else ():
                total[key] = total.get(key, 0) + value
        return total


def notice_title(block: NoticeBlock) -> str:
    """What a folded reasoning or context block is called in a document."""
    if block.kind == "reasoning":
        return "Reasoning"
    for opening, title in CONTEXT_TITLES:
        if block.text.lstrip().startswith(opening):
            return title
    return "Context sent with the prompt"


def command(call: ToolBlock) -> str | None:
    return command_text(call.tool_name, call.arguments)


def patch(call: ToolBlock) -> str | None:
    return patch_text(call.tool_name, call.arguments, call.kind)


def python(call: ToolBlock) -> str | None:
    return python_code(call.tool_name, call.arguments)


def recorded_output(call: ToolBlock) -> tuple[str, int | None]:
    """The tool's own output without the lines about the run, and its exit code; for
    a denied call, what happened in our words (the model read Codex's error text).

    Unlike a card (:func:`.calls.shown_output`), a document names the exit code of any
    JSON-wrapped output, apply_patch's too: the exports always said ``exit code 0``."""
    if call.decision is ReviewDecision.DENIED:
        return DENIED, None
    text = call.output or ""
    data = parse_arguments(text) if text.startswith("{") else None
    if data is not None and isinstance(data.get("output"), str):
        meta = data.get("metadata")
        code = meta.get("exit_code") if isinstance(meta, dict) else None
        return data["output"].rstrip("\n"), code if isinstance(code, int) else None
    head, sep, body = text.partition("\nOutput:\n")
    if not sep or call.tool_name not in (*COMMAND_TOOLS, "write_stdin"):
        return text, None
    found = EXIT_CODE.search(head)
    return body.rstrip("\n"), int(found.group(1)) if found else None


def recorded_status(call: ToolBlock) -> str | None:
    """``ok`` or ``failed`` as the session file says it, ``None`` if it never finished."""
    return None if call.success is None else "ok" if call.success else "failed"


def decided_by(call: ToolBlock) -> str | None:
    """``policy`` for an answer remembered for the session, else ``user``."""
    return None if call.decision is None else "policy" if call.remembered else "user"


def turn_diff(turn: Transcript) -> tuple[FileDiff, ...]:
    """The files the turn changed (its last diff: the one it ended with)."""
    diffs = [b for b in turn.blocks if isinstance(b, DiffBlock)]
    return diffs[-1].files if diffs else ()


def ended_status(turn: Transcript) -> str | None:
    """How the turn ended, when its end was recorded (``done``, ``failed``, ``aborted``)."""
    return turn.status if turn.status in ("done", "failed", "aborted") else None
