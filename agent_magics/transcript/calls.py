"""What a tool call ran, in words: the pure text pieces every renderer shares.

A call's command, code, patch, path or arguments as a person reads them, its one-line
summary, the output a person wants (without the lines about the run), and the turn's
status and token line. The card's HTML (:mod:`.html`), the static transcript
(:mod:`.markdown`) and the terminal read them from the one model (:mod:`.model`).
Summaries go through :func:`~agent_magics.text.visible.visible`: what a person approves is
what runs, with no control, bidi or zero-width character hiding part of it.
"""

from __future__ import annotations

import json
import re
import shlex
from typing import Any

from agent_magics.events import Usage
from agent_magics.protocol.approval import ReviewDecision
from agent_magics.text.visible import visible
from agent_magics.tools.args import parse_json
from agent_magics.transcript.model import TextBlock, ToolBlock, ToolStatus, Transcript

SUMMARY_CHARS = 120
DISPLAY_LINES = 60  # lines of a tool output shown in a card: head and tail halves
DISPLAY_CHARS = 8000
COMMAND_TOOLS = ("exec_command", "shell", "shell_command", "local_shell")
PATH_ARGS = {
    "read_file": "file_path",
    "list_dir": "dir_path",
    "view_image": "path",
    "web_search": "query",
}
SUMMARY_ARGS = {"grep_files": ("pattern", "path"), "write_stdin": ("session_id", "chars")}
"""Arguments a card's header shows in a tool's own terms: its body shows only the rest."""

STATUS_LABELS: dict[ToolStatus, str] = {
    "queued": "queued",
    "running": "running",
    "waiting": "waiting for approval",
    "done": "done",
    "failed": "failed",
    "denied": "denied",
    "aborted": "aborted",
    "stopped": "stopped",
}


def one_line(text: str, limit: int = SUMMARY_CHARS) -> str:
    """The first line of ``text``, cut to ``limit`` characters; ``…`` marks a cut."""
    lines = text.strip().splitlines() or [""]
    line = lines[0]
    cut = len(lines) > 1
    if len(line) > limit:
        line, cut = line[: limit - 1], True
    return line + " …" if cut and not line.endswith("…") else line


def parse_arguments(arguments: str) -> dict[str, Any] | None:
    try:
        value = parse_json(arguments)
    except ValueError:  # also JSON nested past serde's limit
        return None
    return value if isinstance(value, dict) else None


def command_text(tool_name: str, arguments: str) -> str | None:
    """The command a shell tool runs, as a person would type it."""
    args = parse_arguments(arguments)
    if args is None or tool_name not in COMMAND_TOOLS:
        return None
    command = args.get("cmd", args.get("command"))
    if isinstance(command, list):
        return shlex.join(str(c) for c in command)
    return command if isinstance(command, str) else None


def patch_text(tool_name: str, arguments: str, kind: str) -> str | None:
    if tool_name != "apply_patch":
        return None
    if kind == "custom":
        return arguments
    args = parse_arguments(arguments)
    value = args.get("input") if args else None
    return value if isinstance(value, str) else None


def patch_files(patch: str) -> str:
    """``Add a.txt, Update b.py``: what a patch touches, from its file headers."""
    found = re.findall(r"^\*\*\* (Add|Update|Delete) File: (.+)$", patch, flags=re.MULTILINE)
    return ", ".join(f"{verb} {path.strip()}" for verb, path in found) or "patch"


def notebook_edit(
    tool_name: str, arguments: str, place: str | None = None
) -> tuple[str, str, str | None] | None:
    """What an ``edit_notebook`` call proposes: where, in words; the cell's type; and its
    source (``None`` for a delete). ``None`` for other tools or unreadable arguments.

    ``place`` names the cell as a person finds it (``cell 4 ("import pandas as pd")``,
    :class:`~agent_magics.events.CellPlaced`); until the tool has read the notebook, the
    card says "the cell the model named", not the id JupyterLab never shows."""
    args = parse_arguments(arguments) if tool_name == "edit_notebook" else None
    if args is None:
        return None
    mode, cell_id, path = args.get("edit_mode"), args.get("cell_id"), args.get("path", "")
    kind, source = str(args.get("cell_type") or ""), str(args.get("new_source", ""))
    cell = place or "the cell the model named"
    if mode == "insert":
        where = place or ("after the cell the model named" if cell_id else "at the top")
        return f"New {kind} cell {where} of {path}", kind, source
    if mode == "delete":
        return f"Delete {cell} of {path}", kind, None
    return f"{cell[0].upper()}{cell[1:]} of {path}, replaced by", kind, source


def python_code(tool_name: str, arguments: str) -> str | None:
    """The code of a ``run_python`` call (``None`` for other tools or bad arguments)."""
    args = parse_arguments(arguments) if tool_name == "run_python" else None
    code = args.get("code") if args else None
    return code if isinstance(code, str) else None


def call_summary(tool_name: str, arguments: str, kind: str = "function") -> str:
    """One line that says what a call does, hidden characters written out."""
    return one_line(visible(_summary(tool_name, arguments, kind)))


def _summary(tool_name: str, arguments: str, kind: str) -> str:
    own = _own_summary(tool_name, arguments, kind)
    if own is not None:
        return own
    args = parse_arguments(arguments)
    if args is None:
        return arguments
    return json.dumps(args, ensure_ascii=False) if args else ""  # no arguments: nothing


def _own_summary(tool_name: str, arguments: str, kind: str) -> str | None:
    """A summary in a tool's own terms (``None``: its arguments are shown as JSON)."""
    command = command_text(tool_name, arguments)
    if command is not None:
        return command
    code = python_code(tool_name, arguments)
    if code is not None:
        return code
    patch = patch_text(tool_name, arguments, kind)
    if patch is not None:
        return patch_files(patch)
    args = parse_arguments(arguments)
    if args is None:
        return None
    if tool_name in PATH_ARGS and isinstance(args.get(PATH_ARGS[tool_name]), str):
        return str(args[PATH_ARGS[tool_name]])
    if tool_name == "grep_files" and isinstance(args.get("pattern"), str):
        where = args.get("path")
        return str(args["pattern"]) + (f" in {where}" if isinstance(where, str) else "")
    if tool_name == "edit_notebook" and isinstance(args.get("path"), str):
        return str(args["path"])  # the body says which cell, as a person finds it
    if tool_name == "write_stdin":
        chars = args.get("chars") or ""
        what = f": {json.dumps(chars)}" if chars else " (poll)"
        return f"session {args.get('session_id')}{what}"
    if tool_name == "update_plan" and isinstance(args.get("plan"), list):
        n = len(args["plan"])
        return f"{n} step" + ("" if n == 1 else "s")
    if tool_name == "run_cell":
        return _cell_summary(args)
    return None


def _cell_summary(args: dict[str, Any]) -> str | None:
    """run_cell's call in words: which cell of the notebook, or the new cell's code."""
    ident, index, source = args.get("cell_id"), args.get("index"), args.get("source")
    named = (
        f"cell {ident}"
        if isinstance(ident, str)
        else f"cell at index {index}"
        if isinstance(index, int)
        else None
    )
    if isinstance(source, str):
        return f"new cell after {named}: {source}" if named else f"new cell: {source}"
    return named


def header_cut(block: ToolBlock) -> bool:
    """Whether the header's one-line summary had to be cut (the body then shows all)."""
    text = visible(_summary(block.tool_name, block.arguments, block.kind)).strip()
    return "\n" in text or len(text) > SUMMARY_CHARS


def arguments_in_header(block: ToolBlock) -> bool:
    """Whether the header's summary shows all of a call's arguments, shown as JSON (a
    kernel tool's, an MCP tool's): then the body does not show them again. Arguments too
    long for the header's line are shown in the body only; no arguments, nowhere."""
    if _own_summary(block.tool_name, block.arguments, block.kind) is not None:
        return False
    text = _summary(block.tool_name, block.arguments, block.kind)
    return "\n" not in text.strip() and len(visible(text)) <= SUMMARY_CHARS


def decision_text(block: ToolBlock) -> str:
    """Who decided an approval, when the status alone does not say it (``""`` if none)."""
    d = block.decision
    if d is None:
        return ""
    if block.remembered:
        return "approved earlier for this session"
    if block.decided_by_policy:
        return "by the headless policy" if d is ReviewDecision.DENIED else "approved by policy"
    return {
        ReviewDecision.APPROVED: "approved",
        ReviewDecision.APPROVED_FOR_SESSION: "approved for this session",
        ReviewDecision.DENIED: "",
        ReviewDecision.ABORT: "",
    }[d]


def clip_output(text: str, max_lines: int = DISPLAY_LINES, max_chars: int = DISPLAY_CHARS) -> str:
    """Head and tail of a long output, with a line saying how much is hidden."""
    lines = text.splitlines()
    if len(lines) > max_lines:
        head, tail = max_lines // 2, max_lines - max_lines // 2
        hidden = len(lines) - max_lines
        lines = [*lines[:head], f"… {hidden} more lines …", *lines[-tail:]]
    shown = "\n".join(lines)
    if len(shown) > max_chars:
        half = max_chars // 2
        hidden_chars = len(shown) - max_chars
        shown = f"{shown[:half]}\n… {hidden_chars} more characters …\n{shown[-half:]}"
    return shown


EXIT_CODE = re.compile(r"^(?:Process exited with code|Exit code:) (-?\d+)$", re.MULTILINE)


def shown_output(block: ToolBlock) -> tuple[str, int | None]:
    """What a card shows as output, and the exit code when the tool reported one.

    A shell tool's answer to the model starts with lines about the run (chunk id, wall
    time, exit code) before ``Output:``, and apply_patch answers with JSON; a person
    wants the command's own output. Only a command has an exit code."""
    text = block.output if block.output is not None else block.live_output
    if block.output is None:
        return text, None
    if block.status == "stopped":  # the model is told it was aborted; show what it printed
        return block.live_output.rstrip("\n"), None
    structured = parse_arguments(text) if text.startswith("{") else None
    ran = block.tool_name in (*COMMAND_TOOLS, "write_stdin")
    if structured is not None and isinstance(structured.get("output"), str):
        meta = structured.get("metadata")
        code = meta.get("exit_code") if isinstance(meta, dict) and ran else None
        # a patch has no exit code: Codex's JSON gives one (0 when it went in), and a
        # patch that did not go in is a failed call, shown as such
        return structured["output"].rstrip("\n"), code if isinstance(code, int) else None
    if not ran:
        return text, None
    head, sep, body = text.partition("\nOutput:\n")
    if not sep:
        return text, None
    found = EXIT_CODE.search(head)
    return body.rstrip("\n"), int(found.group(1)) if found else None


def output_title(text: str, exit_code: int | None = None) -> str:
    n = len(text.splitlines())
    size = "empty" if not text else f"{n} line{'' if n == 1 else 's'}"
    return f"Output ({size}" + (f", exit code {exit_code})" if exit_code is not None else ")")


def context_text(context: tuple[int, int | None] | None) -> str:
    """``context 41% of 128k``, when the window is known; else ``""``."""
    tokens, window = context if context is not None else (0, None)
    if not window or tokens * 100 < window:  # (under 1%: nothing to watch yet)
        return ""
    size = f"{window // 1000}k" if window >= 10_000 else f"{window:,}"
    return f"context {round(100 * tokens / window)}% of {size}"


def usage_text(usage: Usage, context: tuple[int, int | None] | None = None) -> str:
    """``Tokens: 1,200 in (1,000 cached) · 340 out (120 reasoning) · 1,540 total``, then
    ``· context 41% of 128k`` when the window is known."""
    gauge = context_text(context)
    cached = f" ({usage.cached_input_tokens:,} cached)" if usage.cached_input_tokens else ""
    reasoning = (
        f" ({usage.reasoning_output_tokens:,} reasoning)" if usage.reasoning_output_tokens else ""
    )
    return (
        f"Tokens: {usage.input_tokens:,} in{cached} · {usage.output_tokens:,} out{reasoning}"
        f" · {usage.total_tokens:,} total" + (f" · {gauge}" if gauge else "")
    )


def turn_status_text(t: Transcript) -> str:
    """One line for the turn: working, waiting, done, or what went wrong."""
    if t.status == "starting":
        return "Starting…"
    if t.status == "queued":
        return "Waiting for the previous turn to finish…"
    if t.status == "running":
        return "Working…"
    if t.status == "waiting":
        return "Waiting for your approval."
    if t.status == "done":
        return "" if ends_with_answer(t) else "Done."  # an answer says it is done
    if t.status == "failed":
        return t.message
    return "Turn interrupted." if t.message == "interrupted" else "Turn aborted."


def ends_with_answer(t: Transcript) -> bool:
    """Whether the model's last word in the turn is text (not a tool call)."""
    for block in reversed(t.blocks):
        if isinstance(block, TextBlock):
            return bool(block.text.strip())
        if isinstance(block, ToolBlock):
            return False
    return False


def header_summary(block: ToolBlock) -> str | None:
    """The one-line summary in a card's header; ``None`` when the card's body shows the
    same thing in full (a command, Python code, JSON too long for the line) or the call
    has no arguments."""
    if command_text(block.tool_name, block.arguments) is not None:
        return None
    if python_code(block.tool_name, block.arguments) is not None:
        return None
    own = _own_summary(block.tool_name, block.arguments, block.kind) is not None
    summary = call_summary(block.tool_name, block.arguments, block.kind)
    return summary if summary and (own or arguments_in_header(block)) else None
