"""Sub-agents in a real kernel (issue 25's Must show): a parent spawns two children whose
commands need approval; each is approved through that child's own card (a click on the
button the kernel's widgets sent, as a browser sends it); wait_agent hands the parent
both final answers; a child that tries to spawn past the depth limit gets Codex's words;
the saved cell shows the children nested; after a restart, ``%agent resume last`` sends
the parent's history with the children's results. A second test: Abort on the parent's
card ends the turn, both children and their processes. The model is scripted per
conversation on 127.0.0.1 (:mod:`tests.helpers.agents`)."""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from agent_magics.testing import ConversationsServer, function_call, message
from tests.helpers.agents import (
    TASK_A,
    TASK_B,
    Decide,
    agent_call,
    deciding,
    outputs,
    spawned_ids,
    touch,
)
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell

pytestmark = pytest.mark.slow

PARENT = "Ask two helpers to write their files."
DEPTH_REFUSAL = "unsupported call: multi_agent_v1spawn_agent"
"""What Codex 0.171.0 answers a child that calls spawn_agent at the default depth limit:
the tool is not offered to it (tests/conformance/extra-0.171/multi_agent/FACTS.md)."""


def waiting_parent(task_a: str, task_b: str) -> Decide:
    """A parent that spawns two children, then waits until both answered (a wait returns
    as soon as one is final)."""

    def parent(body: dict[str, Any]) -> list[dict[str, Any]]:
        said = outputs(body)
        if "s1" not in said:
            return [
                agent_call("spawn_agent", {"message": task_a}, "s1"),
                agent_call("spawn_agent", {"message": task_b}, "s2"),
            ]
        ids = spawned_ids(body, "s1", "s2")
        waits = [v for k, v in said.items() if k.startswith("w")]
        if len(ids) == 2 and all(any(f'"{i}":{{"completed"' in w for w in waits) for i in ids):
            return [message("Both helpers are done.")]
        return [agent_call("wait_agent", {"targets": ids}, f"w{len(waits) + 1}")]

    return parent


def saved_html(kernel: Kernel, cell: str) -> str:
    return "".join(str(o.get("data", {}).get("text/html", "")) for o in kernel.saved_outputs(cell))


def panel_titles(kernel: Kernel) -> list[str]:
    """The titles of the open accordions of the live cell (the sub-agents' panels)."""
    return [
        str(title)
        for state in kernel.states.values()
        if state.get("_model_name") == "AccordionModel" and state.get("selected_index") == 0
        for title in state.get("titles", ())
        if str(title).startswith("sub-agent ")
    ]


def finished(kernel: Kernel, cell: str, timeout: float = 120) -> str:
    """Wait until the cell's turn ended (on ipykernel 6 the cell returns while its turn
    runs on) and its saved transcript replaced the widgets; that transcript's HTML."""
    drawn = "agent-magics-transcript"
    kernel.wait_for(lambda: kernel.idle(cell) and drawn in saved_html(kernel, cell), timeout)
    return saved_html(kernel, cell)


def test_two_children_approved_through_their_own_cards(kernel: Kernel) -> None:
    scripts: dict[str, Any] = {
        PARENT: deciding(waiting_parent(TASK_A, TASK_B)),
        TASK_A: [[touch("a.txt")], [message("A wrote a.txt")]],
        TASK_B: [
            [agent_call("spawn_agent", {"message": "go deeper"}, "g1"), touch("b.txt")],
            [message("B wrote b.txt")],
        ],
        "What did the helpers say?": [[message("They said so.")]],
    }
    a, b = kernel.ws / "a.txt", kernel.ws / "b.txt"
    with ConversationsServer(scripts) as server:
        cell = kernel.execute(agent_cell(server.base_url, "-a untrusted", PARENT))
        kernel.wait_for(lambda: len(kernel.buttons("Approve")) == 2, 120)
        first, second = kernel.buttons("Approve")
        headers = panel_titles(kernel)  # each child's panel, open, in the live cell
        tails = sorted(h.split(" · ", 1)[1] for h in headers)
        assert tails == [f"running · {TASK_A}", f"running · {TASK_B}"]
        kernel.click(first)
        kernel.wait_for(lambda: a.exists() or b.exists(), 60)
        kernel.pump(0.5)
        assert a.exists() != b.exists()  # one child's card answered its own question only
        kernel.click(second)
        kernel.wait_for(lambda: a.exists() and b.exists(), 60)
        html = finished(kernel, cell)  # what the notebook keeps: children nested
        assert TURN_DONE in html

        last = server.by_conversation[PARENT][-1]
        waited = " ".join(v for k, v in outputs(last).items() if k.startswith("w"))
        assert '{"completed":"A wrote a.txt"}' in waited
        assert '{"completed":"B wrote b.txt"}' in waited
        assert outputs(server.by_conversation[TASK_B][1])["g1"] == DEPTH_REFUSAL

        assert html.count('class="agent-magics-subagent"') == 2
        assert "completed · Write a.txt in the workspace." in html
        assert "completed · Write b.txt in the workspace." in html
        assert html.index("spawn_agent") < html.index("sub-agent")

        kernel.km.restart_kernel(now=True)
        kernel.kc.wait_for_ready(timeout=60)
        kernel.run("%load_ext agent_magics")
        out = kernel.outputs_text(kernel.run("%agent resume last"))
        assert "agent: Resuming session" in out, out
        kernel.run(agent_cell(server.base_url, "-a untrusted", "What did the helpers say?"))
        kernel.wait_for(lambda: server.by_conversation["What did the helpers say?"], 60)
        resumed = json.dumps(server.by_conversation["What did the helpers say?"][0]["input"])
    assert PARENT in resumed
    assert "A wrote a.txt" in resumed and "B wrote b.txt" in resumed


def running(marker: str) -> set[str]:
    """The words holding ``marker`` in the command lines of the live processes (a
    sandboxed command shows in its sandbox's and in its shell's)."""
    found = set()
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                line = (proc / "cmdline").read_bytes().decode(errors="replace")
            except OSError:
                continue
            found |= {w for w in line.replace("\0", " ").split() if marker in w}
    return found


def sleeper(marker: str) -> list[list[dict[str, Any]]]:
    """A child's script: a command that runs a minute (``marker`` in its command line)."""
    cmd = f"sleep 60; echo {marker}"
    return [[function_call("exec_command", {"cmd": cmd, "yield_time_ms": 30000}, "call_1")]]


ESCALATED = {
    "cmd": "touch asked.txt",
    "sandbox_permissions": "require_escalated",
    "justification": "a file outside the sandbox's reach",
}


@pytest.mark.parametrize("way", ["abort-on-parent-card", "abort-on-child-card", "stop-button"])
def test_a_stop_ends_the_turn_both_children_and_their_processes(kernel: Kernel, way: str) -> None:
    """Abort on the parent's card, Abort on a child's card, the kernel's stop button:
    each ends the turn, both children and their commands."""
    marker = f"agent-sub-{uuid.uuid4().hex[:8]}"
    a, b = f"{marker}-a", f"{marker}-b"
    waiting = waiting_parent("sleep a", "sleep b")

    def boss(body: dict[str, Any]) -> list[dict[str, Any]]:
        if "s1" not in outputs(body) or way != "abort-on-parent-card":
            return waiting(body)
        return [function_call("exec_command", ESCALATED, "p1")]  # asks: the parent's card

    scripts: dict[str, Any] = {"Start two sleepers.": deciding(boss), "sleep a": sleeper(a)}
    if way == "abort-on-child-card":  # b asks; a's command runs on
        scripts["sleep b"] = [[function_call("exec_command", ESCALATED, "call_1")]]
        started = {a}
    else:
        scripts["sleep b"] = sleeper(b)
        started = {a, b}
    with ConversationsServer(scripts) as server:
        cell = kernel.execute(agent_cell(server.base_url, "-a on-request", "Start two sleepers."))
        asks = way != "stop-button"
        kernel.wait_for(
            lambda: started <= running(marker) and (not asks or shown(kernel, "Abort turn")), 120
        )
        if asks:
            [abort] = shown(kernel, "Abort turn")  # the one card that asks
            kernel.click(abort)
        else:
            kernel.km.interrupt_kernel()
        html = finished(kernel, cell, 60)
        kernel.wait_for(lambda: not running(marker), 30)
        assert not (kernel.ws / "asked.txt").exists()
        assert html.count('class="agent-magics-subagent"') == 2
        assert "running ·" not in html  # no child is shown as still at work
        assert len(server.by_conversation["sleep a"]) == 1  # nobody went on after the stop
        assert len(server.by_conversation["sleep b"]) == 1


def shown(kernel: Kernel, label: str) -> list[str]:
    """The buttons with this label that a box shows now (every card makes its Stop button
    at once, and shows it only while its command runs)."""
    held = {
        str(child) for state in kernel.states.values() for child in state.get("children", ()) or ()
    }
    return [b for b in kernel.buttons(label) if f"IPY_MODEL_{b}" in held]


def test_stop_on_a_childs_card_stops_that_childs_command_only(kernel: Kernel) -> None:
    marker = f"agent-sub-{uuid.uuid4().hex[:8]}"
    a, b = f"{marker}-a", f"{marker}-b"
    scripts: dict[str, Any] = {"Two sleepers.": deciding(waiting_parent("sleep a", "sleep b"))}
    scripts |= {"sleep a": sleeper(a), "sleep b": sleeper(b)}
    with ConversationsServer(scripts) as server:
        cell = kernel.execute(agent_cell(server.base_url, "-a on-request", "Two sleepers."))
        kernel.wait_for(lambda: {a, b} <= running(marker) and len(shown(kernel, "Stop")) == 2, 120)
        first, second = shown(kernel, "Stop")
        kernel.click(first)
        kernel.wait_for(lambda: len(running(marker)) == 1, 30)
        [left] = running(marker)  # the other child's command still runs
        kernel.click(second)
        kernel.wait_for(lambda: not running(marker), 30)
        assert TURN_DONE in finished(kernel, cell)
        said = [outputs(server.by_conversation[t][1])["call_1"] for t in ("sleep a", "sleep b")]
    assert left in (a, b)
    assert all("aborted by user" in text for text in said), said  # Codex's words, each child


def test_stop_on_a_childs_card_never_stops_the_parents_call_named_after_it(
    kernel: Kernel,
) -> None:
    """The parent names its own command after the child's (``<child id>/call_1``, what a
    child's call was once keyed by): Stop on the child's card stops the child's command,
    and the parent's runs to its end."""
    marker = f"agent-sub-{uuid.uuid4().hex[:8]}"
    child_cmd, parent_cmd = f"{marker}-child", f"{marker}-parent"
    child_running = threading.Event()

    def parent(body: dict[str, Any]) -> list[dict[str, Any]]:
        said = outputs(body)
        if "s1" not in said:
            return [agent_call("spawn_agent", {"message": "sleep a"}, "s1")]
        (child,) = spawned_ids(body, "s1")
        aimed = f"{child}/call_1"
        if aimed not in said:
            child_running.wait(60)  # the parent's card comes after the child's
            cmd = f"sleep 3; echo {parent_cmd}"
            return [function_call("exec_command", {"cmd": cmd, "yield_time_ms": 30000}, aimed)]
        if "w1" not in said:
            return [agent_call("wait_agent", {"targets": [child]}, "w1")]
        return [message("Done.")]

    scripts: dict[str, Any] = {"One sleeper.": deciding(parent), "sleep a": sleeper(child_cmd)}
    with ConversationsServer(scripts) as server:
        cell = kernel.execute(agent_cell(server.base_url, "-a on-request", "One sleeper."))
        kernel.wait_for(lambda: child_cmd in running(marker), 120)
        child_running.set()
        kernel.wait_for(lambda: len(running(marker)) == 2 and len(shown(kernel, "Stop")) == 2, 60)
        child_stop, _parent_stop = shown(kernel, "Stop")  # the child's card was made first
        kernel.click(child_stop)
        kernel.wait_for(lambda: child_cmd not in running(marker), 30)
        assert parent_cmd in running(marker)  # the parent's command still runs
        assert TURN_DONE in finished(kernel, cell)
        said = outputs(server.by_conversation["One sleeper."][-1])
        child_said = outputs(server.by_conversation["sleep a"][1])["call_1"]
    aimed = next(k for k in said if k.endswith("/call_1"))
    assert "aborted by user" in child_said
    assert parent_cmd in said[aimed] and "aborted" not in said[aimed]
