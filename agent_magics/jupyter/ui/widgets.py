"""The live transcript: ipywidgets that mirror :class:`~agent_magics.transcript.model.Transcript`.

Every change reaches the browser as widget state (trait updates over comms), never as
``print``/``display`` from the running turn, so it lands in the right cell whatever
runs in the notebook meanwhile. Streamed text and output are redrawn at most ~10 times
a second (:class:`~agent_magics.jupyter.ui.throttle.Throttle`); new cards, questions and the
end of the turn are drawn at once.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

import ipywidgets as W

from agent_magics.events import (
    AgentEvent,
    AgentSpawned,
    AgentStatusChanged,
    Event,
    TextDelta,
    ToolOutputDelta,
)
from agent_magics.jupyter.ui.agents import AgentPanel, AgentStop, child_decide, child_stop
from agent_magics.jupyter.ui.cards import (
    Decide,
    DiffView,
    NoticeView,
    TextView,
    ToolCard,
    close_widgets,
)
from agent_magics.jupyter.ui.throttle import MIN_INTERVAL_S, Scheduler, Throttle
from agent_magics.transcript import calls
from agent_magics.transcript import html as render
from agent_magics.transcript.model import (
    Block,
    DiffBlock,
    NoticeBlock,
    TextBlock,
    ToolBlock,
    Transcript,
)
from agent_magics.transcript.static_html import TranscriptDocument, settle

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
        on_stop: AgentStop | None = None,
        on_abort: Callable[[], object] | None = None,
        interval: float = MIN_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.state = Transcript()
        self.on_decide = on_decide
        self.on_stop = on_stop
        self.on_abort = on_abort  # an Abort on a sub-agent's card stops the whole turn
        self._child_args = (schedule, interval, clock)
        self.agents: dict[str, AgentPanel] = {}
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
        self.show_after: Callable[[Any], Any] | None = None  # figures as outputs
        self.closed = False
        self._flush()

    def __call__(self, event: Event) -> None:
        block = self.state.apply(event)
        if isinstance(event, (AgentSpawned, AgentEvent, AgentStatusChanged)):
            self._agent_event(event, block)
        elif block is not None:
            self._dirty[id(block)] = block
        inner = event
        while isinstance(inner, AgentEvent):
            inner = inner.event
        if isinstance(inner, (TextDelta, ToolOutputDelta)):
            self.throttle.poke()
        else:
            self.throttle.now()

    def _agent_event(
        self, event: AgentSpawned | AgentEvent | AgentStatusChanged, block: Block | None
    ) -> None:
        """A sub-agent's panel, placed in its spawn_agent card; its own events go to the
        child's view inside it (which nests a grandchild's the same way)."""
        if self.closed:
            return
        run = self.state.agent(event.agent_id)
        panel = self.agents.get(event.agent_id)
        if panel is None and run is not None and isinstance(block, ToolBlock):
            card = self._view_for(block)
            assert isinstance(card, ToolCard)
            schedule, interval, clock = self._child_args
            child = TranscriptView(
                schedule,
                child_decide(self.on_decide, self.on_abort),
                on_stop=child_stop(run.agent_id, self.on_stop),
                on_abort=self.on_abort,
                interval=interval,
                clock=clock,
            )
            child.state.nested, child.state.prompt = True, run.prompt  # (its later messages)
            panel = self.agents[run.agent_id] = AgentPanel(run, child)
            card.agents.children = (*card.agents.children, panel.root)
        if isinstance(event, AgentEvent) and panel is not None:
            panel.view(event.event)
        elif isinstance(event, AgentStatusChanged) and panel is not None and run is not None:
            panel.update(run)

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
            document = TranscriptDocument(self.state, self.show_after is not None)
            self.handle.update(document)
            if self.show_after is not None:
                for output in document.after:  # a card's figures below it, then the rest
                    self.show_after(output)
            self.close()  # only now: the cell shows the document, no longer these widgets

    def close(self) -> None:
        """Close every widget of the turn and let go of them: their comms, models and
        callbacks (which hold the approver and the controller) would otherwise stay in
        the kernel until it exits."""
        self.closed = True
        self.throttle.cancel()
        for panel in self.agents.values():
            panel.view.close()
        self.agents.clear()
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
                stop = None if self.on_stop is None else functools.partial(self.on_stop, ())
                view = self.cards[block.call_id] = ToolCard(block, self.on_decide, stop)
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
            f'<span style="color:#6e7781">{calls.usage_text(usage, self.state.context)}</span>'
            if usage is not None and done
            else ""
        )
