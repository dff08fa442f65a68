"""Sub-agents in the live transcript: a child's panel sits in the card of the spawn_agent
call that started it, its cards answer its own question only (by its ticket, through the
one WidgetApprover of the cell), grandchildren nest, the header follows the status, and
the saved document nests them the same way. The events are the contract's
(agent_magics/events.py), fed to the real view on the running loop; buttons are pressed
with ``Button.click()``."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import ipywidgets as W
from ipywidgets.widgets.widget import _instances  # what Widget.widgets shows, not deprecated

from agent_magics.events import (
    AgentEvent,
    AgentSpawned,
    AgentStatusChanged,
    ApprovalDecided,
    ApprovalRequested,
    AssistantMessage,
    Event,
    ToolCallFinished,
    ToolCallProposed,
    TurnAbortedEvent,
    TurnFinished,
    TurnStarted,
)
from agent_magics.jupyter.ui.agents import AgentPanel
from agent_magics.jupyter.ui.approver import WidgetApprover
from agent_magics.jupyter.ui.throttle import loop_scheduler
from agent_magics.jupyter.ui.widgets import TranscriptView
from agent_magics.protocol.approval import ApprovalRequest, ReviewDecision, new_ticket
from agent_magics.transcript.static_html import TranscriptDocument, settle


async def until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)


def spawn(call_id: str, task: str) -> ToolCallProposed:
    return ToolCallProposed(call_id, "spawn_agent", json.dumps({"message": task}))


def child_asks(
    agent_id: str, call_id: str, cmd: str, cwd: Path
) -> tuple[list[Event], ApprovalRequest]:
    """What a child emits when its command needs a person (its own plain call id, the
    question's ticket), and the question as the parent's approver gets it (the child's
    path added by the forwarding session)."""
    args = json.dumps({"cmd": cmd})
    command = ("bash", "-c", cmd)
    request = ApprovalRequest(
        call_id, "exec_command", "exec", cwd, command=command, ticket=new_ticket()
    )
    events: list[Event] = [
        AgentEvent(agent_id, TurnStarted(f"task of {agent_id}")),
        AgentEvent(agent_id, ToolCallProposed(call_id, "exec_command", args)),
        AgentEvent(agent_id, ApprovalRequested(request)),
    ]
    return events, dataclasses.replace(request, agents=(agent_id,))


def panel_of(view: TranscriptView, agent_id: str) -> AgentPanel:
    return view.agents[agent_id]


async def test_each_childs_card_answers_its_own_question(tmp_path: Path) -> None:
    loop = asyncio.get_running_loop()
    approver = WidgetApprover(loop)
    view = TranscriptView(loop_scheduler(loop), approver.decide)
    aborted: list[int] = []
    view.on_abort = lambda: aborted.append(1)
    for event in (
        TurnStarted("two helpers"),
        spawn("call_1", "Write a.txt\nthen say done"),
        AgentSpawned("call_1", "agent-a", "Ada", 1, "Write a.txt\nthen say done"),
        AgentStatusChanged("agent-a", "running"),
        spawn("call_2", "Write b.txt"),
        AgentSpawned("call_2", "agent-b", "Bo", 1, "Write b.txt"),
        AgentStatusChanged("agent-b", "running"),
    ):
        view(event)
    # both children ask under the same plain call id, as models do
    asks = {}
    for agent in ("agent-a", "agent-b"):
        events, request = child_asks(agent, "call_1", f"touch /tmp/{agent}", tmp_path)
        for asked in events:
            view(asked)
        asks[agent] = loop.create_task(approver(request))
    await until(lambda: len(approver.waiting) == 2)

    # each panel sits in its spawn card, open, titled with name, status and first line
    a, b = panel_of(view, "agent-a"), panel_of(view, "agent-b")
    assert view.cards["call_1"].agents.children == (a.root,)
    assert view.cards["call_2"].agents.children == (b.root,)
    assert a.root.selected_index == 0
    assert a.root.get_title(0) == "sub-agent Ada · running · Write a.txt"
    assert view.state.status == "waiting"  # a child's question: the turn waits for you

    a_card, b_card = a.view.cards["call_1"], b.view.cards["call_1"]
    assert "touch /tmp/agent-b" in b_card.arguments.value
    assert [btn.description for btn in b_card.buttons.values()][:3] == [
        "Approve",
        "Approve for session",
        "Deny",
    ]
    b_card.buttons["Approve"].click()
    assert await asyncio.wait_for(asks["agent-b"], 10) is ReviewDecision.APPROVED
    assert [(r.agents, r.call_id) for r in approver.waiting] == [(("agent-a",), "call_1")]
    assert not asks["agent-a"].done()

    a_card.buttons["Deny"].click()
    assert await asyncio.wait_for(asks["agent-a"], 10) is ReviewDecision.DENIED
    assert aborted == []
    view(AgentEvent("agent-a", ApprovalDecided("call_1", ReviewDecision.DENIED)))
    view(AgentEvent("agent-b", ApprovalDecided("call_1", ReviewDecision.APPROVED)))
    view(AgentEvent("agent-b", ToolCallFinished("call_1", "exec_command", "ok", True, 0.1)))
    view(AgentEvent("agent-b", AssistantMessage("b.txt written")))
    view(AgentEvent("agent-b", TurnFinished("b.txt written")))
    view(AgentStatusChanged("agent-b", "completed", "b.txt written"))
    view(AgentStatusChanged("agent-a", "errored", "the model server failed"))
    assert b.root.get_title(0) == "sub-agent Bo · completed · Write b.txt"
    assert a.root.get_title(0) == "sub-agent Ada · errored · Write a.txt"
    assert "the model server failed" in a.ending.value
    assert b_card.decision.value and not b_card.button_row.children
    assert str(view.state.status) == "running"  # no question waits any more
    view.close()


async def test_abort_on_a_childs_card_ends_the_turn(tmp_path: Path) -> None:
    loop = asyncio.get_running_loop()
    approver = WidgetApprover(loop)
    aborted: list[int] = []
    view = TranscriptView(loop_scheduler(loop), approver.decide, on_abort=lambda: aborted.append(1))
    view(spawn("call_1", "x"))
    view(AgentSpawned("call_1", "agent-a", "Ada", 1, "x"))
    events, request = child_asks("agent-a", "call_9", "rm -rf /tmp/x", tmp_path)
    for event in events:
        view(event)
    ask = loop.create_task(approver(request))
    await until(lambda: bool(approver.waiting))
    view.agents["agent-a"].view.cards["call_9"].buttons["Abort turn"].click()
    assert await asyncio.wait_for(ask, 10) is ReviewDecision.ABORT
    assert aborted == [1]
    view.close()


async def test_grandchildren_nest_and_answer_their_own_question(tmp_path: Path) -> None:
    loop = asyncio.get_running_loop()
    approver = WidgetApprover(loop)
    view = TranscriptView(loop_scheduler(loop), approver.decide)
    view(spawn("call_1", "plan it"))
    view(AgentSpawned("call_1", "agent-a", "Ada", 1, "plan it"))
    view(AgentEvent("agent-a", spawn("call_1", "dig")))
    view(AgentEvent("agent-a", AgentSpawned("call_1", "agent-g", "Gus", 2, "dig")))
    events, request = child_asks("agent-g", "call_1", "ls /", tmp_path)
    for event in events:
        view(AgentEvent("agent-a", event))
    request = dataclasses.replace(request, agents=("agent-a", "agent-g"))
    ask = loop.create_task(approver(request))
    await until(lambda: bool(approver.waiting))
    child = view.agents["agent-a"]
    grandchild = child.view.agents["agent-g"]
    assert child.view.cards["call_1"].agents.children == (grandchild.root,)
    assert grandchild.root.get_title(0) == "sub-agent Gus · starting · dig"
    grandchild.view.cards["call_1"].buttons["Approve for session"].click()
    assert await asyncio.wait_for(ask, 10) is ReviewDecision.APPROVED_FOR_SESSION

    # the saved document nests them the same way (no widgets needed to read it)
    view(AgentEvent("agent-a", AgentEvent("agent-g", AssistantMessage("found **it**"))))
    view(AgentStatusChanged("agent-a", "completed", "done"))
    html = TranscriptDocument(view.state).html
    outer = html.index("sub-agent Ada · completed · plan it")
    inner = html.index("sub-agent Gus · starting · dig")
    assert outer < inner < html.index("<strong>it</strong>")
    assert html.count('<details open class="agent-magics-subagent">') == 2
    view.close()
    assert isinstance(child.root, W.Accordion) and child.view.closed


async def test_a_child_from_an_earlier_turn_still_shows(tmp_path: Path) -> None:
    """A child spawned in an earlier cell that goes on working: its events reach this
    cell's view, which shows it under its id (nothing of it is dropped)."""
    loop = asyncio.get_running_loop()
    view = TranscriptView(loop_scheduler(loop))
    view(TurnStarted("next question"))
    view(AgentEvent("agent-old", AssistantMessage("late news")))
    view(AgentStatusChanged("agent-old", "completed", "late news"))
    panel = view.agents["agent-old"]
    assert panel.root.get_title(0) == "sub-agent agent-old · completed"
    assert "late news" in TranscriptDocument(view.state).html
    view.close()


async def test_a_stopped_turn_shows_its_children_shut_down() -> None:
    """The session stops a stopped turn's children; their last status may come after the
    cell's document is drawn, so the document says it for them."""
    loop = asyncio.get_running_loop()
    view = TranscriptView(loop_scheduler(loop))
    view(TurnStarted("go"))
    view(spawn("call_1", "sleep"))
    view(AgentSpawned("call_1", "agent-a", "Ada", 1, "sleep"))
    view(AgentStatusChanged("agent-a", "running"))
    view(AgentEvent("agent-a", TurnStarted("sleep")))
    view(AgentEvent("agent-a", ToolCallProposed("call_1", "exec_command", '{"cmd":"sleep 60"}')))
    view(TurnAbortedEvent("interrupted"))  # the parent's stop
    settle(view.state)
    html = TranscriptDocument(view.state).html
    assert "sub-agent Ada · shut down · sleep" in html
    assert "running" not in html.split("sub-agent Ada", 1)[1]
    view.close()


async def test_closing_the_view_closes_every_childs_widgets(tmp_path: Path) -> None:
    """A finished turn's widgets are all closed, the children's and grandchildren's too
    (their cards, buttons and accordions would otherwise stay in the kernel)."""
    before = len(_instances)
    loop = asyncio.get_running_loop()
    view = TranscriptView(loop_scheduler(loop), WidgetApprover(loop).decide)
    view(spawn("call_1", "plan it"))
    view(AgentSpawned("call_1", "agent-a", "Ada", 1, "plan it"))
    view(AgentEvent("agent-a", spawn("call_1", "dig")))
    view(AgentEvent("agent-a", AgentSpawned("call_1", "agent-g", "Gus", 2, "dig")))
    for event in child_asks("agent-g", "call_1", "ls /", tmp_path)[0]:
        view(AgentEvent("agent-a", event))
    assert view.agents["agent-a"].view.agents["agent-g"].view.cards["call_1"].buttons
    assert len(_instances) > before
    view.close()
    assert len(_instances) == before


def widget_texts(widget: W.Widget) -> str:
    """Every text a widget and those inside it show."""
    own = getattr(widget, "value", "")
    inner = getattr(widget, "children", ())
    return "\n".join([own if isinstance(own, str) else "", *map(widget_texts, inner)])


async def test_a_message_sent_to_a_child_shows_in_its_panel() -> None:
    """A child's later turn (a message send_input gave it) starts with that message in
    its panel, before what it answered; its first turn (its task) adds nothing."""
    loop = asyncio.get_running_loop()
    view = TranscriptView(loop_scheduler(loop))
    view(TurnStarted("go"))
    view(spawn("call_1", "count"))
    view(AgentSpawned("call_1", "agent-a", "Ada", 1, "count"))
    for event in (
        TurnStarted("count"),
        AssistantMessage("three"),
        TurnFinished("three"),
        TurnStarted("and the lines?"),
        AssistantMessage("nine lines"),
    ):
        view(AgentEvent("agent-a", event))
    panel = view.agents["agent-a"]
    panel.view.throttle.now()
    text = widget_texts(panel.root)
    assert text.count("Message sent to it") == 1, text
    assert "Message sent to it: and the lines?" in text
    drawn = [getattr(b, "text", "") for b in panel.view.state.blocks]
    assert drawn == ["three", "Message sent to it: and the lines?", "nine lines"]
    view.close()
