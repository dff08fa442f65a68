"""The approval cards and the live transcript, driven by a real session on a loopback
server; buttons are pressed with ``Button.click()`` (no kernel, no browser)."""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import io
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import ipywidgets as W
import pytest
from PIL import Image

from agent_magics import Session, SessionConfig
from agent_magics.jupyter.ui.approver import WidgetApprover, headless_approver
from agent_magics.jupyter.ui.cards import TextView, ToolCard, image_widget
from agent_magics.jupyter.ui.runner import turn_outcome
from agent_magics.jupyter.ui.throttle import loop_scheduler
from agent_magics.jupyter.ui.widgets import TranscriptView
from agent_magics.protocol.approval import ApprovalRequest, ReviewDecision, new_ticket
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.tools.unified_exec import manager_for
from agent_magics.transcript import card_text
from agent_magics.transcript import html as render
from agent_magics.transcript.model import TextBlock, ToolBlock

LABELS = ["Approve", "Approve for session", "Deny", "Abort turn"]


class Rig:
    """A session, its widget approver and transcript view on the running loop."""

    def __init__(self, tmp_path: Path, server: ScriptedResponsesServer, **settings: Any) -> None:
        loop = asyncio.get_running_loop()
        config = {
            "model": "m",
            "base_url": server.base_url,
            "cwd": tmp_path,
            "allow_login_shell": False,  # keep profile noise out of the outputs
        } | settings
        self.session = Session(SessionConfig(**config))
        self.approver = WidgetApprover(loop)
        self.view = TranscriptView(
            loop_scheduler(loop),
            self.approver.decide,
            on_stop=lambda agents, call_id: self.session.stop_call(call_id),
        )
        self.session.subscribe(self.view)
        self.session.approver = self.approver
        self.stopped = 0

    def start(self, prompt: str = "go") -> asyncio.Task[None]:
        return asyncio.get_running_loop().create_task(self._turn(prompt))

    async def _turn(self, prompt: str) -> None:
        with turn_outcome(self.view, self.stop):
            await self.session.run_turn(prompt)

    def stop(self) -> None:
        self.stopped += 1
        self.session.kill_processes()

    async def card_asking(self, call_id: str) -> ToolCard:
        await until(lambda: any(r.call_id == call_id for r in self.approver.waiting))
        return self.view.cards[call_id]


async def until(predicate: Callable[[], bool], timeout: float = 20.0) -> None:
    async with asyncio.timeout(timeout):
        while not predicate():
            await asyncio.sleep(0.01)


def exec_call(call_id: str, cmd: str) -> dict[str, Any]:
    return function_call("exec_command", {"cmd": cmd}, call_id)


@pytest.fixture
async def rig_factory(tmp_path: Path) -> AsyncIterator[Callable[..., Rig]]:
    rigs: list[Rig] = []
    servers: list[ScriptedResponsesServer] = []

    def make(script: list[Any], **settings: Any) -> Rig:
        server = ScriptedResponsesServer(script).start()
        servers.append(server)
        rig = Rig(tmp_path, server, **settings)
        rig.server = server  # type: ignore[attr-defined]
        rigs.append(rig)
        return rig

    yield make
    for rig in rigs:
        await rig.session.aclose()
    for server in servers:
        server.stop()


MARK = "echo ran > marker.txt; echo ran-it"


async def test_approve_runs_the_command(tmp_path: Path, rig_factory: Callable[..., Rig]) -> None:
    rig = rig_factory([[exec_call("c1", MARK)], [message("ok")]], approval_policy="untrusted")
    task = rig.start()
    card = await rig.card_asking("c1")
    assert [b.description for b in card.button_row.children] == LABELS
    assert rig.view.status.value == render.turn_status_html(rig.view.state)
    assert "Waiting for your approval." in rig.view.status.value
    card.buttons["Approve"].click()
    assert all(b.disabled for b in card.buttons.values())
    await task
    assert (tmp_path / "marker.txt").read_text() == "ran\n"
    assert "ran-it" in rig.server.outputs(1)["c1"]  # type: ignore[attr-defined]
    assert card.button_row.children == ()  # the decision, not faded buttons
    assert card.decision.value == (
        '<div style="color:#1a7f37;font-weight:600">✔ Approved by you</div>'
    )
    assert card.header.value.startswith(  # the command shows once, in the body
        '<b>exec_command</b> · <span style="color:#1a7f37;font-weight:600">done</span> <span'
    )
    assert card.arguments.value.count("echo ran-it") == 1
    assert card.output.selected_index is None  # collapsed until opened
    assert card.output.get_title(0) == "Output (1 line, exit code 0)"
    assert card.output_body.value == render.output_html("ran-it")
    assert (
        rig.view.status.value == f'<span class="{render.DONE_CLASS}"></span>'
    )  # the answer says it
    assert rig.view.footer.value.endswith("Tokens: 20 in · 10 out · 30 total</span>")


async def test_deny_does_not_run_it(tmp_path: Path, rig_factory: Callable[..., Rig]) -> None:
    rig = rig_factory([[exec_call("c1", MARK)], [message("ok")]], approval_policy="untrusted")
    task = rig.start()
    card = await rig.card_asking("c1")
    card.buttons["Deny"].click()
    await task
    assert not (tmp_path / "marker.txt").exists()
    assert "exec command rejected by user" in rig.server.outputs(1)["c1"]  # type: ignore[attr-defined]
    assert rig.view.state.tools[0].status == "denied"
    assert card.button_row.children == ()
    assert card.decision.value == (
        '<div style="color:#cf222e;font-weight:600">✘ Denied by you</div>'
        '<div style="color:#6e7781"><i>Not run: you denied it, and the model was told so.</i></div>'
    )
    assert card.output.layout.display == "none"  # not Codex's "rejected by user"


async def test_approve_for_session_is_not_asked_again(
    tmp_path: Path, rig_factory: Callable[..., Rig]
) -> None:
    script = [[exec_call("c1", MARK)], [exec_call("c2", MARK)], [message("ok")]]
    rig = rig_factory(script, approval_policy="untrusted")
    task = rig.start()
    card = await rig.card_asking("c1")
    card.buttons["Approve for session"].click()
    await task
    second = rig.view.cards["c2"]
    assert not second.buttons  # no question, so no buttons were ever made
    assert second.header.value.endswith(" s)</span>") and "done</span>" in second.header.value
    assert "Allowed: approved earlier for this session" in second.decision.value
    assert "Approved for this session by you" in rig.view.cards["c1"].decision.value
    assert "ran-it" in rig.server.outputs(2)["c2"]  # type: ignore[attr-defined]


async def test_abort_turn_stops_the_turn(tmp_path: Path, rig_factory: Callable[..., Rig]) -> None:
    rig = rig_factory([[exec_call("c1", MARK)], [message("ok")]], approval_policy="untrusted")
    task = rig.start()
    card = await rig.card_asking("c1")
    card.buttons["Abort turn"].click()
    await task
    assert rig.stopped == 1
    assert len(rig.server.requests) == 1  # type: ignore[attr-defined]
    assert rig.view.state.tools[0].status == "aborted"
    assert "Turn aborted." in rig.view.status.value
    assert not (tmp_path / "marker.txt").exists()


async def test_a_click_from_another_thread_wakes_the_loop(
    tmp_path: Path, rig_factory: Callable[..., Rig]
) -> None:
    rig = rig_factory([[exec_call("c1", MARK)], [message("ok")]], approval_policy="untrusted")
    task = rig.start()
    card = await rig.card_asking("c1")
    await asyncio.to_thread(card.buttons["Approve"].click)
    await task
    assert (tmp_path / "marker.txt").exists()


async def test_second_clicks_and_stale_decisions_are_ignored() -> None:
    approver = WidgetApprover(asyncio.get_running_loop())
    approver.decide("nobody-asked", ReviewDecision.APPROVED)
    await asyncio.sleep(0)
    assert approver.waiting == []
    decisions: list[tuple[str, ReviewDecision]] = []
    request = ApprovalRequest("c1", "exec_command", "exec", Path("."), ticket=new_ticket())
    block = ToolBlock("c1", "exec_command", "{}", status="waiting", request=request)
    card = ToolCard(block, lambda *d: decisions.append(d))
    card.update(block)
    card.buttons["Deny"].click()
    card.buttons["Approve"].click()
    assert decisions == [(request.ticket, ReviewDecision.DENIED)]  # by ticket, not call id


async def test_a_question_never_takes_the_place_of_one_that_waits(tmp_path: Path) -> None:
    """Two questions of one call id wait side by side, each answered by its own ticket;
    a question with no ticket, or the ticket of one that waits, is refused (a bug)."""
    approver = WidgetApprover(asyncio.get_running_loop())
    first = ApprovalRequest("call_1", "exec_command", "exec", tmp_path, ticket=new_ticket())
    second = dataclasses.replace(first, agents=("helper",), ticket=new_ticket())
    asks = [asyncio.ensure_future(approver(first)), asyncio.ensure_future(approver(second))]
    await until(lambda: len(approver.waiting) == 2)
    with pytest.raises(ValueError):
        await approver(dataclasses.replace(first, command=("touch", "x")))
    with pytest.raises(ValueError):
        await approver(dataclasses.replace(first, ticket=""))
    approver.decide(second.ticket, ReviewDecision.APPROVED)
    assert await asks[1] is ReviewDecision.APPROVED
    assert approver.waiting == [first] and not asks[0].done()
    approver.decide(first.ticket, ReviewDecision.DENIED)
    assert await asks[0] is ReviewDecision.DENIED


def test_a_card_answers_the_question_it_shows_now(tmp_path: Path) -> None:
    """A call asked twice (a sandbox denial's retry): the card's buttons answer the
    second question's ticket once it shows."""
    decisions: list[tuple[str, ReviewDecision]] = []
    first = ApprovalRequest("c1", "exec_command", "exec", tmp_path, ticket=new_ticket())
    block = ToolBlock("c1", "exec_command", "{}", status="waiting", request=first)
    card = ToolCard(block, lambda *d: decisions.append(d))
    card.update(block)
    card.buttons["Approve"].click()
    retry = dataclasses.replace(first, retry_without_sandbox=True, ticket=new_ticket())
    block.request = retry
    card.update(block)
    card.buttons["Deny"].click()
    assert decisions == [
        (first.ticket, ReviewDecision.APPROVED),
        (retry.ticket, ReviewDecision.DENIED),
    ]


def test_always_ask_tools_get_no_approve_for_session_button() -> None:
    request = ApprovalRequest("c1", "mcp__s__t", "mcp", Path("."), remember_allowed=False)
    block = ToolBlock("c1", "mcp__s__t", "{}", status="waiting", request=request)
    card = ToolCard(block, lambda *d: None)
    card.update(block)
    assert [b.description for b in card.button_row.children] == ["Approve", "Deny", "Abort turn"]
    remembered = ApprovalRequest("c2", "mcp__s__t", "mcp", Path("."))
    block = ToolBlock("c2", "mcp__s__t", "{}", status="waiting", request=remembered)
    card = ToolCard(block, lambda *d: None)
    card.update(block)
    assert [b.description for b in card.button_row.children] == LABELS


async def test_plan_image_and_streamed_text(
    tmp_path: Path, rig_factory: Callable[..., Rig]
) -> None:
    buf = io.BytesIO()
    Image.new("RGB", (3, 2), "red").save(buf, "PNG")
    (tmp_path / "dot.png").write_bytes(buf.getvalue())
    plan = {
        "plan": [
            {"step": "look", "status": "completed"},
            {"step": "fix", "status": "in_progress"},
        ]
    }
    script = [
        [function_call("update_plan", plan, "p1")],
        [function_call("view_image", {"path": "dot.png"}, "v1")],
        [message("All **done** here.")],
    ]
    rig = rig_factory(script)
    await rig.start()
    plan_card = rig.view.cards["p1"]
    assert plan_card.extra.children[0].value == (
        '<ul style="list-style:none;padding-left:0;margin:2px 0">'
        "<li>✔ <s>look</s></li><li>▶ <b>fix</b></li></ul>"
    )
    assert plan_card.output.layout.display == "none"
    image = rig.view.cards["v1"].extra.children[0]
    assert isinstance(image, W.Image) and image.format == "png"
    assert Image.open(io.BytesIO(image.value)).size == (3, 2)
    text_views = [c for c in rig.view.body.children if isinstance(c, W.Output)]
    assert text_views[-1].outputs[0]["data"]["text/markdown"] == "All **done** here."


async def test_the_goal_shows_in_its_card_as_the_plan_does(
    rig_factory: Callable[..., Rig],
) -> None:
    script = [
        [function_call("create_goal", {"objective": "ship <it>", "token_budget": 1000}, "g1")],
        [function_call("update_goal", {"status": "paused"}, "g2")],
        [message("Paused.")],
    ]
    rig = rig_factory(script)
    await rig.start()
    made = rig.view.cards["g1"].extra.children[0].value
    assert made == "<div>🎯 <b>Goal</b> (active): ship &lt;it&gt; · 0 of 1,000 tokens · 0s</div>"
    paused = rig.view.cards["g2"].extra.children[0].value
    assert paused == "<div>🎯 <b>Goal</b> (paused): ship &lt;it&gt; · 15 of 1,000 tokens · 0s</div>"


async def test_a_problem_to_fix_is_one_sentence(rig_factory: Callable[..., Rig]) -> None:
    rig = rig_factory([])
    rig.session.config = rig.session.config.replace(
        base_url="http://127.0.0.1:9/v1", request_max_retries=0, stream_max_retries=0
    )
    await rig.start()
    assert rig.view.state.status == "failed"
    assert rig.view.status.value == (
        '<span style="color:#cf222e">Could not reach the model server at '
        "http://127.0.0.1:9/v1 (ConnectError); check --base-url and that the server runs."
        "</span>"
    )


async def test_headless_policy_answers_without_a_person() -> None:
    request = ApprovalRequest("c", "exec_command", "exec", Path("/w"))
    assert await headless_approver("deny")(request) is ReviewDecision.DENIED
    assert await headless_approver("approve")(request) is ReviewDecision.APPROVED


def test_image_widget_needs_a_base64_image_url() -> None:
    png = base64.b64encode(b"\x89PNG").decode()
    image = image_widget(f"data:image/png;base64,{png}")
    assert image is not None and image.value == b"\x89PNG"
    assert image_widget("https://example.invalid/a.png") is None
    assert image_widget("data:image/png;base64,@@@") is None


def test_text_view_hands_markdown_to_the_front_end() -> None:
    view = TextView()
    view.update(TextBlock("# hi"))
    assert view.root.outputs == (
        {
            "output_type": "display_data",
            "data": {"text/markdown": "# hi", "text/plain": "# hi"},
            "metadata": {},
        },
    )


def test_saved_notebooks_show_a_short_plain_fallback() -> None:
    view = TranscriptView(lambda delay, fn: None)  # type: ignore[arg-type,return-value]
    bundle = view.root._repr_mimebundle_()
    assert bundle["text/plain"].startswith("agent transcript")
    assert json.loads(json.dumps(bundle["application/vnd.jupyter.widget-view+json"]))


def cmdline(pid: int) -> str:
    return Path(f"/proc/{pid}/cmdline").read_text()


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of the process group ``pgid``."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


async def test_stop_ends_that_command_and_the_turn_goes_on(
    tmp_path: Path, rig_factory: Callable[..., Rig]
) -> None:
    wait_for_go = "while [ ! -e go ]; do sleep 0.05; done; echo other-done"
    script = [
        [
            exec_call("c1", "echo one; echo two; echo started; sleep 30"),
            exec_call("c2", wait_for_go),
        ],
        [message("ok")],
    ]
    rig = rig_factory(script, approval_policy="never", sandbox_mode="danger-full-access")
    task = rig.start()
    await until(lambda: "c1" in rig.view.cards and "started" in rig.view.cards["c1"].live.value)
    card = rig.view.cards["c1"]
    assert card.live.value.endswith("one\ntwo\nstarted</pre>")
    assert card.stop_row.children == (card.stop_button,)
    assert card.output.layout.display == "none"  # the output box waits for the end
    manager = manager_for(rig.session.services)

    def running() -> list[int]:
        return [p.pid for sid in manager.session_ids if (p := manager.process_of(sid))]

    await until(lambda: len(running()) == 2)  # the two calls start side by side
    pids = running()
    assert all(group_members(pid) for pid in pids)
    sleeper, other = sorted(pids, key=lambda pid: "other-done" in cmdline(pid))
    card.stop_button.click()
    assert card.stop_button.disabled and card.stop_button.description == "Stopping…"
    await until(lambda: rig.view.state.tools[0].status == "stopped")
    # sleep 30 and its shell are gone (killed; on a loaded machine the kernel may take a
    # moment to end a process after the signal, so wait for it, within the bound)
    await until(lambda: group_members(sleeper) == [])
    assert rig.view.state.tools[1].status == "running"  # the other command goes on
    assert group_members(other)
    (tmp_path / "go").touch()
    await task
    outputs = rig.server.outputs(1)  # type: ignore[attr-defined]
    assert outputs["c1"].startswith("aborted by user after ")
    assert "other-done" in outputs["c2"] and "Process exited with code 0" in outputs["c2"]
    assert render.DONE_CLASS in rig.view.status.value
    assert 'font-weight:600">stopped</span> <span' in card.header.value  # then its run time
    assert card.live.value == "" and card.stop_row.children == ()
    assert card.output.get_title(0) == "Output (3 lines)"
    assert card.output_body.value == render.output_html("one\ntwo\nstarted")


async def test_a_failed_command_opens_its_output(
    tmp_path: Path, rig_factory: Callable[..., Rig]
) -> None:
    script = [[exec_call("c1", "echo boom; exit 3"), exec_call("c2", "echo fine")], [message("ok")]]
    rig = rig_factory(script, approval_policy="never", sandbox_mode="danger-full-access")
    await rig.start()
    failed, fine = rig.view.cards["c1"], rig.view.cards["c2"]
    assert failed.output.get_title(0) == "Output (1 line, exit code 3)"
    assert failed.output.selected_index == 0
    assert fine.output.selected_index is None
    assert failed.decision.value == ""  # nobody was asked
    assert failed.stop_row.children == ()


def test_the_live_tail_is_the_last_lines() -> None:
    text = "".join(f"line {n}\n" for n in range(1, 21))
    assert card_text.live_tail(text) == "\n".join(f"line {n}" for n in range(16, 21))
    long = card_text.live_tail("x" * 5000)
    assert long == "…" + "x" * (card_text.LIVE_TAIL_CHARS - 1)
    assert card_text.live_html("\n") == ""
