"""Sub-agents in the live transcript: each child a collapsible panel inside the card of
the ``spawn_agent`` call that started it, holding the child's own live transcript (its
messages and its tool cards with their buttons; a grandchild's panel inside that).

A child's card answers its own question only: its clicks and Stop reach the session
under the scoped id (:func:`~agent_magics.events.scoped_call_id`), the key under which
the child's question waits in the one approver of the cell. An Abort on a child's card
ends the whole turn, as on the parent's: ``on_abort`` stops the parent and every child.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as W

from agent_magics.events import scoped_call_id
from agent_magics.jupyter.ui.cards import Decide, Stop
from agent_magics.protocol.approval import ReviewDecision
from agent_magics.transcript.agent_text import agent_header, ending_text
from agent_magics.transcript.blocks import AGENT_LIVE, AgentRun
from agent_magics.transcript.html import esc

if TYPE_CHECKING:
    from agent_magics.agent.session import Session

PANEL_LAYOUT = {"margin": "4px 0 2px 6px"}


def scoped_decide(
    agent_id: str, decide: Decide | None, on_abort: Callable[[], object] | None
) -> Decide | None:
    """The ``decide`` of a child's cards: the parent's, under the child's scoped ids.
    An Abort also ends the parent's turn (the stop of the cell)."""
    if decide is None:
        return None

    def child_decide(call_id: str, decision: ReviewDecision) -> None:
        decide(scoped_call_id(agent_id, call_id), decision)
        if decision is ReviewDecision.ABORT and on_abort is not None:
            on_abort()

    return child_decide


def scoped_stop(agent_id: str, stop: Stop | None) -> Stop | None:
    """The Stop of a child's cards: the parent's, under the child's scoped ids."""
    if stop is None:
        return None
    return lambda call_id: stop(scoped_call_id(agent_id, call_id))


def stop_call(session: Session, call_id: str) -> bool:
    """A card's Stop, for the session's own call or, under a scoped id (``<agent id>/
    <call id>``, a grandchild's scoped twice), for a sub-agent's: that agent's session
    stops it. The session's own call is tried first (a model may put ``/`` in an id)."""
    if session.stop_call(call_id):
        return True
    agent_id, sep, rest = call_id.partition("/")
    child = session.agents.control.open.get(agent_id) if sep else None
    if child is None or child.session is None:
        return False
    return stop_call(child.session, rest)


class AgentPanel:
    """One child: an accordion titled with its name, status and task, open while it
    runs (a person may close it), its live transcript inside."""

    def __init__(self, run: AgentRun, view: Any) -> None:
        self.agent_id = run.agent_id
        self.view = view  # the child's TranscriptView (widgets.py makes it)
        self.ending = W.HTML()
        self.root = W.Accordion(
            children=[W.VBox([self.ending, view.root])],
            selected_index=0,
            layout=W.Layout(**PANEL_LAYOUT),
        )
        self.root.add_class("agent-magics-subagent")
        self.update(run)

    def update(self, run: AgentRun) -> None:
        self.root.set_title(0, agent_header(run))
        ending = ending_text(run)
        self.ending.value = f'<div style="color:#cf222e">{esc(ending)}</div>' if ending else ""
        if run.status not in AGENT_LIVE:
            self.view.throttle.now()  # its last lines drawn at once
