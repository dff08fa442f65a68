"""Undo never destroys what the person changed while a turn ran (real kernels, real files).

The turn writes with apply_patch, runs a command that waits until the person has saved
two files (as a person does while ``sleep 6`` runs), then patches one of them again.
``%agent undo --yes`` takes back exactly the agent's patches, keeps the person's
paragraphs, names the files it could not attribute and the one changed after the agent
wrote it, with its diff."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_magics.testing import ScriptedResponsesServer, Turn, custom_tool_call, function_call
from agent_magics.testing import message as say
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell

pytestmark = pytest.mark.slow

FIRST_PATCH = """\
*** Begin Patch
*** Update File: keep.py
@@
 a = 1
-b = 2
+b = 3
*** Update File: draft.txt
@@
-draft
+first draft
*** End Patch
"""
SECOND_PATCH = """\
*** Begin Patch
*** Update File: plan.md
@@
-title
+Title
*** End Patch
"""
# The command waits for the person: it says it runs, and ends once told to.
WAIT_FOR_PERSON = (
    "touch .running; while [ ! -e .saved ]; do sleep 0.05; done; rm -f .running .saved"
)
NOTES = "My notes.\n"
NOTES_EDITED = NOTES + "\nA paragraph I wrote while the agent worked.\n"
PLAN_EDITED = "title\n\nintro\n\nMy own paragraph.\n"
DRAFT_EDITED = "first draft\nmy line\n"


def script() -> list[Turn]:
    wait = {"cmd": WAIT_FOR_PERSON, "yield_time_ms": 30000}
    return [
        [custom_tool_call("apply_patch", FIRST_PATCH, "c1")],
        [function_call("exec_command", wait, "c2")],
        [custom_tool_call("apply_patch", SECOND_PATCH, "c3")],
        [say("done")],
    ]


def prepare(ws: Path) -> None:
    (ws / "keep.py").write_text("a = 1\nb = 2\n")
    (ws / "draft.txt").write_text("draft\n")
    (ws / "notes.txt").write_text(NOTES)
    (ws / "plan.md").write_text("title\n\nintro\n")


def edit_while_the_command_runs(kernel: Kernel) -> None:
    """The person saves three files while the command runs (after the scan before it)."""
    ws = kernel.ws
    kernel.wait_for(lambda: (ws / ".running").exists(), timeout=60)
    (ws / "notes.txt").write_text(NOTES_EDITED)  # the agent never touches it
    (ws / "plan.md").write_text(PLAN_EDITED)  # the agent patches it afterwards
    (ws / "draft.txt").write_text(DRAFT_EDITED)  # the agent patched it before
    (ws / ".saved").touch()


def test_undo_yes_keeps_the_persons_edits_and_takes_back_exactly_the_agents_writes(
    kernel: Kernel,
) -> None:
    ws = kernel.ws
    prepare(ws)
    with ScriptedResponsesServer(script()) as server:
        kernel.execute(agent_cell(server.base_url, "-a never", "tidy up"))
        edit_while_the_command_runs(kernel)
        kernel.wait_for(lambda: kernel.shows(TURN_DONE), timeout=90)
        out = kernel.outputs_text(kernel.run("%agent undo --yes"))
    assert (ws / "notes.txt").read_text() == NOTES_EDITED  # lost before the fix
    assert (ws / "plan.md").read_text() == PLAN_EDITED  # the agent's "Title" taken back
    assert (ws / "keep.py").read_text() == "a = 1\nb = 2\n"
    assert (ws / "draft.txt").read_text() == DRAFT_EDITED
    assert out.startswith(
        "agent: Restored to their state before the agent's tools wrote them: keep.py, "
        "plan.md. Skipped: notes.txt, plan.md changed while commands ran, and undo cannot "
        "tell whether the agent or someone else changed them (%agent undo shows their "
        "diffs; %agent undo --yes --all restores them too). Not restored: draft.txt "
        "(changed after the agent wrote it; restoring would lose that change).\n"
    ), out
    assert "--- a/draft.txt\n+++ b/draft.txt\n@@ -1 +1,2 @@\n first draft\n+my line\n" in out


def test_the_question_shows_the_unattributed_diffs_and_undo_all_restores_them(
    kernel: Kernel,
) -> None:
    ws = kernel.ws
    prepare(ws)
    with ScriptedResponsesServer(script()) as server:
        kernel.execute(agent_cell(server.base_url, "-a never", "tidy up"))
        edit_while_the_command_runs(kernel)
        kernel.wait_for(lambda: kernel.shows(TURN_DONE), timeout=90)
        asked = kernel.outputs_text(kernel.run("%agent undo"))
        assert asked.startswith(
            "Undo restores 2 files to their state before the agent's tools wrote them: "
            "keep.py, plan.md. notes.txt, plan.md changed while commands ran"
        ), asked
        assert kernel.shows("+A paragraph I wrote while the agent worked.")  # its diff
        assert kernel.buttons("Undo") and kernel.buttons("Cancel")
        assert (ws / "notes.txt").read_text() == NOTES_EDITED  # nothing before the click
        kernel.click(kernel.wait_for(lambda: kernel.buttons("Undo all"))[-1])
        kernel.wait_for(lambda: kernel.shows("Restored to their state before the last turn"))
    # The person saw the diffs and chose: the files are as before the turn.
    assert (ws / "notes.txt").read_text() == NOTES
    assert (ws / "plan.md").read_text() == "title\n\nintro\n"
    assert (ws / "keep.py").read_text() == "a = 1\nb = 2\n"
    assert (ws / "draft.txt").read_text() == DRAFT_EDITED  # never: changed after the agent
