"""``%agent undo`` in real kernels: the turn's diff in the cell, the question clicked, the
files back as they were (bytes and mode), the model told in its next request. (What a
person changes while a turn runs: tests/jupyter/ui/test_kernel_undo_edits.py.)"""

from __future__ import annotations

import json
import stat
from pathlib import Path
from typing import Any

import pytest

from agent_magics.testing import (
    ScriptedResponsesServer,
    Turn,
    custom_tool_call,
    function_call,
    message,
)
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell
from tests.helpers.undo import PATCH, REVERTED, write_start_files

pytestmark = pytest.mark.slow


def script() -> list[Turn]:
    return [
        [custom_tool_call("apply_patch", PATCH, "c1")],
        [function_call("exec_command", {"cmd": "printf 'two\\n' >> cmd.txt"}, "c2")],
        [message("changed")],
        [message("heard")],
    ]


def prepare(ws: Path) -> dict[str, tuple[bytes, int]]:
    write_start_files(ws)
    return files(ws)


def files(ws: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.name: (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
        for p in ws.iterdir()
        if p.is_file()
    }


def run_turn(kernel: Kernel, server: ScriptedResponsesServer) -> None:
    msg_id = kernel.execute(agent_cell(server.base_url, "-a never", "change things"))
    kernel.wait_for(lambda: kernel.shows(TURN_DONE))
    assert kernel.shows("4 files changed in this turn")
    assert kernel.shows("<code>keep.py</code>")

    def saved_html() -> str:
        outputs = kernel.saved_outputs(msg_id)
        return "".join(str(o.get("data", {}).get("text/html", "")) for o in outputs)

    # The static transcript that replaces the cards keeps the diffs for the saved notebook.
    saved = kernel.wait_for(lambda: "agent-magics-transcript" in saved_html() and saved_html())
    assert "4 files changed in this turn" in saved and "<code>new.txt</code>" in saved


def test_undo_asks_in_the_cell_restores_everything_and_the_model_is_told(
    kernel: Kernel,
) -> None:
    before = prepare(kernel.ws)
    with ScriptedResponsesServer(script()) as server:
        run_turn(kernel, server)
        changed = files(kernel.ws)
        assert changed != before
        asked = kernel.outputs_text(kernel.run("%agent undo"))
        undo = kernel.wait_for(lambda: kernel.buttons("Undo all"))[-1]
        summary = (
            "Undo restores 3 files to their state before the agent's tools wrote them: "
            "gone.txt, keep.py, new.txt. cmd.txt changed while commands ran, and undo cannot "
            "tell whether the agent or someone else changed it: restored to their state "
            "before the last turn only if you say so (their diffs are below)."
        )
        assert asked == summary and kernel.shows(summary)
        assert kernel.shows("@@ -1 +1,2 @@\n one\n+two\n")  # cmd.txt's diff, to judge by
        assert files(kernel.ws) == changed  # nothing before the click
        kernel.click(undo)  # the person saw the command's change and chose it too
        kernel.wait_for(lambda: kernel.shows("Restored to their state before the last turn"))
        assert files(kernel.ws) == before
        assert files(kernel.ws)["keep.py"][1] == 0o755
        again = kernel.outputs_text(kernel.run("%agent undo"))
        assert again.startswith("agent: nothing to undo")
        kernel.run(agent_cell(server.base_url, "-a never", "and now?"))
        kernel.wait_for(lambda: len(server.requests) == 4)
    texts = [c.get("text") for i in server.requests[-1]["input"] for c in i.get("content", [])]
    assert texts[-2:] == [REVERTED, "and now?"]
    (log,) = (kernel.ws / ".agent_magics" / "sessions").glob("*.jsonl")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    (diff,) = [r for r in records if r["type"] == "turn_diff"]
    assert diff["turn"] == 1
    assert [(f["path"], f["status"]) for f in diff["files"]] == [
        ("cmd.txt", "modified"),
        ("gone.txt", "deleted"),
        ("keep.py", "modified"),
        ("new.txt", "added"),
    ]
    undone = [{k: r[k] for k in ("type", "files", "turn")} for r in records if r["type"] == "undo"]
    assert undone == [
        {"type": "undo", "files": ["cmd.txt", "gone.txt", "keep.py", "new.txt"], "turn": 1}
    ]


def ref(comm_id: str) -> str:
    """How a box names a child widget in its state."""
    return f"IPY_MODEL_{comm_id}"


def boxes(kernel: Kernel) -> list[dict[str, Any]]:
    return [s for s in kernel.states.values() if s.get("_model_name") == "VBoxModel"]


def test_cancel_keeps_the_files_and_a_later_change_makes_undo_refuse(kernel: Kernel) -> None:
    prepare(kernel.ws)
    with ScriptedResponsesServer(script()) as server:
        run_turn(kernel, server)
    kernel.run("%agent undo")
    cancel = kernel.wait_for(lambda: kernel.buttons("Cancel"))[-1]
    row = next(key for key, s in kernel.states.items() if ref(cancel) in s.get("children", ()))
    kernel.click(cancel)
    kernel.wait_for(lambda: kernel.shows("Undo cancelled"))
    # the decision takes the buttons' place, as on an approval card
    kernel.wait_for(lambda: not any(ref(row) in s.get("children", ()) for s in boxes(kernel)))
    changed = files(kernel.ws)
    assert changed["keep.py"][0] == b"a = 1\nb = 3\n"
    (kernel.ws / "cmd.txt").write_text("one\ntwo\nthree\n")
    refused = kernel.outputs_text(kernel.run("%agent undo --yes"))
    assert refused == (
        "agent: Undo refused: cmd.txt changed after the last turn ended, and restoring "
        "would lose that change; nothing was restored.\n"
    )
    assert files(kernel.ws)["keep.py"] == changed["keep.py"]
