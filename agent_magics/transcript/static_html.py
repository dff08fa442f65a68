"""The finished turn as one static HTML document, kept in the saved notebook.

The live cards are widgets: a saved notebook opened without their kernel (a reload after
a restart, GitHub, nbviewer, nbconvert) can only say "model not found", and JupyterLab's
widget renderer does not fall back to the bundle's other types. So when a turn ends, its
cell's display is replaced by :class:`TranscriptDocument`: this HTML beside the markdown
of :mod:`.markdown`. Pure functions over :class:`~agent_magics.transcript.model.Transcript`,
built from the pieces of :mod:`.html` so it reads like the cards. Inline styles only,
no script: sanitizers (JupyterLab's for untrusted notebooks, GitHub's) keep inline
styles and ``<details>``, and everything the model or a tool wrote is escaped.
"""

from __future__ import annotations

import html
import re
from typing import Any

from markdown_it import MarkdownIt

from agent_magics.events import TurnAbortedEvent
from agent_magics.text.inert import terminal_safe
from agent_magics.tools.notebook.graded import NOTE_KEY, TOUCHED_KEY
from agent_magics.transcript import calls
from agent_magics.transcript import html as render
from agent_magics.transcript.agent_text import agent_header, ending_text
from agent_magics.transcript.blocks import AGENT_LIVE
from agent_magics.transcript.card_text import decision_html, note_html, output_opens, took_html
from agent_magics.transcript.denials import denial_summary, denied_block, note_for
from agent_magics.transcript.figures import Figure, figure_words
from agent_magics.transcript.goal_text import goal_html
from agent_magics.transcript.html import OUTPUT_STYLE, esc
from agent_magics.transcript.markdown import block_markdown, tail_markdown
from agent_magics.transcript.model import (
    OPEN_STATUSES,
    AgentRun,
    Block,
    NoticeBlock,
    TextBlock,
    ToolBlock,
    Transcript,
)
from agent_magics.transcript.turn_diff import turn_diff_html

IMAGE_BUDGET_BYTES = 1_000_000
"""Characters of image data URLs one transcript embeds; later images become a note."""
EMBEDDED_IMAGE = re.compile(r"^data:image/(png|jpeg|gif|webp);base64,[A-Za-z0-9+/=\s]+$")
"""Images kept: raster data URLs only (an address would be fetched by whoever opens it)."""
CARD_STYLE = (
    "border:1px solid #d0d7de;border-radius:4px;padding:2px 8px;margin:4px 0;"
    "line-height:var(--jp-code-line-height,1.3077)"
)
"""A card spaced like the live one (:data:`.widgets.TEXT_CSS`): JupyterLab's output text."""
MUTED = "color:#6e7781"
AGENT_STYLE = "margin-left:6px;padding-left:8px;border-left:2px solid #d0d7de"
ROOT_STYLE = "margin:2px 0"

_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
"""Answers as markdown; raw HTML in them is shown as text (``html`` off)."""


def answer_html(text: str) -> str:
    """The model's text, rendered as markdown; any HTML it wrote stays text."""
    return str(_MARKDOWN.render(text))


def header_html(block: ToolBlock) -> str:
    """The card's header and how long the call ran (and waited for you), as on the card."""
    return f"<div>{render.card_header_html(block)}{took_html(block)}</div>"


def arguments_html(block: ToolBlock) -> str:
    """The call's arguments as the card shows them. A proposed notebook cell that did not
    go into the notebook keeps its Copy button: the person pastes it after the turn, from
    this copy. The button's click is our own fixed code (the cell's text is escaped);
    where a page runs no inline handlers (GitHub, an untrusted notebook), the text stays
    selectable."""
    cell = calls.notebook_edit(block.tool_name, block.arguments, block.cell_place)
    if cell is not None:
        where, _kind, source = cell
        return render.proposed_cell_html(where, source, copy=not render.cell_went_in(block))
    return render.arguments_html(block)


class ImageBudget:
    """Keeps images while the transcript's budget lasts; says so when it runs out. With
    ``apart``, a kept image is named in words and gathered in ``figures`` (``(url,
    alt)``), to be shown once as an output of its own (:mod:`.figures`); else it is
    embedded here."""

    def __init__(self, limit: int = IMAGE_BUDGET_BYTES, apart: bool = False) -> None:
        self.left = limit
        self.apart = apart
        self.figures: list[tuple[str, str]] = []

    def html(self, url: str, alt: str) -> str:
        if not EMBEDDED_IMAGE.match(url):
            return f'<div style="{MUTED}"><i>{esc(alt)}: not an embedded image, not kept.</i></div>'
        if len(url) > self.left:
            size = f"{len(url) / 1e3:,.1f} kB"
            return (
                f'<div style="{MUTED}"><i>{esc(alt)} ({size}) is not kept: the saved '
                f"transcript embeds at most {IMAGE_BUDGET_BYTES / 1e6:g} MB of images.</i></div>"
            )
        self.left -= len(url)
        if self.apart:
            self.figures.append((url, alt))
            return f'<div style="{MUTED}"><i>{esc(figure_words(alt, True))}</i></div>'
        src, text = html.escape(url, quote=True), html.escape(alt, quote=True)
        return f'<img src="{src}" alt="{text}" style="max-width:100%">'


def output_html(block: ToolBlock) -> str:
    """The output, collapsed (a person opens it when they want it), open when the call
    failed, as on the card."""
    text, code = calls.shown_output(block)
    if not (text or code is not None) or block.tool_name == "update_plan":
        return ""
    title = calls.output_title(text, code)
    body = f'<pre style="{OUTPUT_STYLE}">{esc(calls.clip_output(text))}</pre>'
    details = "<details open>" if output_opens(block, code) else "<details>"
    return f"{details}<summary>{title}</summary>{body}</details>"


def tool_html(block: ToolBlock, images: ImageBudget, policy_note: str | None = None) -> str:
    """One tool call: what it was, its status and who decided, then what it did (for a
    denied call, ``policy_note``: what :func:`.denials.note_for` says of it)."""
    parts = [header_html(block), arguments_html(block), decision_html(block)]
    if block.plan is not None:
        parts.append(render.plan_html(block.plan))
    if block.goal is not None:
        parts.append(goal_html(block.goal))
    if block.image is not None and block.image.data_url:
        parts.append(images.html(block.image.data_url, block.image.path))
    if block.image is None:
        parts.extend(images.html(url, f"output image {n}") for n, url in enumerate(block.images, 1))
    if denied_block(block):  # our words in place of Codex's "rejected by user"
        if policy_note:
            parts.append(note_html(policy_note))
    else:
        parts.append(output_html(block))
    parts.extend(agent_html(run, images) for run in block.agents)
    return f'<div style="{CARD_STYLE}">{"".join(parts)}</div>'


def agent_html(run: AgentRun, images: ImageBudget) -> str:
    """A sub-agent as the live view shows it: its header, then its own transcript
    (grandchildren nested in it), indented inside the card that spawned it."""
    ending = ending_text(run)
    note = f'<div style="color:#cf222e">{esc(ending)}</div>' if ending else ""
    body = transcript_html(run.transcript, images=images)
    return (
        f'<details open class="agent-magics-subagent"><summary>{esc(agent_header(run))}'
        f'</summary><div style="{AGENT_STYLE}">{note}{body}</div></details>'
    )


def transcript_html(
    t: Transcript, image_budget: int = IMAGE_BUDGET_BYTES, images: ImageBudget | None = None
) -> str:
    """The whole turn: answers, tool calls, notes, how it ended and the tokens it used."""
    images = images if images is not None else ImageBudget(image_budget)
    parts = [block_html(t, block, images) for block in t.blocks]
    return root_html([*parts, tail_html(t)])


def root_html(parts: list[str], first: bool = True) -> str:
    """Blocks of a turn in the transcript's box: the first (or only) piece of it is the
    one found by its class, those after a card's figures continue it."""
    kind = "agent-magics-transcript" if first else "agent-magics-transcript-rest"
    return f'<div class="{kind}" style="{ROOT_STYLE}">{"".join(parts)}</div>'


def block_html(t: Transcript, block: Block, images: ImageBudget) -> str:
    """One block of the turn ("" for one that shows nothing)."""
    if isinstance(block, TextBlock):
        return f"<div>{answer_html(block.text.strip())}</div>" if block.text.strip() else ""
    if isinstance(block, ToolBlock):
        return tool_html(block, images, note_for(t, block))
    if isinstance(block, NoticeBlock):
        return render.notice_html(block)
    return turn_diff_html(block.files)


def tail_html(t: Transcript) -> str:
    """What follows the blocks: how the turn ended, what was denied, the tokens."""
    parts = [f"<div>{render.turn_status_html(t)}</div>"]
    if (denied := denial_summary(t)) and t.status not in ("running", "waiting"):
        parts.append(f'<div style="{MUTED}">{esc(denied)}</div>')
    if t.usage is not None:
        parts.append(f'<div style="{MUTED}">{esc(calls.usage_text(t.usage, t.context))}</div>')
    return "".join(parts)


def settle(t: Transcript) -> None:
    """A turn that ended without saying so (cancelled before it began) ends as aborted.
    A stopped turn stops the sub-agents it started (the session ends them with it): any
    still shown at work are shown shut down, their own turns stopped with the parent's
    reason (their last status may come after the cell's transcript is drawn)."""
    if t.status in ("starting", *OPEN_STATUSES):
        t.apply(TurnAbortedEvent("cancelled"))
    if t.status != "aborted":
        return
    for tool in t.tools:
        for run in tool.agents:
            if run.status in AGENT_LIVE:
                run.status = "shutdown"
            if run.transcript.status in ("starting", *OPEN_STATUSES):
                run.transcript.apply(TurnAbortedEvent(t.message or "cancelled"))
            settle(run.transcript)


class TranscriptPart:
    """A piece of a finished turn for a cell's output: HTML, the same as markdown, and
    that markdown made safe for a terminal as plain text."""

    def __init__(self, html: str, markdown: str) -> None:
        self.html = html
        self.markdown = markdown

    def bundle(self) -> dict[str, str]:
        return {
            "text/html": self.html,
            "text/markdown": self.markdown,
            "text/plain": terminal_safe(self.markdown),
        }

    def _repr_mimebundle_(
        self, **kwargs: Any
    ) -> dict[str, str] | tuple[dict[str, str], dict[str, Any]]:
        return self.bundle()


class TranscriptDocument(TranscriptPart):
    """The finished turn for a cell's output. Each figure is kept once (see
    :mod:`.figures`): embedded in the HTML, or with ``figures_apart`` as an output of its
    own right below the card that drew it. Then the transcript is this document up to
    that card, and ``after`` holds what the cell shows next, in order: the figures
    (:class:`.figures.Figure`) and the rest of the transcript (:class:`TranscriptPart`).
    The text names each figure in words."""

    def __init__(self, t: Transcript, figures_apart: bool = False) -> None:
        images = ImageBudget(apart=figures_apart)
        pieces: list[TranscriptPart] = []
        self.after: list[TranscriptPart | Figure] = []
        html_parts: list[str] = []
        md_parts: list[str] = []
        for block in t.blocks:
            drawn = len(images.figures)
            html_parts.append(block_html(t, block, images))
            md_parts.append(block_markdown(t, block, figures_apart))
            if len(images.figures) > drawn:  # this card's figures come right after it
                piece = TranscriptPart(root_html(html_parts, not pieces), _joined(md_parts))
                pieces.append(piece)
                self.after.extend([piece] if len(pieces) > 1 else [])
                self.after.extend(Figure(url, alt) for url, alt in images.figures[drawn:])
                html_parts, md_parts = [], []
        html_parts.append(tail_html(t))
        md_parts.extend(tail_markdown(t))
        last = TranscriptPart(root_html(html_parts, not pieces), _joined(md_parts))
        first = pieces[0] if pieces else last
        if pieces:
            self.after.append(last)
        super().__init__(first.html, first.markdown)
        self.figures = images.figures
        self.graded = t.graded_notes()

    def _repr_mimebundle_(
        self, **kwargs: Any
    ) -> dict[str, str] | tuple[dict[str, str], dict[str, Any]]:
        """The document; with the graded cells the turn read or changed as the output's
        metadata (``agent_magics.graded_turns``): the output is saved with the notebook
        in every setup, so the teacher finds the notes there even where no tool could
        write them into the notebook's own metadata."""
        data = self.bundle()
        if not self.graded:
            return data
        return data, {NOTE_KEY: {TOUCHED_KEY: self.graded}}


def _joined(parts: list[str]) -> str:
    return "\n\n".join(filter(None, parts))
