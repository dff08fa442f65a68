"""A conversation as a person reads it: what ``%agent history`` prints.

The history is read the way the exports read it (:func:`~agent_magics.transcript.saved.fold`
over :func:`~agent_magics.transcript.saved.history_records`): one reading of an item, shown
here as plain text. Each turn starts with the prompt; what was sent beside it (the
environment, project instructions, the notebook's cells) is named in one line each;
then the model's answers and every tool call, with what it ran and a trimmed output
(an exec command's output without its Chunk ID / Wall time lines, apply_patch's output
as its text). A sub-agent's own conversation is shown under the call that spawned it,
indented, headed as the exports head it. ``raw=True`` gives the items as they are
sent, as JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from xml.sax.saxutils import unescape

from agent_magics.agent.instructions import ENVIRONMENT_OPEN, told_environment
from agent_magics.transcript.agent_text import agent_header, ending_text
from agent_magics.transcript.document import command, decided_by, recorded_output
from agent_magics.transcript.export_md import DECISIONS, clip, one_line, summary
from agent_magics.transcript.model import (
    SENT,
    AgentRun,
    CompactionBlock,
    NoticeBlock,
    TextBlock,
    ToolBlock,
    Transcript,
)
from agent_magics.transcript.saved import fold, history_records

OUTPUT_LINES = 6
"""Lines of a tool output shown: the first and the last half of them."""
OUTPUT_CHARS = 1_200
"""Characters of a tool output shown, head and tail."""
REASONING_CHARS = 160
"""Characters of a reasoning summary shown (one line)."""
INDENT = "    "
EMPTY = "(the conversation is empty)"
ENVIRONMENT_WORDS = (
    ("cwd", "cwd"),
    ("approval_policy", "approval"),
    ("sandbox_mode", "sandbox"),
    ("network_access", "network"),
    ("shell", "shell"),
)
CONTEXT_KINDS = (
    ("# AGENTS.md instructions for ", "project instructions (AGENTS.md)"),
    ("<notebook_context>", "the notebook's cells that ran"),
)


def history_text(
    items: Sequence[Mapping[str, Any]],
    *,
    agents: Sequence[Mapping[str, Any]] = (),
    raw: bool = False,
    redact: Callable[[str], str] = str,
) -> str:
    """``items`` (wire JSON of a session's history) as a conversation, or as JSON with
    ``raw``; ``agents``: its sub-agents' records (as a session file holds them, without
    turns), each nested in the turn of the call that spawned its top agent; ``redact``
    takes secrets out of every text shown."""
    if raw:
        return redact(json.dumps(list(items), indent=2, ensure_ascii=False))
    if not items:
        return EMPTY
    records = history_records(items)
    doc = fold(None, records + in_turns(records, agents), redact=redact)
    return "\n\n".join(turn_text(turn) for turn in doc.turns)


def in_turns(
    records: Sequence[Mapping[str, Any]], agents: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """``agents`` with the turn of the spawn call of the agent each one is under (the
    last turn when that call is not in the history)."""
    calls = {r["item"].get("call_id"): r["turn"] for r in records if r["type"] == "item"}
    last = records[-1]["turn"] if records else 0
    turns: dict[Any, Any] = {}
    placed = []
    for record in agents:
        path = record.get("path") or [record.get("agent_id")]
        if record.get("type") == "agent_spawned" and not record.get("path"):
            turns[record.get("agent_id")] = calls.get(record.get("call_id"), last)
        placed.append({**record, "turn": turns.get(path[0], last)})
    return placed


def turn_text(turn: Transcript) -> str:
    lines = indented("you: ", turn.prompt if turn.prompt is not None else "(no prompt)")
    notices = [b for b in turn.blocks if isinstance(b, NoticeBlock)]
    lines.extend(f"  + {context_line(b.text)}" for b in notices if b.kind == "context")
    for entry in turn.blocks:
        if isinstance(entry, ToolBlock):
            lines.extend(call_lines(entry))
        elif isinstance(entry, TextBlock):
            lines.extend(indented("agent: ", entry.text.strip()))
        elif isinstance(entry, NoticeBlock) and entry.kind == "reasoning":
            lines.append(f"thinking: {one_line(entry.text, REASONING_CHARS)}")
        elif isinstance(entry, CompactionBlock):
            lines.append(entry.text)
            if entry.summary:
                lines.append(f"summary: {one_line(entry.summary, REASONING_CHARS)}")
        elif isinstance(entry, NoticeBlock) and entry.kind == "item":
            lines.append(f"({entry.text} item)")
    return "\n".join(lines)


def indented(label: str, text: str) -> list[str]:
    """``label`` before the first line of ``text``, the next lines under it."""
    first, *rest = text.splitlines() or [""]
    pad = " " * len(label)
    return [label + first, *(f"{pad}{line}".rstrip() for line in rest)]


def context_line(text: str) -> str:
    """One line that says what a message sent beside the prompt held."""
    if text.startswith(ENVIRONMENT_OPEN):
        fields = told_environment([text])
        whole = all(k in fields for k, _ in ENVIRONMENT_WORDS)
        words = ENVIRONMENT_WORDS if whole else ENVIRONMENT_WORDS[:-1]  # an update: no shell
        shown = [f"{word} {unescape(fields[k])}" for k, word in words if k in fields]
        return ("environment: " if whole else "environment changed: ") + " · ".join(shown)
    n = len(text.splitlines())
    size = f"{n} line{'' if n == 1 else 's'}"
    for prefix, name in CONTEXT_KINDS:
        if text.startswith(prefix):
            return f"{name}, {size}"
    return f"{one_line(text)} ({size})" if n > 1 else one_line(text)


def call_lines(call: ToolBlock) -> list[str]:
    """The call's line (tool, what it ran, its exit code) and its trimmed output."""
    text, code = recorded_output(call)
    what = summary(call)
    if command(call) is not None:
        what = f"$ {what}"
    facts = [] if code is None else [f"exit code {code}"]
    if call.decision is not None:  # a refused call's output is Codex's text for the model
        by = decided_by(call) or "user"
        facts.append(DECISIONS.get((call.decision.value, by), f"{call.decision.value} ({by})"))
    if call.output is None:
        facts.append("no output yet")
    if call.images:
        facts.append(f"{len(call.images)} image{'' if len(call.images) == 1 else 's'}")
    lines = [" · ".join([f"• {call.tool_name}: {what}", *facts])]
    if call.output is not None and text.strip():
        lines.extend(
            f"{INDENT}{line}".rstrip()
            for line in clip(text, OUTPUT_LINES, OUTPUT_CHARS).splitlines()
        )
    for run in call.agents:
        lines.extend(f"{INDENT}{line}".rstrip() for line in agent_lines(run))
    return lines


def agent_lines(run: AgentRun) -> list[str]:
    """A sub-agent under its spawn call: its header, then its answers and calls."""
    lines = [f"↳ {agent_header(run)}"]
    if (ending := ending_text(run)) is not None:
        lines.append(f"{INDENT}{ending}")
    for entry in run.transcript.blocks:
        if isinstance(entry, ToolBlock):
            body = call_lines(entry)
        elif isinstance(entry, TextBlock):
            body = indented("agent: ", entry.text.strip())
        elif isinstance(entry, NoticeBlock) and entry.text.startswith(SENT):
            body = indented("sent: ", entry.text.removeprefix(SENT).strip())
        else:
            continue
        lines.extend(f"{INDENT}{line}".rstrip() for line in body)
    return lines
