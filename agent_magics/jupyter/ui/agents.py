"""Sub-agents in the live transcript: each child a collapsible panel inside the card of
the ``spawn_agent`` call that started it, holding the child's own live transcript (its
messages and its tool cards with their buttons; a grandchild's panel inside that).

A child's card answers its own question only: a click answers the ticket of the question
the card shows (every question has its own, see ``ApprovalRequest.ticket``), and a Stop
names the child by its path of agent ids, never by a string a model could imitate (a
parent's call id may well read ``<child id>/call_1``). An Abort on a child's card ends the
whole turn, as on the parent's: ``on_abort`` stops the parent and every child.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as W

from agent_magics.jupyter.ui.cards import Decide
from agent_magics.protocol.approval import ReviewDecision
from agent_magics.transcript.agent_text import agent_header, ending_text
from agent_magics.transcript.blocks import AGENT_LIVE
from agent_magics.transcript.html import esc
from agent_magics.transcript.model import AgentRun

if TYPE_CHECKING:
    from agent_magics.agent.subagents import AgentSession

PANEL_LAYOUT = {"margin": "4px 0 2px 6px"}

AgentStop = Callable[[tuple[str, ...], str], object]
"""Stop the running call ``call_id`` of the agent at a path of agent ids (``()``: the
main agent; ``(child,)``: its child; ``(child, grandchild)``...)."""


def child_decide(decide: Decide | None, on_abort: Callable[[], object] | None) -> Decide | None:
    """The ``decide`` of a child's cards: the parent's (tickets are unique across the
    cell); an Abort also ends the parent's turn (the stop of the cell)."""
    if decide is None:
        return None

    def decide_for_child(ticket: str, decision: ReviewDecision) -> None:
        decide(ticket, decision)
        if decision is ReviewDecision.ABORT and on_abort is not None:
            on_abort()

    return decide_for_child


def child_stop(agent_id: str, stop: AgentStop | None) -> AgentStop | None:
    """The Stop of a child's cards: the parent's, one step further down the path."""
    if stop is None:
        return None
    return lambda path, call_id: stop((agent_id, *path), call_id)


def stop_call(session: AgentSession, path: tuple[str, ...], call_id: str) -> bool:
    """A card's Stop: the call ``call_id`` of the agent at ``path`` below ``session``
    (that agent's session stops it); False when no such call runs."""
    for agent_id in path:
        child = session.agents.control.open.get(agent_id)
        if child is None or child.session is None:
            return False
        session = child.session
    return session.stop_call(call_id)


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
