"""One turn as data: what ``%%agent`` leaves in the namespace as ``_agent``.

:class:`TurnRecorder` folds a session's events during one turn into the turn's one
transcript model (:class:`~agent_magics.transcript.model.Transcript`, what the cards
draw), and :meth:`TurnRecorder.result` reads a :class:`TurnRecord` from it: the final
text, every tool call with its parsed arguments, output and status, the files the turn
changed, the tokens it used and how it ended. The files are read from the calls that
succeeded: the ``A``/``M``/``D`` lines of apply_patch's summary and the ``path`` of
edit_notebook.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_magics.events import Event, Usage
from agent_magics.protocol.approval import ReviewDecision
from agent_magics.transcript.model import TextBlock, ToolBlock, Transcript

TurnStatus = Literal["done", "failed", "aborted"]
CallStatus = Literal["completed", "failed", "denied", "aborted"]
REPR_TEXT_CHARS = 200
"""How much of the final text and of each call's output ``repr`` shows."""
_PATCH_SUMMARY = "Success. Updated the following files:"
_PATCH_LINE = re.compile(r"^[AMD] (.+)$")


@dataclass(frozen=True)
class CallRecord:
    """One tool call: ``arguments`` parsed from JSON (the raw text if it was not JSON);
    ``output`` is the text the model read; ``status`` is ``completed``, ``failed``,
    ``denied`` (a person said no) or ``aborted`` (the turn stopped before it ended);
    ``started`` and ``ended`` are when it ran, in :func:`time.monotonic` seconds (``None``
    when it did not), so calls run side by side show as overlapping spans."""

    tool: str
    arguments: Any
    output: str
    status: CallStatus
    call_id: str = field(default="", repr=False)
    started: float | None = field(default=None, repr=False)
    ended: float | None = field(default=None, repr=False)


@dataclass(frozen=True)
class TurnRecord:
    """The last ``%%agent`` turn: ``text`` (the final answer, or the last message before
    a failure or a stop), ``calls``, ``files`` (paths as the tools named them),
    ``usage`` (tokens), ``status`` (``done``, ``failed``, ``aborted``) and ``error`` (why
    it failed or stopped)."""

    text: str
    calls: tuple[CallRecord, ...] = ()
    files: tuple[str, ...] = ()
    usage: Usage = field(default_factory=Usage)
    status: TurnStatus = "done"
    error: str | None = None
    prompt: str = ""

    def __repr__(self) -> str:
        u = self.usage
        n = len(self.calls)
        head = (
            f"<agent turn: {self.status} · {n} call{'' if n == 1 else 's'} · "
            f"{u.total_tokens:,} tokens ({u.input_tokens:,} in, {u.output_tokens:,} out)>"
        )
        lines = [head]
        if self.error:
            lines.append(f"error: {self.error}")
        lines.append(f"text: {_clip(self.text)!r}")
        for i, call in enumerate(self.calls, 1):
            args = json.dumps(call.arguments, ensure_ascii=False, default=str)
            said = _clip(call.output)
            lines.append(f"  {i}. {call.tool} {_clip(args)} -> {call.status}: {said!r}")
        if self.files:
            lines.append("files: " + ", ".join(self.files))
        return "\n".join(lines)


def _clip(text: str) -> str:
    one = " ".join(text.split())
    return one if len(one) <= REPR_TEXT_CHARS else one[: REPR_TEXT_CHARS - 1] + "…"


def usage_since(before: Usage, after: Usage) -> Usage:
    """The tokens counted between two readings of a session's total."""
    return Usage(
        after.input_tokens - before.input_tokens,
        after.cached_input_tokens - before.cached_input_tokens,
        after.output_tokens - before.output_tokens,
        after.reasoning_output_tokens - before.reasoning_output_tokens,
        after.total_tokens - before.total_tokens,
    )


def changed_files(tool: str, arguments: Any, output: str) -> list[str]:
    """The files a successful call changed, as it names them."""
    if tool == "apply_patch":
        text = _inner_output(output)
        if _PATCH_SUMMARY not in text:
            return []
        summary = text.split(_PATCH_SUMMARY, 1)[1].splitlines()
        found = (_PATCH_LINE.match(line) for line in summary)
        return [m.group(1) for m in found if m]
    if tool == "edit_notebook" and isinstance(arguments, dict):
        path = arguments.get("path")
        return [path] if isinstance(path, str) else []
    return []


class TurnRecorder:
    """The record of one turn, read from its transcript: the one the cell's view folds
    the turn's events into when it is given (the turn is folded once), else its own,
    and then it is an event sink; :meth:`result` gives the record so far."""

    def __init__(self, prompt: str = "", transcript: Transcript | None = None) -> None:
        self.prompt = prompt
        self.transcript = transcript if transcript is not None else Transcript()

    def __call__(self, event: Event) -> None:
        self.transcript.apply(event)

    def fail(self, message: str) -> None:
        """The turn ended with an error that no event reported."""
        if _ending(self.transcript) is None:
            self.transcript.fail(message)

    def result(self, usage: Usage | None = None) -> TurnRecord:
        t = self.transcript
        # one record per call id, the last proposed under it, where the id first came
        calls = tuple(call_record(b) for b in {b.call_id: b for b in t.tools}.values())
        files: list[str] = []
        for call in calls:
            if call.status == "completed":
                for path in changed_files(call.tool, call.arguments, call.output):
                    if path not in files:
                        files.append(path)
        end = _ending(t)
        return TurnRecord(
            text=t.final_text if t.final_text is not None else _last_message(t),
            calls=calls,
            files=tuple(files),
            usage=usage or Usage(),
            status=end or "failed",
            error=t.message if end in ("failed", "aborted") else None,
            prompt=self.prompt,
        )


def call_record(block: ToolBlock) -> CallRecord:
    """A call as ``_agent`` shows it: denied (a person said no or stopped the turn there),
    completed or failed as the tool answered, aborted when it never ended."""
    status: CallStatus
    if block.decision in (ReviewDecision.DENIED, ReviewDecision.ABORT):
        status = "denied"
    elif block.success is not None:
        status = "completed" if block.success else "failed"
    else:
        status = "aborted"
    return CallRecord(
        block.tool_name,
        block.parsed_arguments,
        block.raw_output or "",
        status,
        block.call_id,
        block.started,
        block.ended if block.started is not None else None,
    )


def _ending(t: Transcript) -> TurnStatus | None:
    """How the turn ended (``None``: no event said it ended)."""
    if t.status == "done" or t.status == "failed" or t.status == "aborted":
        return t.status
    return None


def _last_message(t: Transcript) -> str:
    """The last complete message of the model (what it said before a failure or a stop)."""
    done = [b.text for b in t.blocks if isinstance(b, TextBlock) and b.done]
    return done[-1] if done else ""


def _inner_output(output: str) -> str:
    """The text of an output the freeform tools wrap as ``{"output": ..., "metadata": ...}``."""
    value = _parsed(output) if output.startswith("{") else None
    inner = value.get("output") if isinstance(value, dict) else None
    return inner if isinstance(inner, str) else output


def _parsed(arguments: str) -> Any:
    try:
        return json.loads(arguments)
    except (json.JSONDecodeError, RecursionError):
        return arguments
