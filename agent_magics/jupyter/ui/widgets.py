"""The live transcript: ipywidgets that mirror :class:`~agent_magics.transcript.model.Transcript`.

Every change reaches the browser as widget state (trait updates over comms), never as
``print``/``display`` from the running turn, so it lands in the right cell whatever
runs in the notebook meanwhile. Streamed text and output are redrawn at most ~10 times
a second (:class:`~agent_magics.jupyter.ui.throttle.Throttle`); new cards, questions and the
end of the turn are drawn at once.
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Callable
from typing import Any

import ipywidgets as W

from agent_magics.events import Event, TextDelta, ToolOutputDelta
from agent_magics.jupyter.ui.throttle import MIN_INTERVAL_S, Scheduler, Throttle
from agent_magics.protocol.approval import ReviewDecision
from agent_magics.transcript import calls, card_text
from agent_magics.transcript import html as render
from agent_magics.transcript.denials import denial_note, denied_block
from agent_magics.transcript.figures import Figure, show_figures
from agent_magics.transcript.model import (
    Block,
    DiffBlock,
    NoticeBlock,
    TextBlock,
    ToolBlock,
    Transcript,
)
from agent_magics.transcript.static_html import TranscriptDocument, settle
from agent_magics.transcript.turn_diff import turn_diff_html

Decide = Callable[[str, ReviewDecision], None]
Stop = Callable[[str], object]  # stop the running call with this id

BUTTONS: tuple[tuple[str, ReviewDecision, str], ...] = (
    ("Approve", ReviewDecision.APPROVED, "success"),
    ("Approve for session", ReviewDecision.APPROVED_FOR_SESSION, "info"),
    ("Deny", ReviewDecision.DENIED, "danger"),
    ("Abort turn", ReviewDecision.ABORT, "warning"),
)
CARD_LAYOUT = {
    "border": "1px solid var(--jp-border-color2, #d0d7de)",
    "padding": "2px 8px",
    "margin": "4px 0",
}
TEXT_CSS = (
    "<style>.agent-magics-live .jupyter-widget-html-content,"
    ".agent-magics-live .widget-html-content"
    "{line-height:var(--jp-code-line-height,1.3077)}</style>"
)
"""The cards' text spaced like JupyterLab's output text: an HTML widget's content has the
line height of a one-line control (``--jp-widgets-inline-height``, 28 px), which made
every wrapped line and paragraph of a card look double-spaced. Widgets take no inline
style for it, so this rule, kept in a hidden widget, holds for the transcript's widgets
only (its class)."""
PLAIN_FALLBACK = "agent transcript (a live widget: it shows in Jupyter while the kernel runs)"


def image_widget(data_url: str) -> W.Image | None:
    """An Image widget for a ``data:image/...;base64,`` URL (``None`` if it is not one)."""
    head, sep, payload = data_url.partition(",")
    if not sep or not head.startswith("data:image/") or ";base64" not in head:
        return None
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return None
    fmt = head[len("data:image/") :].split(";")[0] or "png"
    return W.Image(value=data, format=fmt, layout=W.Layout(max_width="100%"))


def close_widgets(*roots: W.Widget) -> None:
    """Close these widgets and every widget they hold (children, layout, style).

    Each widget keeps a comm and its place in ipywidgets' registry until it is closed, so
    a finished turn's widgets (about a hundred, with their layouts and styles) stayed in
    the kernel for good once the static transcript had replaced them. Closing also tells
    the front end to drop their models, so no widget state of theirs is saved."""
    seen: set[int] = set()
    stack = list(roots)
    while stack:
        widget = stack.pop()
        if id(widget) in seen:
            continue
        seen.add(id(widget))
        for name in widget.keys:
            value = getattr(widget, name, None)
            if isinstance(value, W.Widget):
                stack.append(value)
            elif isinstance(value, (tuple, list)):
                stack.extend(v for v in value if isinstance(v, W.Widget))
        widget.close()


class ToolCard:
    """One tool call: header, arguments, plan or image, approval buttons (once answered,
    the decision in their place), a running command's latest output and its Stop button,
    then the output."""

    def __init__(
        self, block: ToolBlock, on_decide: Decide | None, on_stop: Stop | None = None
    ) -> None:
        self.call_id = block.call_id
        self._on_decide = on_decide
        self._on_stop = on_stop
        self.header = W.HTML()
        self.arguments = W.HTML(render.arguments_html(block))
        self.extra = W.VBox()
        self.question = W.HTML()
        self.buttons: dict[str, W.Button] = {}
        self.button_row = W.HBox()
        self.output_body = W.HTML()
        self.output = W.Accordion(children=[self.output_body], selected_index=None)
        self.output.layout.display = "none"
        self.decision = W.HTML()
        self.live = W.HTML()
        self.stop_button = W.Button(
            description="Stop",
            button_style="warning",
            tooltip="Stop this command; the turn goes on",
            layout=W.Layout(width="auto"),
        )
        self.stop_button.on_click(lambda _b: self.stop())
        self.stop_row = W.HBox()
        self._asked: Any = None
        self._place: str | None = None
        self._shown_image: Any = None
        self._opened = False
        self.root = W.VBox(
            [
                self.header,
                self.arguments,
                self.extra,
                self.question,
                self.button_row,
                self.decision,
                self.live,
                self.stop_row,
                self.output,
            ],
            layout=W.Layout(**CARD_LAYOUT),
        )

    def _make_buttons(self, remember_allowed: bool = True) -> None:
        for label, decision, style in BUTTONS:
            if decision is ReviewDecision.APPROVED_FOR_SESSION and not remember_allowed:
                continue  # a tool set to ask every time
            button = W.Button(description=label, button_style=style, layout=W.Layout(width="auto"))
            button.on_click(lambda _b, d=decision: self.click(d))
            self.buttons[label] = button
        self.button_row.children = tuple(self.buttons.values())

    def click(self, decision: ReviewDecision) -> None:
        """A button was pressed (on whatever thread the comm message arrived)."""
        if not self.buttons or all(b.disabled for b in self.buttons.values()):
            return
        for button in self.buttons.values():
            button.disabled = True
        if self._on_decide is not None:
            self._on_decide(self.call_id, decision)

    def stop(self) -> None:
        """Stop was pressed (on whatever thread the comm message arrived)."""
        if self.stop_button.disabled or self._on_stop is None:
            return
        self.stop_button.disabled = True
        self.stop_button.description = "Stopping…"
        self._on_stop(self.call_id)

    def close(self) -> None:
        """Close the card's widgets, also those not shown now (the answered buttons, Stop)."""
        close_widgets(self.root, self.stop_button, *self.buttons.values())
        self.buttons.clear()
        self._on_decide = self._on_stop = None

    def update(self, block: ToolBlock) -> None:
        self.header.value = render.card_header_html(block) + card_text.took_html(block)
        if block.cell_place is not None and self._place != block.cell_place:
            self._place = block.cell_place  # the edited cell, once the tool has found it
            self.arguments.value = render.arguments_html(block)
        if block.status == "waiting" and block.request is not None and self._on_decide:
            if self._asked is not block.request:
                self._asked = block.request
                if not self.buttons:
                    self._make_buttons(block.request.remember_allowed)
                for button in self.buttons.values():
                    button.disabled = False
                self.button_row.children = tuple(self.buttons.values())
            self.question.value = card_text.question_html(block)
            self.decision.value = ""
        else:  # answered (or never asked): the decision replaces the buttons
            for button in self.buttons.values():
                button.disabled = True
            self.button_row.children = ()
            self.question.value = ""
            note = denial_note(block)  # our words in place of Codex's "rejected by user"
            shown = card_text.decision_html(block) + (card_text.note_html(note) if note else "")
            self.decision.value = shown
        self._update_running(block)
        self._update_extra(block)
        self._update_output(block)

    def _update_running(self, block: ToolBlock) -> None:
        running = block.status == "running"
        self.live.value = card_text.live_html(block.live_output) if running else ""
        stoppable = block.tool_name in card_text.STOPPABLE_TOOLS and self._on_stop is not None
        self.stop_row.children = (self.stop_button,) if running and stoppable else ()

    def _update_output(self, block: ToolBlock) -> None:
        if block.status in ("queued", "running", "waiting") or block.tool_name == "update_plan":
            return  # a running command's latest lines show above, in ``live``
        if denied_block(block):
            return  # the model's answer only says it was rejected: the decision says more
        text, code = calls.shown_output(block)
        if not (text or code is not None):
            return
        self.output.layout.display = None
        self.output.set_title(0, calls.output_title(text, code))
        self.output_body.value = render.output_html(text)
        if not self._opened and card_text.output_opens(block, code):
            self._opened = True  # once: a person may close it again
            self.output.selected_index = 0

    def _update_extra(self, block: ToolBlock) -> None:
        if block.plan is not None:
            html = render.plan_html(block.plan)
            if not self.extra.children:
                self.extra.children = (W.HTML(html),)
            else:
                self.extra.children[0].value = html
        elif block.image is not None and block.image is not self._shown_image:
            self._shown_image = block.image
            image = image_widget(block.image.data_url or "")
            replaced, self.extra.children = self.extra.children, (image,) if image else ()
            close_widgets(*replaced)
        elif block.images and not self.extra.children:  # figures a tool's output carries
            shown = [image_widget(url) for url in block.images]
            self.extra.children = tuple(w for w in shown if w is not None)


class TextView:
    """Assistant text, shown as markdown (the front end renders it)."""

    def __init__(self) -> None:
        self.root = W.Output()

    def update(self, block: TextBlock) -> None:
        bundle = {"text/markdown": block.text, "text/plain": block.text}
        self.root.outputs = ({"output_type": "display_data", "data": bundle, "metadata": {}},)


class NoticeView:
    def __init__(self) -> None:
        self.root = W.HTML()

    def update(self, block: NoticeBlock) -> None:
        self.root.value = render.notice_html(block)


class DiffView:
    """The files the turn changed, one collapsed diff each."""

    def __init__(self) -> None:
        self.root = W.HTML()

    def update(self, block: DiffBlock) -> None:
        self.root.value = turn_diff_html(block.files)


class TranscriptBox(W.VBox):  # type: ignore[misc]
    """The root widget; a saved notebook without widget state shows a short note."""

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        data = super()._repr_mimebundle_(**kwargs)
        if isinstance(data, dict):
            data["text/plain"] = PLAIN_FALLBACK
        return data


class TranscriptView:
    """An event sink that keeps the widgets in step with the turn.

    ``handle`` is the display handle of ``root``: :meth:`finish` replaces the widgets
    with the static transcript through it, so the saved notebook keeps the turn.
    """

    def __init__(
        self,
        schedule: Scheduler,
        on_decide: Decide | None = None,
        *,
        on_stop: Stop | None = None,
        interval: float = MIN_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.state = Transcript()
        self.on_decide = on_decide
        self.on_stop = on_stop
        self.body = W.VBox()
        self.status = W.HTML()
        self.footer = W.HTML()
        css = W.HTML(TEXT_CSS, layout=W.Layout(display="none"))
        self.root = TranscriptBox([css, self.body, self.status, self.footer])
        self.root.add_class("agent-magics-live")
        self.cards: dict[str, ToolCard] = {}
        self._views: dict[int, ToolCard | TextView | NoticeView | DiffView] = {}
        self._dirty: dict[int, Block] = {}
        self.throttle = Throttle(self._flush, schedule, interval, clock)
        self.handle: Any = None
        self.show_figure: Callable[[Figure], Any] | None = None  # figures as outputs
        self.closed = False
        self._flush()

    def __call__(self, event: Event) -> None:
        block = self.state.apply(event)
        if block is not None:
            self._dirty[id(block)] = block
        if isinstance(event, (TextDelta, ToolOutputDelta)):
            self.throttle.poke()
        else:
            self.throttle.now()

    def note(self, text: str) -> None:
        """A line of information (e.g. that a new conversation started)."""
        block = NoticeBlock("info", text)
        self.state.blocks.append(block)
        self._dirty[id(block)] = block
        self.throttle.now()

    def mark_queued(self) -> None:
        """The turn waits for the previous one to end."""
        self.state.status = "queued"
        self.throttle.now()

    def fail(self, message: str) -> None:
        self.state.fail(message)
        for tool in self.state.tools:
            self._dirty[id(tool)] = tool
        self.throttle.now()

    def finish(self) -> None:
        """The turn is over: draw its last state, then show the static transcript in
        the widgets' place (it needs no kernel to be read)."""
        settle(self.state)
        self.throttle.cancel()
        for tool in self.state.tools:
            self._dirty[id(tool)] = tool
        self._flush()
        if self.handle is not None:
            document = TranscriptDocument(self.state, self.show_figure is not None)
            self.handle.update(document)
            if self.show_figure is not None:
                show_figures(document.figures, self.show_figure)
            self.close()  # only now: the cell shows the document, no longer these widgets

    def close(self) -> None:
        """Close every widget of the turn and let go of them: their comms, models and
        callbacks (which hold the approver and the controller) would otherwise stay in
        the kernel until it exits."""
        self.closed = True
        self.throttle.cancel()
        for view in self._views.values():
            if isinstance(view, ToolCard):
                view.close()
        close_widgets(self.root)
        self.cards.clear()
        self._views.clear()
        self._dirty.clear()

    def _view_for(self, block: Block) -> ToolCard | TextView | NoticeView | DiffView:
        view = self._views.get(id(block))
        if view is None:
            if isinstance(block, ToolBlock):
                view = self.cards[block.call_id] = ToolCard(block, self.on_decide, self.on_stop)
            elif isinstance(block, TextBlock):
                view = TextView()
            elif isinstance(block, DiffBlock):
                view = DiffView()
            else:
                view = NoticeView()
            self._views[id(block)] = view
            self.body.children = (*self.body.children, view.root)
        return view

    def _flush(self) -> None:
        if self.closed:
            return  # a late event: the widgets are gone, the document shows the turn
        dirty, self._dirty = self._dirty, {}
        if self.state.status in ("failed", "aborted"):
            dirty |= {id(t): t for t in self.state.tools}
        for block in dirty.values():
            view = self._view_for(block)
            view.update(block)  # type: ignore[arg-type]
        self.status.value = render.turn_status_html(self.state)
        usage = self.state.usage
        done = self.state.status in ("done", "failed", "aborted")
        self.footer.value = (
            f'<span style="color:#6e7781">{calls.usage_text(usage)}</span>'
            if usage is not None and done
            else ""
        )
