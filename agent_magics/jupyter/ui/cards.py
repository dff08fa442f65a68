"""The pieces of the live transcript: a tool call's card with its approval buttons, and
the views of text, notices and the turn's diff. Each only places what the transcript's
renderers (:mod:`agent_magics.transcript`) drew; :class:`~.widgets.TranscriptView`
decides when they change."""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable
from typing import Any

import ipywidgets as W

from agent_magics.jupyter.ui.buttons import card_button
from agent_magics.protocol.approval import ApprovalRequest, ReviewDecision
from agent_magics.transcript import calls, card_text
from agent_magics.transcript import html as render
from agent_magics.transcript.denials import denial_note, denied_block
from agent_magics.transcript.goal_text import goal_html
from agent_magics.transcript.model import (
    DiffBlock,
    NoticeBlock,
    TextBlock,
    ToolBlock,
)
from agent_magics.transcript.turn_diff import turn_diff_html

Decide = Callable[[str, ReviewDecision], None]  # answer the question with this ticket
Stop = Callable[[str], object]  # stop this card's agent's running call with this id

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
        self.stop_button = card_button(
            "Stop", "warning", tooltip="Stop this command; the turn goes on"
        )
        self.stop_button.on_click(lambda _b: self.stop())
        self.stop_row = W.HBox()
        self.agents = W.VBox()  # the sub-agents a spawn_agent call started (.agents)
        self._asked: ApprovalRequest | None = None  # the question the buttons answer
        self._place: str | None = None
        self._went_in = False
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
                self.agents,
            ],
            layout=W.Layout(**CARD_LAYOUT),
        )

    def _make_buttons(self, remember_allowed: bool = True) -> None:
        for label, decision, style in BUTTONS:
            if decision is ReviewDecision.APPROVED_FOR_SESSION and not remember_allowed:
                continue  # a tool set to ask every time
            button = card_button(label, style)
            button.on_click(lambda _b, d=decision: self.click(d))
            self.buttons[label] = button
        self.button_row.children = tuple(self.buttons.values())

    def click(self, decision: ReviewDecision) -> None:
        """A button was pressed (on whatever thread the comm message arrived): it answers
        the question this card shows, by that question's ticket."""
        asked = self._asked
        if asked is None or not self.buttons or all(b.disabled for b in self.buttons.values()):
            return
        for button in self.buttons.values():
            button.disabled = True
        if self._on_decide is not None:
            self._on_decide(asked.ticket, decision)

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
        went_in = render.cell_went_in(block)  # a cell in the notebook: no Copy any more
        if (block.cell_place is not None and self._place != block.cell_place) or (
            went_in and not self._went_in
        ):
            self._place = block.cell_place  # the edited cell, once the tool has found it
            self._went_in = went_in
            self.arguments.value = render.arguments_html(block)
        if block.status == "waiting" and block.request is not None and self._on_decide:
            if self._asked is not block.request:
                self._asked = block.request
                self.arguments.value = render.arguments_html(block)  # what the question names
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
        html = render.plan_html(block.plan) if block.plan is not None else None
        if html is None and block.goal is not None:
            html = goal_html(block.goal)  # the goal a create_goal or update_goal left
        if html is not None:
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
