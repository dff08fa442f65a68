"""Text for the terminal front end: commands as a shell needs them, diffs, trimmed output,
and :class:`TerminalLines`, the lines a terminal follows a turn by, read from the blocks of
the one transcript model (:mod:`.model`).

No terminal access: :mod:`agent_magics.terminal.console` prints what they return.
Every function takes text that is already terminal-safe (see :mod:`agent_magics.text.inert`)
or makes it so: a command's output loses its escape sequences, a patch shows them written
out (:func:`~agent_magics.text.visible.visible`); colours are added last, and only when a
:class:`Style` is told the stream is a terminal.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agent_magics.protocol.approval import ReviewDecision
from agent_magics.text.inert import terminal_safe
from agent_magics.text.visible import visible
from agent_magics.tools.command_safety.parse import extract_shell_script
from agent_magics.transcript.agent_targets import agent_targets
from agent_magics.transcript.blocks import DiffBlock, NoticeBlock
from agent_magics.transcript.command_result import COMMAND_TOOLS, command_result, json_object
from agent_magics.transcript.goal_text import goal_line
from agent_magics.transcript.model import Block, ToolBlock

OUTPUT_LINES = 20  # lines of a command's output shown: codex exec's
# MAX_OUTPUT_LINES_FOR_EXEC_TOOL_CALL, split into head and tail as Codex's TUI does
OUTPUT_HEAD_LINES = OUTPUT_LINES // 2
OUTPUT_TAIL_LINES = OUTPUT_LINES - OUTPUT_HEAD_LINES
OUTPUT_LINE_CHARS = 400  # a longer output line is cut, with "…"
MAX_ARGUMENTS_SHOWN = 200  # characters of a tool call's arguments in its report line

BOLD, DIM, RED, GREEN, MAGENTA, CYAN = "1", "2", "31", "32", "35", "36"
_PATCH_FILE = re.compile(r"^\*\*\* (Add|Update|Delete) File: (.+)$", re.MULTILINE)


@dataclass(frozen=True)
class Style:
    """ANSI colours when ``colour`` (the stream is a terminal), plain text otherwise."""

    colour: bool = False

    def __call__(self, text: str, *codes: str) -> str:
        if not self.colour or not codes or not text:
            return text
        return f"\x1b[{';'.join(codes)}m{text}\x1b[0m"


def command_line(argv: Sequence[str]) -> str:
    """An argv as a person would type it: the script of ``bash -lc SCRIPT`` itself, any
    other argv quoted where a shell needs it (``shlex.join``)."""
    script = extract_shell_script(list(argv))
    return script if script is not None else shlex.join(argv)


def call_command(tool_name: str, arguments: str) -> str | None:
    """The command a shell tool call runs, as a person would type it (``None``: not a
    shell tool, or arguments that hold no command)."""
    args = json_object(arguments) if tool_name in COMMAND_TOOLS else None
    command = args.get("cmd", args.get("command")) if args else None
    if isinstance(command, list) and command and all(isinstance(c, str) for c in command):
        return command_line(command)
    return command if isinstance(command, str) else None


def call_workdir(tool_name: str, arguments: str) -> str | None:
    """The folder a shell tool call asks to run in (its ``workdir``), as the model wrote
    it (``None``: not given, or not a shell tool)."""
    args = json_object(arguments) if tool_name in COMMAND_TOOLS else None
    where = args.get("workdir") if args else None
    return where if isinstance(where, str) and where else None


def call_patch(tool_name: str, arguments: str, kind: str) -> str | None:
    """The patch of an ``apply_patch`` call (freeform or JSON ``input``)."""
    if tool_name != "apply_patch":
        return None
    if kind == "custom":
        return arguments
    args = json_object(arguments)
    value = args.get("input") if args else None
    return value if isinstance(value, str) else None


def patch_files(patch: str) -> str:
    """``Update stats.py, Add notes.txt``: what a patch touches, from its file headers."""
    found = _PATCH_FILE.findall(patch)
    return ", ".join(f"{verb} {path.strip()}" for verb, path in found) or "a patch"


def indent(text: str, prefix: str = "  ") -> str:
    return "\n".join(prefix + line for line in text.splitlines())


def diff_lines(patch: str, style: Style) -> list[str]:
    """A patch as lines: additions green, removals red, file and hunk headers magenta
    and cyan (with colour off, the lines as they are); hidden characters written out."""
    lines = []
    for line in visible(patch).rstrip("\n").splitlines():
        if line.startswith("***"):
            lines.append(style(line, MAGENTA))
        elif line.startswith("@@"):
            lines.append(style(line, CYAN))
        elif line.startswith("+"):
            lines.append(style(line, GREEN))
        elif line.startswith("-"):
            lines.append(style(line, RED))
        else:
            lines.append(line)
    return lines


def trim_lines(
    text: str, head: int = OUTPUT_HEAD_LINES, tail: int = OUTPUT_TAIL_LINES
) -> list[str]:
    """The first ``head`` and last ``tail`` lines of ``text`` with ``… +N lines`` between
    them when more are hidden (Codex's marker); long lines cut."""
    lines = [
        line if len(line) <= OUTPUT_LINE_CHARS else line[: OUTPUT_LINE_CHARS - 1] + "…"
        for line in terminal_safe(text).rstrip("\n").splitlines()
    ]
    if len(lines) <= head + tail:
        return lines
    return [*lines[:head], f"… +{len(lines) - head - tail} lines", *lines[len(lines) - tail :]]


def plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def span(seconds: float) -> str:
    """A duration as a person reads it: ``0.3 s``, ``42.0 s``, ``2 min 3 s``."""
    if seconds < 59.95:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def run_and_wait(duration_s: float, waited_s: float, ran: bool = True) -> str:
    """How long a call took, with the time it waited for a person's answer said apart:
    ``0.3 s, after waiting 2 min 3 s for you``. A tool's duration is measured from the
    call's start, question included, so the wait is taken out of the run time; a call
    that never ran (denied) has only its wait, if any (``""``)."""
    run = span(max(0.0, duration_s - waited_s))
    if waited_s < 0.05:  # an answer within a tenth of a second: no wait worth saying
        return run if ran else ""
    wait = f"after waiting {span(waited_s)} for you"
    return f"{run}, {wait}" if ran else wait


@dataclass
class _Shown:
    """What the terminal has printed of one call: a log only adds lines."""

    answers: int = 0
    finished: bool = False


class TerminalLines:
    """The lines a terminal prints as a turn goes, from the blocks the events changed.

    A call: its command (or patch, or tool and arguments) when proposed, a line for each
    approval answer, then how it ended with a head and tail of its output (a denied call
    ends with its denial). The files the turn changed; retries, MCP servers and warnings.
    A sandbox notice is also logged as a warning, which the terminal shows: not again.
    ``interactive``: a person answers, so the time waiting for them is not run time;
    ``first_denial`` is said once, after the first denial.
    """

    def __init__(
        self,
        style: Style,
        *,
        interactive: bool,
        first_denial: str = "",
        names: Mapping[str, str] | None = None,
    ) -> None:
        self.style, self.interactive, self.first_denial = style, interactive, first_denial
        self.names = names if names is not None else {}  # sub-agents' nicknames by id
        self.denied = 0
        self._shown: dict[int, _Shown] = {}  # by block: two calls may share an id

    def lines(self, block: Block | None) -> list[str]:
        """What is new in ``block`` since it was last given."""
        if isinstance(block, ToolBlock):
            return self._tool(block)
        if isinstance(block, DiffBlock):
            changed = ", ".join(f"{f.path} ({f.status})" for f in block.files)
            return [self.style("files changed: ", MAGENTA) + visible(changed)]
        if isinstance(block, NoticeBlock) and not block.logged:
            text = terminal_safe(block.text)
            if block.kind == "error":
                return [self.style("warning: ", RED) + text]
            return [text] if block.kind in ("retry", "info") else []
        return []  # the answer's text goes to stdout at the end; reasoning is not shown

    def _tool(self, block: ToolBlock) -> list[str]:
        shown = self._shown.get(id(block))
        lines = []
        if shown is None:
            shown = self._shown[id(block)] = _Shown()
            lines += self._proposed(block)
        if block.answers > shown.answers:
            shown.answers = block.answers
            lines += self._answered(block)
        if block.raw_output is not None and not shown.finished:
            shown.finished = True
            if block.decision is not ReviewDecision.DENIED:
                lines += self._finished(block)
        return lines

    def _proposed(self, block: ToolBlock) -> list[str]:
        s = self.style
        command = call_command(block.tool_name, block.arguments)
        if command is not None:
            lines = visible(command).splitlines() or [""]
            first = s("exec", MAGENTA) + " " + s(lines[0], BOLD)
            rest = [" " * 5 + s(line, BOLD) for line in lines[1:]]
            where = call_workdir(block.tool_name, block.arguments)
            return [first, *rest, *([f"  in {visible(where)}"] if where else [])]
        patch = call_patch(block.tool_name, block.arguments, block.kind)
        if patch is not None:
            head = s("apply_patch", MAGENTA) + " " + visible(patch_files(patch))
            return [head, *diff_lines(patch, s)]
        if block.tool_name == "web_search":  # the server searched: what for
            query = (json_object(block.arguments) or {}).get("query")
            return [s("web_search", MAGENTA) + " " + s(visible(str(query or "")), BOLD)]
        parsed = json_object(block.arguments)
        args = agent_targets(block.tool_name, parsed, self.names) or block.arguments
        if len(args) > MAX_ARGUMENTS_SHOWN:
            args = args[:MAX_ARGUMENTS_SHOWN] + "…"
        return [s("tool", MAGENTA) + " " + visible(f"{block.tool_name} {args}")]

    def _answered(self, block: ToolBlock) -> list[str]:
        if block.decision is None:
            return []
        if block.decision is not ReviewDecision.DENIED:
            how = " (remembered for the session)" if block.remembered else ""
            return [f"  approval {block.decision.value}{how}"]
        self.denied += 1
        line = self.style("  approval denied", RED)
        return [line + (f": {self.first_denial}" if self.first_denial and self.denied == 1 else "")]

    def _finished(self, block: ToolBlock) -> list[str]:
        s = self.style
        # a person's wait is not run time (a policy's answer, without a person, is no wait)
        waited = block.waited_s if self.interactive else 0.0
        took = f"in {max(0.0, (block.duration_s or 0.0) - waited):.2f}s"
        if waited:
            took += f" (after waiting {span(waited)} for you)"
        run = command_result(block.tool_name, block.raw_output)
        if run is not None:
            body = [s(("  " + line).rstrip(), DIM) for line in trim_lines(run.output)]
            colon = ":" if body else ""
            if run.session_id is not None:
                return [s(f"  still running as session {run.session_id}{colon}", DIM), *body]
            if run.exit_code in (0, None) and block.success:
                return [s(f"  succeeded {took}{colon}", GREEN), *body]
            code = "" if run.exit_code is None else f" {run.exit_code}"
            return [s(f"  exited{code} {took}{colon}", RED), *body]
        if block.tool_name == "web_search":  # the sources it named, one a line
            return [s("  " + visible(line), DIM) for line in (block.raw_output or "").splitlines()]
        if block.success:
            done = "applied" if block.tool_name == "apply_patch" else "ok"
            goal = [s("  " + goal_line(block.goal), DIM)] if block.goal else []
            return [s(f"  {done} {took}", GREEN), *goal]
        body = [s("  " + line, DIM) for line in trim_lines(block.output or "")]
        return [s(f"  failed {took}" + (":" if body else ""), RED), *body]
