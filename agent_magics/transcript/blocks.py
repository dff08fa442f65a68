"""The plain blocks a turn's transcript is made of, and the statuses of its calls and of
the turn (:mod:`.model` folds events into them; every view draws them). A tool call's
block is in :mod:`.model`, beside :class:`~agent_magics.transcript.model.Transcript`: it
holds the sub-agents the call started, each with a transcript of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from agent_magics.events import FileDiff

ToolStatus = Literal[
    "queued", "running", "waiting", "done", "failed", "denied", "aborted", "stopped"
]
TurnStatus = Literal["starting", "queued", "running", "waiting", "done", "failed", "aborted"]
NoticeKind = Literal["reasoning", "retry", "info", "error", "context", "item"]
"""``context``: a message sent beside the prompt; ``item``: a saved item of a kind no
view draws (its ``text`` is the type). Both come only from a saved session."""

OPEN_STATUSES = ("queued", "running", "waiting")
AGENT_LIVE = ("pending_init", "running")
"""A sub-agent's statuses (Codex's) while it still works."""


@dataclass
class TextBlock:
    """Assistant text, streamed in as deltas; ``done`` once the message is complete."""

    text: str = ""
    done: bool = False


@dataclass
class NoticeBlock:
    """A line between blocks: a reasoning summary, a retry, a note."""

    kind: NoticeKind
    text: str
    logged: bool = False  # also logged as a warning: a terminal, which shows it, need not


@dataclass
class CompactionBlock(NoticeBlock):
    """The conversation compacted: ``text`` is the line that says when and how much;
    ``summary`` what the model wrote (empty when the server keeps it), ``kept`` the
    person's messages kept. Views show the line and fold the rest; a view that knows
    only notices shows the line."""

    summary: str = ""
    kept: tuple[str, ...] = ()

    @property
    def folded_title(self) -> str:
        kept = len(self.kept)
        return f"What the conversation goes on from: the summary and {kept} kept message(s)"


@dataclass
class DiffBlock:
    """The files the turn changed, one unified diff each (:mod:`.turn_diff` draws it)."""

    files: tuple[FileDiff, ...]


def output_parts(output: Any) -> tuple[str, list[str]]:
    """The text and image URLs of a tool output (a string or a list of content items)."""
    if isinstance(output, str):
        return output, []
    texts: list[str] = []
    images: list[str] = []
    for item in output if isinstance(output, list) else []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "input_text":
            texts.append(str(item.get("text", "")))
        elif item.get("type") == "input_image" and item.get("image_url"):
            images.append(str(item["image_url"]))
    return "\n".join(texts), images


def output_text(output: Any) -> str:
    """A tool output's text as the model read it (an image as ``[image]``)."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        parts = []
        for item in output:
            if isinstance(item, dict):
                parts.append(str(item.get("text") or f"[{str(item.get('type', '?'))[6:]}]"))
        return "\n".join(parts)
    return str(output)
