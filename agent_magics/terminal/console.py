"""The terminal front end: approvals asked on stdin, events told on stderr.

Shared by ``agent-magics exec``, ``agent-magics demo`` and ``%%agent`` in terminal
IPython. Every piece of text from the model, tools or servers goes through
:func:`~agent_magics.text.inert.terminal_safe`: escape sequences never reach the terminal.
What a person approves (a command, a patch, code, a tool's arguments, the reason given)
goes through :func:`~agent_magics.text.visible.visible` instead: its escape sequences, bidi
controls and zero-width characters are written out, so the question shows what runs. A
command's question also says where it runs (``in <folder>``, always: a ``workdir`` can
take ``rm -f precious.txt`` to any folder), and so does its report line when the model
chose a ``workdir``.
Colours are our own, added afterwards and only when stderr is a terminal.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from typing import TextIO

from agent_magics.events import AgentEvent, AgentSpawned, AgentStatusChanged, Event, Usage
from agent_magics.protocol.approval import ApprovalRequest, Approver, ReviewDecision
from agent_magics.text.inert import terminal_safe
from agent_magics.text.visible import visible
from agent_magics.transcript.model import Transcript
from agent_magics.transcript.terminal import (
    BOLD,
    Style,
    TerminalLines,
    command_line,
    diff_lines,
    indent,
    patch_files,
    plural,
)

QUESTION_FALLBACK = "Allow this call?"
COMMAND_QUESTION = "Run this command?"
PATCH_QUESTION = "Apply this patch?"
UNSANDBOXED = " (it would run without the sandbox)"
ANSWERS = {"y": "approved", "a": "approved_for_session", "q": "abort"}
NO_ONE_TO_ASK = (
    "nobody can answer approval questions here (stdin is not a terminal), so every call "
    "that needs one is denied; to let such calls run, pass `-a never` (they then run "
    "without asking, inside the sandbox chosen with `-s`) or run from a terminal and answer."
)


def stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def question(
    request: ApprovalRequest,
    style: Style | None = None,
    show_patch: bool = True,
    names: Mapping[str, str] | None = None,
) -> str:
    """The question a terminal asks, with the one-letter answers it takes: "Run this
    command?" with the command as a shell needs it, "Apply this patch?" with the diff
    (or only the files it touches when ``show_patch`` is false: the diff was shown).
    Once sub-agents are at work (``names``: their nicknames by id), its first line says
    which agent asks."""
    style = style or Style()
    lines = ["", *asker_lines(request, names or {}), *_asked(request, style, show_patch)]
    if request.reason and request.kind in ("exec", "patch"):
        lines.append(f"  Reason: {visible(request.reason)}")
    session = "  [a] approve for session" if request.remember_allowed else ""
    lines.append(f"[y] approve{session}  [n] deny  [q] abort turn: ")
    return "\n".join(lines)


def asker_lines(request: ApprovalRequest, names: Mapping[str, str]) -> list[str]:
    """``[Kant] asks:`` for a sub-agent's question (``[Kant] [Hume] asks:`` for its
    child's), ``The main agent asks:`` for the main agent's while sub-agents are known;
    nothing when the main agent is the only one. The path comes from the session that
    forwarded the question, never from a call id (the model picks those)."""
    if request.agents:
        who = "".join(f"[{terminal_safe(names.get(a, a))}] " for a in request.agents)
        return [f"{who}asks:"]
    return ["The main agent asks:"] if names else []


def _asked(request: ApprovalRequest, style: Style, show_patch: bool) -> list[str]:
    unsandboxed = UNSANDBOXED if request.retry_without_sandbox else ""
    if request.kind == "exec" and request.command:
        command = visible(_what_runs(request))
        lines = [style(line, BOLD) for line in command.splitlines()]
        asked = [style(COMMAND_QUESTION, BOLD) + unsandboxed, indent("\n".join(lines))]
        if request.tool_name != "run_python":  # code that runs in the kernel has no folder
            asked.append(indent(f"in {visible(str(request.cwd))}"))
        return asked
    if request.kind == "patch" and request.patch:
        if not show_patch:
            files = visible(patch_files(request.patch))
            return [style(PATCH_QUESTION, BOLD) + f" ({files}, shown above)"]
        return [style(PATCH_QUESTION, BOLD), *diff_lines(request.patch, style)]
    ask = visible(request.reason or QUESTION_FALLBACK) + unsandboxed
    return [style(ask, BOLD), indent(visible(request.subject()))]


def _what_runs(request: ApprovalRequest) -> str:
    """A command as a shell needs it; ``run_python``'s code as it is (its one "argv")."""
    if request.tool_name == "run_python" and len(request.command) == 1:
        return request.command[0]
    return command_line(request.command)


def answer(request: ApprovalRequest, letter: str) -> ReviewDecision:
    """A one-letter terminal answer as a decision; anything else denies."""
    value = ANSWERS.get(letter.strip().lower()[:1])
    if value == "approved_for_session" and not request.remember_allowed:
        value = None
    return ReviewDecision(value) if value else ReviewDecision.DENIED


def read_answer(text: str) -> str:
    """Ask ``text`` on stderr; the first letter of the line typed ("n" when stdin fails;
    "" at its end, which denies)."""
    return _ask(terminal_safe(text))


def _ask(safe_text: str) -> str:
    sys.stderr.write(safe_text)
    sys.stderr.flush()
    try:
        return sys.stdin.readline().strip().lower()[:1]
    except (OSError, ValueError):
        return "n"


def stdin_approver(
    style: Style | None = None,
    show_patch: bool = True,
    names: Mapping[str, str] | None = None,
    held: HeldLines | None = None,
) -> Approver:
    """Ask on stdin: y approve, a approve for session, n deny, q abort the turn.

    One question at a time: a question is printed and its answer read as one step under
    a lock, so two agents asking at once are asked one after the other, each naming who
    asks (with ``names``), and a line typed answers the question printed last. While a
    question waits, the lines given to ``held`` wait too, and follow the answer."""
    lock = asyncio.Lock()

    async def ask(request: ApprovalRequest) -> ReviewDecision:
        async with lock:
            text = question(request, style, show_patch, names)
            if held is not None:
                held.hold()
            try:
                return answer(request, await asyncio.to_thread(_ask, text))
            finally:
                if held is not None:
                    held.release()

    return ask


class HeldLines:
    """Lines for stderr that wait while a question is on screen (see
    :func:`stdin_approver`): another agent's progress printed under a question would
    take the place of the answer's line."""

    def __init__(self) -> None:
        self._held: list[str] | None = None

    def emit(self, lines: list[str]) -> None:
        if self._held is not None:
            self._held.extend(lines)
        else:
            emit(lines)

    def hold(self) -> None:
        self._held = []

    def release(self) -> None:
        lines, self._held = self._held or [], None
        emit(lines)


def say(text: str, file: TextIO | None = None) -> None:
    """Print a line made of text from the model, tools or servers (stderr by default)."""
    print(terminal_safe(text), file=file or sys.stderr)


def usage_line(u: Usage) -> str | None:
    """The closing line of a turn's tokens on stderr (``None``: the server counted none)."""
    if not u.total_tokens:
        return None
    return (
        f"tokens: {u.input_tokens} in ({u.cached_input_tokens} cached), "
        f"{u.output_tokens} out ({u.reasoning_output_tokens} reasoning), "
        f"{u.total_tokens} total"
    )


def emit(lines: list[str]) -> None:
    """Print lines that are already terminal-safe (they may hold our own colours)."""
    if lines:
        print("\n".join(lines), file=sys.stderr)


class TerminalConsole:
    """Follows a turn on stderr and answers its approval questions.

    ``interactive``: a person types the answers on stdin; otherwise every question is
    denied, and the first denial says once why and how to let such calls run. Each event
    is folded into the turn's one transcript model, and the lines are what
    :class:`~agent_magics.transcript.terminal.TerminalLines` reads from the block it
    changed: what the cards show, in a terminal's form.
    """

    def __init__(self, *, interactive: bool, style: Style | None = None) -> None:
        self.interactive = interactive
        self.style = style if style is not None else Style(stderr_is_tty())
        self.state = Transcript()  # the turn so far
        note = "" if interactive else NO_ONE_TO_ASK
        self._names: dict[str, str] = {}  # sub-agents' nicknames by id
        self.lines = TerminalLines(
            self.style, interactive=interactive, first_denial=note, names=self._names
        )
        self._out = HeldLines()
        self._ask = stdin_approver(self.style, False, self._names, self._out)
        self._children: dict[tuple[str, ...], tuple[Transcript, TerminalLines]] = {}

    async def approve(self, request: ApprovalRequest) -> ReviewDecision:
        if self.interactive:
            return await self._ask(request)
        return ReviewDecision.DENIED

    def summary(self) -> str | None:
        """The closing line's count of denied calls (``None``: none was denied)."""
        if not self.lines.denied:
            return None
        why = "" if self.interactive else ": nobody could approve them here"
        return f"{plural(self.lines.denied, 'tool call')} denied{why}."

    def report(self, event: Event) -> None:
        """Lines on stderr for each event a terminal user follows a turn by. A
        sub-agent's own lines come from its own transcript, each headed by its nickname
        in brackets (``[Kant] [Hume] `` for a child's child)."""
        path: tuple[str, ...] = ()
        while isinstance(event, AgentEvent):
            path, event = (*path, event.agent_id), event.event
        if isinstance(event, AgentSpawned):
            self._names[event.agent_id] = event.nickname
            self._started(path, event)
        if not path:
            self._out.emit(self.lines.lines(self.state.apply(event)))
            if isinstance(event, AgentStatusChanged) and event.status in ("completed", "errored"):
                self._finished(event)
            return
        if path not in self._children:
            lines = TerminalLines(self.style, interactive=self.interactive, names=self._names)
            self._children[path] = (Transcript(), lines)
        state, lines = self._children[path]
        prefix = "".join(f"[{self._name(agent_id)}] " for agent_id in path)
        self._out.emit([prefix + line for line in lines.lines(state.apply(event))])

    def _name(self, agent_id: str) -> str:
        return terminal_safe(self._names.get(agent_id, agent_id))

    def _started(self, path: tuple[str, ...], event: AgentSpawned) -> None:
        """Which helper took which task: its later lines carry only its nickname. The
        task and the answer are the model's text, written out as :func:`visible` does
        (an escape shown, not dropped; a bidi control named, not obeyed)."""
        first = event.prompt.strip().split("\n")[:1]
        task = visible(first[0][:100]) if first else ""
        prefix = "".join(f"[{self._name(agent_id)}] " for agent_id in (*path, event.agent_id))
        self._out.emit([prefix + "started" + (f": {task}" if task else "")])

    def _finished(self, event: AgentStatusChanged) -> None:
        first = (event.final_text or "").strip().split("\n")[:1]
        text = visible(first[0]) if first else ""
        line = f"[{self._name(event.agent_id)}] {event.status}" + (f": {text}" if text else "")
        self._out.emit([line])
