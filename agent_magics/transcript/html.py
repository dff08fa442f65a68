"""The pieces of a card as HTML strings, pure functions of the transcript model.

Nothing here touches widgets or the kernel, so every string is compared exactly in
tests. The widgets place these strings; the static transcript (:mod:`.static_html`)
reuses them. A call's command, code, patch or arguments are shown through
:func:`~agent_magics.text.visible.visible`.
"""

from __future__ import annotations

import html
import json

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from agent_magics.events import PlanUpdated
from agent_magics.text.visible import visible
from agent_magics.transcript.calls import (
    PATH_ARGS,
    STATUS_LABELS,
    SUMMARY_ARGS,
    arguments_in_header,
    clip_output,
    command_text,
    header_cut,
    header_summary,
    notebook_edit,
    parse_arguments,
    patch_text,
    python_code,
    turn_status_text,
)
from agent_magics.transcript.model import (
    CompactionBlock,
    NoticeBlock,
    ToolBlock,
    ToolStatus,
    Transcript,
)

STATUS_COLORS: dict[ToolStatus, str] = {
    "queued": "#6e7781",
    "running": "#0969da",
    "waiting": "#9a6700",
    "done": "#1a7f37",
    "failed": "#cf222e",
    "denied": "#cf222e",
    "aborted": "#6e7781",
    "stopped": "#9a6700",
}
DIFF_COLORS = {"+": "#1a7f37", "-": "#cf222e", "@": "#8250df", "*": "#0969da"}
PLAN_MARKS = {"completed": "✔", "in_progress": "▶", "pending": "○"}
PRE_STYLE = (
    "margin:2px 0;padding:4px 6px;white-space:pre-wrap;word-break:break-word;"
    "font-family:var(--jp-code-font-family,monospace)"  # a page without JupyterLab's CSS too
)
OUTPUT_STYLE = PRE_STYLE + ";max-height:24em;overflow:auto"
"""A tool's output: a box of bounded height that scrolls (its head, the mark of what is
left out, its tail), so a long output does not run past the window."""


def esc(text: str) -> str:
    return html.escape(text, quote=False)


def diff_html(patch: str) -> str:
    """A patch as a coloured diff: additions green, removals red, headers blue; hidden
    characters written out."""
    rows = []
    for line in visible(patch).splitlines():
        color = DIFF_COLORS["*"] if line.startswith("***") else DIFF_COLORS.get(line[:1])
        rows.append(f'<span style="color:{color}">{esc(line)}</span>' if color else esc(line))
    return f'<pre style="{PRE_STYLE}">' + "\n".join(rows) + "</pre>"


COPY_SCRIPT = (
    "const b=this,pre=b.closest('.agent-magics-cell').querySelector('pre');"
    "const pick=()=>{const r=document.createRange();r.selectNodeContents(pre);"
    "const s=getSelection();s.removeAllRanges();s.addRange(r);"
    "b.textContent='Selected: press Ctrl+C'};"
    "if(navigator.clipboard){navigator.clipboard.writeText(pre.textContent)"
    ".then(()=>{b.textContent='Copied'},pick)}else{pick()}"
)
"""The copy button's click: the clipboard where the page may write it (https, localhost),
else the cell's text selected for the person to copy."""


def proposed_cell_html(where: str, source: str | None, copy: bool = True) -> str:
    """A proposed notebook cell, with a Copy button (``copy``) so a person can paste it by
    hand (the text shown, hidden characters written out)."""
    where = visible(where)
    if source is None:
        return f"<div>{esc(where)}</div>"
    button = (
        f' <button class="agent-magics-copy" onclick="{html.escape(COPY_SCRIPT, quote=True)}">'
        "Copy</button>"
        if copy
        else ""
    )
    cell = f'<pre style="{PRE_STYLE}">{esc(visible(source))}</pre>'
    return f'<div class="agent-magics-cell"><div>{esc(where)}{button}</div>{cell}</div>'


def cell_went_in(block: ToolBlock) -> bool:
    """Whether an edit_notebook call's cell is in the notebook: then nothing is left to
    paste by hand, and its card offers no Copy."""
    return block.status == "done" and block.success is True


IN_KERNEL_NOTE = "Runs in your kernel, outside the sandbox."


def python_html(code: str) -> str:
    """Python code coloured by pygments (inline styles: no stylesheet needed), hidden
    characters written out, and where it runs."""
    body = highlight(visible(code), PythonLexer(), HtmlFormatter(nowrap=True, noclasses=True))
    note = f'<div style="color:#6e7781"><i>{IN_KERNEL_NOTE}</i></div>'
    return f'<pre style="{PRE_STYLE}">{body.rstrip(chr(10))}</pre>{note}'


def cell_code(block: ToolBlock) -> str | None:
    """The code a run_cell call runs: what its question showed (read from the notebook
    before asking, exactly what runs), else the new cell's source it was given."""
    request = block.request
    if request is not None and request.command:
        return request.command[0]
    source = (parse_arguments(block.arguments) or {}).get("source")
    return source if isinstance(source, str) else None


def arguments_html(block: ToolBlock) -> str:
    """The arguments the way a person reads them: a command, a diff, a path, or JSON,
    hidden characters written out."""
    command = command_text(block.tool_name, block.arguments)
    if command is not None:
        where = (parse_arguments(block.arguments) or {}).get("workdir")
        note = f"<div>in <code>{esc(visible(where))}</code></div>" if isinstance(where, str) else ""
        return f'<pre style="{PRE_STYLE}">$ {esc(visible(command))}</pre>{note}'
    code = python_code(block.tool_name, block.arguments)
    if code is None and block.tool_name == "run_cell":
        code = cell_code(block)
    if code is not None:
        return python_html(code)
    patch = patch_text(block.tool_name, block.arguments, block.kind)
    if patch is not None:
        return diff_html(patch)
    if block.tool_name == "update_plan":
        return ""
    cell = notebook_edit(block.tool_name, block.arguments, block.cell_place)
    if cell is not None:
        return proposed_cell_html(cell[0], cell[2], copy=not cell_went_in(block))
    parsed = parse_arguments(block.arguments)
    if parsed is not None and block.tool_name in PATH_ARGS:
        return ""  # the header names the path
    if arguments_in_header(block):
        return ""  # the header shows them all (or there are none)
    in_header = SUMMARY_ARGS.get(block.tool_name, ())
    if parsed is not None and in_header and not header_cut(block):
        parsed = {k: v for k, v in parsed.items() if k not in in_header}  # the rest
        if not parsed:
            return ""
    shown = json.dumps(parsed, indent=2, ensure_ascii=False) if parsed else block.arguments
    return f'<pre style="{PRE_STYLE}">{esc(visible(shown))}</pre>'


def status_html(block: ToolBlock) -> str:
    label = STATUS_LABELS[block.status]
    color = STATUS_COLORS[block.status]
    return f'<span style="color:{color};font-weight:600">{label}</span>'


def card_header_html(block: ToolBlock) -> str:
    """Tool name, summary (unless the body shows it) and status; the decision has a line
    of its own (:func:`.card_text.decision_html`)."""
    summary = header_summary(block)
    shown = f" <code>{esc(summary)}</code>" if summary is not None else ""
    return f"<b>{esc(block.label)}</b>{shown} · {status_html(block)}"


def output_html(text: str) -> str:
    return f'<pre style="{OUTPUT_STYLE}">{esc(clip_output(text))}</pre>'


def plan_html(plan: PlanUpdated) -> str:
    """The plan as a checklist: ✔ done (struck through), ▶ in progress, ○ pending."""
    rows = []
    for step in plan.plan:
        mark = PLAN_MARKS.get(step.status, "○")
        text = esc(step.step)
        if step.status == "completed":
            text = f"<s>{text}</s>"
        elif step.status == "in_progress":
            text = f"<b>{text}</b>"
        rows.append(f"<li>{mark} {text}</li>")
    why = f"<i>{esc(plan.explanation)}</i>" if plan.explanation else ""
    return f'{why}<ul style="list-style:none;padding-left:0;margin:2px 0">{"".join(rows)}</ul>'


DONE_CLASS = "agent-magics-done"
"""The class of a finished turn's status line, which after an answer says nothing."""


def turn_status_html(t: Transcript) -> str:
    color = {"failed": "#cf222e", "aborted": "#9a6700", "waiting": "#9a6700"}.get(t.status)
    text = esc(turn_status_text(t))
    if t.status == "done":
        return f'<span class="{DONE_CLASS}">{text}</span>'
    return f'<span style="color:{color}">{text}</span>' if color else f"<span>{text}</span>"


def notice_html(block: NoticeBlock) -> str:
    color = "#cf222e" if block.kind == "error" else "#6e7781"
    line = f'<div style="color:{color}"><i>{esc(block.text)}</i></div>'
    return compaction_html(block, line) if isinstance(block, CompactionBlock) else line


def compaction_html(block: CompactionBlock, line: str) -> str:
    """The compaction's line, and folded under it what the conversation goes on from."""
    kept = "".join(
        f'<li style="white-space:pre-wrap">{esc(text)}</li>' for text in block.kept if text
    )
    parts = [f"<ol>{kept}</ol>"] if kept else []
    summary = block.summary or "(the model server keeps its own summary)"
    parts.append(f'<div style="white-space:pre-wrap">{esc(summary)}</div>')
    folded = (
        f'<details style="color:#6e7781"><summary>{esc(block.folded_title)}</summary>'
        f"{''.join(parts)}</details>"
    )
    return f'<div class="agent-magics-compaction">{line}{folded}</div>'
