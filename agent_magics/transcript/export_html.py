"""A session as one self-contained HTML page: inline styles, images as data URLs, no
script, no stylesheet or font fetched from anywhere.

Written here rather than through nbconvert, which is not a dependency and whose pages
load scripts. The assistant's markdown becomes HTML through markdown-it-py, as in the cell's saved
transcript: raw HTML stays text, unsafe links are dropped, remote images become links.
"""

from __future__ import annotations

import html
from typing import Any

from markdown_it import MarkdownIt
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

from agent_magics.text.visible import visible
from agent_magics.transcript.agent_text import agent_header, ending_text
from agent_magics.transcript.document import (
    SessionDoc,
    command,
    ended_status,
    notice_title,
    patch,
    python,
    recorded_output,
    recorded_status,
    turn_diff,
)
from agent_magics.transcript.export_md import (
    ImageBudget,
    call_facts,
    clip,
    summary,
    usage_line,
)
from agent_magics.transcript.html import notice_html
from agent_magics.transcript.model import (
    AgentRun,
    CompactionBlock,
    NoticeBlock,
    TextBlock,
    ToolBlock,
    Transcript,
)

PAGE_STYLE = (
    "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:60rem;"
    "margin:1.5rem auto;padding:0 1rem;line-height:1.45;color:#1f2328"
)
PRE_STYLE = (
    "margin:4px 0;padding:6px 8px;background:#f6f8fa;border-radius:4px;"
    "white-space:pre-wrap;word-break:break-word;font-size:0.85rem"
)
CARD_STYLE = "border:1px solid #d0d7de;border-radius:6px;padding:6px 10px;margin:8px 0"
QUOTE_STYLE = "margin:8px 0;padding:4px 12px;border-left:4px solid #0969da;background:#f6f8ff"
DIFF_COLORS = {"+": "#1a7f37", "-": "#cf222e", "@": "#8250df", "*": "#0969da"}
STATUS_COLORS = {"failed": "#cf222e", "denied": "#cf222e", "aborted": "#9a6700"}
MUTED = "color:#6e7781"


def esc(text: str) -> str:
    return html.escape(text, quote=True)


def pre(body_html: str) -> str:
    return f'<pre style="{PRE_STYLE}">{body_html}</pre>'


def diff_html(patch: str, clipped: bool = False) -> str:
    """A patch or a diff, coloured by line, hidden characters written out (before a
    long one is ``clipped``: clipping splits lines at characters they write out)."""
    shown = visible(patch)
    rows = []
    for line in (clip(shown) if clipped else shown).splitlines():
        color = DIFF_COLORS["*"] if line.startswith("***") else DIFF_COLORS.get(line[:1])
        rows.append(f'<span style="color:{color}">{esc(line)}</span>' if color else esc(line))
    return pre("\n".join(rows))


def python_html(code: str) -> str:
    """Code coloured by pygments, hidden characters written out."""
    body = highlight(visible(code), PythonLexer(), HtmlFormatter(nowrap=True, noclasses=True))
    return pre(body.rstrip("\n"))


def _image(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    """An image of the model's markdown: embedded when it is a data URL, else a link (an
    address in an ``<img>`` would be fetched by whoever opens the page)."""
    token = tokens[idx]
    src = str(token.attrGet("src") or "")
    if src.startswith("data:image/"):
        return str(self.image(tokens, idx, options, env))
    alt = self.renderInlineAsText(token.children or [], options, env)
    return f'<a href="{esc(src)}">{esc(alt or src)}</a>'


_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
_MARKDOWN.add_render_rule("image", _image)


def markdown_html(text: str) -> str:
    """The model's markdown as HTML; HTML it wrote stays text, unsafe links are dropped."""
    return f"<div>{_MARKDOWN.render(text)}</div>"


def details(title: str, body: str) -> str:
    return f"<details><summary>{esc(title)}</summary>{body}</details>"


def call_html(call: ToolBlock, budget: ImageBudget) -> str:
    facts = call_facts(call)
    color = STATUS_COLORS.get(recorded_status(call) or "")
    shown = " · ".join(esc(f) for f in facts)
    line = f"<b>{esc(call.tool_name)}</b> <code>{esc(summary(call))}</code>"
    if shown:
        line += f' · <span style="color:{color}">{shown}</span>' if color else f" · {shown}"
    parts = [f"<div>{line}</div>"]
    if (ran := command(call)) is not None:
        parts.append(pre("$ " + esc(visible(ran))))
    elif (patched := patch(call)) is not None:
        parts.append(diff_html(patched))
    elif (code := python(call)) is not None:
        parts.append(python_html(code))
    text = recorded_output(call)[0]
    if call.output is not None and text:
        n = len(text.splitlines())
        size = f"{n} line{'' if n == 1 else 's'}"
        parts.append(details(f"Output ({size})", pre(esc(clip(text)))))
    for n, url in enumerate(call.images, 1):
        if budget.take(url):
            parts.append(f'<img src="{esc(url)}" alt="output image {n}" style="max-width:100%">')
        else:
            parts.append(f'<div style="{MUTED}"><i>{esc(budget.note(url))}</i></div>')
    parts.extend(agent_html(run, budget) for run in call.agents)
    return f'<div style="{CARD_STYLE}">' + "".join(parts) + "</div>"


def agent_html(run: AgentRun, budget: ImageBudget) -> str:
    """A sub-agent the call spawned: what it did, under its header."""
    parts = []
    if (ending := ending_text(run)) is not None:
        parts.append(f"<div>{esc(ending)}</div>")
    for entry in run.transcript.blocks:
        if isinstance(entry, ToolBlock):
            parts.append(call_html(entry, budget))
        elif isinstance(entry, TextBlock | NoticeBlock):
            parts.append(text_html(entry))
    body = f'<blockquote style="{QUOTE_STYLE}">' + "".join(parts) + "</blockquote>"
    return details(agent_header(run), body)


def text_html(entry: TextBlock | NoticeBlock) -> str:
    if isinstance(entry, TextBlock):
        return markdown_html(entry.text)
    if entry.kind == "item":
        return f'<div style="{MUTED}"><i>(a {esc(entry.text)} item, not shown)</i></div>'
    if isinstance(entry, CompactionBlock):
        return notice_html(entry)
    return details(notice_title(entry), pre(esc(clip(entry.text))))


def turn_html(turn: Transcript, budget: ImageBudget) -> str:
    when = f' <span style="{MUTED};font-weight:normal">· {esc(turn.started or "")}</span>'
    parts = [f"<h2>Turn {turn.number}{when if turn.started else ''}</h2>"]
    prompt = turn.prompt if turn.prompt is not None else "(prompt not recorded)"
    said = f'<div style="white-space:pre-wrap">{esc(prompt)}</div>'
    parts.append(f'<blockquote style="{QUOTE_STYLE}">{said}</blockquote>')
    for entry in turn.blocks:
        if isinstance(entry, ToolBlock):
            parts.append(call_html(entry, budget))
        elif isinstance(entry, TextBlock | NoticeBlock):
            parts.append(text_html(entry))
    files = turn_diff(turn)
    if files:
        parts.append("<p><b>Files changed in this turn</b></p>")
    for f in files:
        body = diff_html(f.diff, clipped=True) if f.diff else ""
        parts.append(details(f"{f.status}: {visible(f.path)}", body))
    if turn.undone or turn.undone_cells:
        undone = [", ".join(turn.undone)] if turn.undone else []
        if turn.undone_cells:
            undone.append("in the open notebook " + ", ".join(map(visible, turn.undone_cells)))
        text = esc("; ".join(undone))
        parts.append(f"<p><i>The changes of this turn were undone: {text}.</i></p>")
    status = ended_status(turn)
    if (status and status != "done") or turn.message:
        said = f"Turn {status or 'ended'}" + (f": {turn.message}" if turn.message else "")
        parts.append(f'<p style="color:#cf222e"><b>{esc(said)}</b></p>')
    if (usage := usage_line(turn.usage)) is not None:
        parts.append(f'<p style="{MUTED}"><i>{esc(usage)}</i></p>')
    return "<section>" + "".join(parts) + "</section>"


def header_html(doc: SessionDoc) -> str:
    rows = [
        ("Started", doc.started),
        ("Last resumed", doc.resumed),
        ("Model", doc.model),
        ("Folder", doc.cwd),
    ]
    items = "".join(f"<li>{name}: <code>{esc(v)}</code></li>" for name, v in rows if v)
    items += f"<li>Turns: {len(doc.turns)}</li>"
    parts = [f"<h1>Agent session <code>{esc(doc.id)}</code></h1><ul>{items}</ul>"]
    if doc.damaged:
        said = f"The session file is damaged: {doc.damaged}; this is what it holds."
        parts.append(f'<p style="color:#cf222e"><b>{esc(said)}</b></p>')
    if doc.skipped:
        parts.append(f"<p><i>{doc.skipped} records of an unknown kind were left out.</i></p>")
    if doc.note:
        parts.append(f"<p><i>{esc(doc.note)}</i></p>")
    return "".join(parts)


def to_html(doc: SessionDoc) -> str:
    budget = ImageBudget()
    body = [header_html(doc), *(turn_html(t, budget) for t in doc.turns)]
    if (total := usage_line(doc.usage())) is not None:
        body.append(f'<hr><p style="{MUTED}"><i>Session total: {esc(total)}</i></p>')
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Agent session {esc(doc.id)}</title></head>"
        f'<body style="{PAGE_STYLE}">\n' + "\n".join(body) + "\n</body></html>\n"
    )
