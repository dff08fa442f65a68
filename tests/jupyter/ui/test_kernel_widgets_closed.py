"""A finished turn's widgets are closed: once the static transcript has replaced them in
the cell, every widget of the turn (cards, buttons, their layouts and styles) is closed in
the kernel, so a long session does not keep about a hundred widgets a turn, with their
comms and callbacks, until the kernel exits. The front end hears of it only after the
document is in the cell, so the person's view never loses the turn."""

from __future__ import annotations

from typing import Any

import pytest

from agent_magics.testing import ScriptedResponsesServer, custom_tool_call, function_call, message
from tests.helpers.kernels import Kernel, agent_cell

pytestmark = pytest.mark.slow

TURNS = 3
OPEN_WIDGETS = "len(__import__('ipywidgets').Widget.widgets)"


def script(turns: int) -> list[Any]:
    steps: list[Any] = []
    for n in range(turns):
        patch = f"*** Begin Patch\n*** Add File: notes{n}.txt\n+turn {n}\n*** End Patch\n"
        steps.append([function_call("exec_command", {"cmd": f"echo {n} > out{n}.txt"}, f"c{n}")])
        steps.append([custom_tool_call("apply_patch", patch, f"p{n}")])
        steps.append([message(f"Turn {n}: out{n}.txt and notes{n}.txt are there.")])
    return steps


def transcript_shown(kernel: Kernel, msg_id: str) -> bool:
    return any("text/html" in o["data"] for o in kernel.saved_outputs(msg_id) if "data" in o)


def run_turn(kernel: Kernel, base_url: str, n: int) -> str:
    """One turn whose command and patch are approved by a click; its msg_id."""
    msg_id = kernel.execute(agent_cell(base_url, "-a untrusted", f"turn {n}"))
    clicked: set[str] = set()
    while not transcript_shown(kernel, msg_id):
        for button in kernel.buttons("Approve"):
            if button not in clicked and not kernel.states[button].get("disabled"):
                clicked.add(button)
                kernel.click(button)
        kernel.pump(0.05)
    assert len(clicked) >= 1  # a card was answered by a person
    kernel.wait_for(lambda: kernel.idle(msg_id), timeout=60)
    return msg_id


def test_a_finished_turns_widgets_are_closed(kernel: Kernel) -> None:
    kernel.run("import ipywidgets")
    before = kernel.value(OPEN_WIDGETS)
    with ScriptedResponsesServer(script(TURNS)) as server:
        for n in range(TURNS):
            msg_id = run_turn(kernel, server.base_url, n)
            kernel.wait_for(lambda: kernel.value(OPEN_WIDGETS) == before, timeout=30)
        assert len(server.requests) == 3 * TURNS
    assert (kernel.ws / f"notes{TURNS - 1}.txt").read_text() == f"turn {TURNS - 1}\n"

    opened = {m["content"]["comm_id"] for m in kernel.log if m["msg_type"] == "comm_open"}
    assert len(opened) > 20 * TURNS

    def all_closed() -> bool:  # every widget, layouts and styles too (IOPub may lag)
        return opened <= {
            m["content"]["comm_id"] for m in kernel.log if m["msg_type"] == "comm_close"
        }

    kernel.wait_for(all_closed, timeout=30)
    # the front end gets the document before it hears that the widgets are gone
    order = [m["msg_type"] for m in kernel.log]
    last_document = max(i for i, kind in enumerate(order) if kind == "update_display_data")
    assert "comm_close" in order[last_document:]
    first_close_after = order.index("comm_close", order.index("update_display_data"))
    assert order.index("update_display_data") < first_close_after
    widget_view = "application/vnd.jupyter.widget-view+json"
    assert not [o for o in kernel.saved_outputs(msg_id) if widget_view in o.get("data", {})]
