"""Run All over a notebook with a ``%%agent`` cell, as JupyterLab runs it.

JupyterLab's Run All sends every cell's ``execute_request`` at once, with
``allow_stdin`` true (a person is there to click), and the kernel runs them in order.
Such a run is not headless: where the kernel can deliver clicks to a busy cell
(ipykernel >= 7.4) the ``%%agent`` cell stays busy until its turn ends, so the next cell
sees what the turn did; older kernels run the turn in the background and the cell says
so, once per kernel session. ``--background`` keeps a cell from waiting.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.kernels import KERNEL_PYTHONS, TURN_DONE, Kernel, agent_cell, kernel_manager

pytestmark = pytest.mark.slow

WRITE = function_call("exec_command", {"cmd": "echo from-the-turn > result.txt"}, "c1")
READ = "print(open('result.txt').read().strip())"


@pytest.fixture(params=KERNEL_PYTHONS)
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Kernel]:
    """A real kernel without the extension: the notebook loads it in its first cell."""
    ws = tmp_path / "ws"
    ws.mkdir()
    k = Kernel(kernel_manager(request.param, tmp_path / "specs"), ws)
    try:
        yield k
    finally:
        k.close()


def waits(kernel: Kernel) -> bool:
    return kernel.ipykernel_version() >= (7, 4)


def note_for(kernel: Kernel) -> str:
    version = kernel.value("__import__('ipykernel').__version__")
    return (
        f"ipykernel {version} cannot deliver button clicks to a busy cell, so this turn "
        "runs in the background: Run All will not wait for it; ipykernel 7.4 or newer waits."
    )


def ended(kernel: Kernel) -> int:
    """How many turns say they are done."""
    return sum(TURN_DONE in v for v in kernel.html_values())


def run_all(kernel: Kernel, cells: list[str]) -> list[list[dict[str, Any]]]:
    """Send every cell at once (``allow_stdin`` true, as a front end does) and wait for
    the last to end; each cell's IOPub messages."""
    assert kernel.kc.allow_stdin is True
    ids = [kernel.execute(cell) for cell in cells]
    kernel.wait_for(lambda: kernel.idle(ids[-1]), 60)
    return [[m for m in kernel.log if m["parent_header"].get("msg_id") == i] for i in ids]


def test_run_all_waits_for_the_turn(fresh: Kernel) -> None:
    with ScriptedResponsesServer([[WRITE], [message("wrote it")]]) as server:
        turn = agent_cell(server.base_url, "-a never -s danger-full-access", "write it")
        first, second, third = run_all(fresh, ["%load_ext agent_magics", turn, READ])
        if waits(fresh):
            errors = [
                m["content"]["ename"] for m in first + second + third if m["msg_type"] == "error"
            ]
            assert errors == []
            assert fresh.outputs_text(third) == "from-the-turn\n"
            assert fresh.shows(TURN_DONE)
            assert not fresh.shows("in the background")
        else:
            fresh.wait_for(lambda: fresh.shows(TURN_DONE))
            assert fresh.shows(note_for(fresh))
        assert (fresh.ws / "result.txt").read_text() == "from-the-turn\n"
        assert len(server.requests) == 2


def test_a_card_takes_its_click_while_the_next_cells_wait(fresh: Kernel) -> None:
    """Run All with a command that asks: the cells after it are queued in the kernel,
    and the click still reaches the card of the busy cell."""
    with ScriptedResponsesServer([[WRITE], [message("wrote it")]]) as server:
        fresh.run("%load_ext agent_magics")
        turn = agent_cell(server.base_url, "-a untrusted -s danger-full-access", "write it")
        ids = [fresh.execute(cell) for cell in (turn, READ)]
        fresh.click(fresh.wait_for(lambda: fresh.buttons("Approve"))[-1])
        fresh.wait_for(lambda: fresh.idle(ids[-1]))
        third = [m for m in fresh.log if m["parent_header"].get("msg_id") == ids[-1]]
        if waits(fresh):
            assert fresh.outputs_text(third) == "from-the-turn\n"
        fresh.wait_for(lambda: fresh.shows(TURN_DONE))
        assert (fresh.ws / "result.txt").read_text() == "from-the-turn\n"


def test_the_background_note_comes_once(fresh: Kernel) -> None:
    if waits(fresh):
        pytest.skip("ipykernel 7.4 and newer wait: there is no note")
    script = [[message("first answer")], [message("second answer")]]
    with ScriptedResponsesServer(script) as server:
        fresh.run("%load_ext agent_magics")
        fresh.run(agent_cell(server.base_url, "", "first"))
        fresh.wait_for(lambda: ended(fresh) == 1)
        fresh.run("%%agent\nsecond")
        fresh.wait_for(lambda: ended(fresh) == 2)
        note = note_for(fresh)
        assert sum(note in v for v in fresh.html_values()) == 1


def test_background_returns_at_once(fresh: Kernel) -> None:
    """``--background``: the cell ends before its turn (here, before it is approved)."""
    with ScriptedResponsesServer([[WRITE], [message("wrote it")]]) as server:
        fresh.run("%load_ext agent_magics")
        cell = agent_cell(server.base_url, "-a untrusted -s danger-full-access --background")
        fresh.run(cell)  # idle with the question still open
        approve = fresh.wait_for(lambda: fresh.buttons("Approve"))[-1]
        assert not (fresh.ws / "result.txt").exists()
        assert not fresh.shows("in the background")  # asked for: nothing to explain
        fresh.click(approve)
        fresh.wait_for(lambda: fresh.shows(TURN_DONE))
        assert (fresh.ws / "result.txt").read_text() == "from-the-turn\n"
        assert len(server.requests) == 2
