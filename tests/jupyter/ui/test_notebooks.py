"""The notebooks in notebooks/ run headlessly (nbclient, as papermill and nbconvert do)
and keep a static markdown transcript in their outputs, on every test kernel."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from notebooks.recordings.record import own_home
from tests.helpers.kernels import KERNEL_PYTHONS, write_kernelspec
from tests.helpers.notebooks import agent_cells, transcript
from tests.helpers.paths import ROOT

pytestmark = pytest.mark.slow

NOTEBOOKS = ROOT / "notebooks"
RECORDING = "recordings/%s.jsonl"
# What playback says when a recording does not fit the notebook (or no model is there)
RECORDING_PROBLEMS = ("does not match it", "has no more answers", "No model is configured")


def execute(
    name: str,
    python: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    approval: str = "deny",
) -> Any:
    """Run ``notebooks/NAME`` as papermill does, in a copy of ``notebooks/`` (the
    notebooks name their recordings relative to their folder), with no model configured
    and headless approvals answered with ``approval``; nbclient starts (and cleans up)
    the kernel, found through a kernelspec written for ``python``. The kernel has an empty
    home of its own, as record.py gives it: a command that runs before the shell snapshot
    is ready reads the login profile, and a noisy one (a pyenv set-up that cannot write
    its shims inside the sandbox) adds a line to the command's output."""
    folder = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, folder, ignore=shutil.ignore_patterns(".*", "__pycache__"))
    nb = nbformat.read(folder / name, as_version=4)
    specs = tmp_path / "specs"
    kernel = write_kernelspec(python, specs)
    monkeypatch.setenv("JUPYTER_PATH", str(specs))
    monkeypatch.setenv("AGENT_MAGICS_HEADLESS_APPROVAL", approval)
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENT_MAGICS_RECORD_PATH"):
        monkeypatch.delenv(var, raising=False)
    resources = {"metadata": {"path": str(folder)}}
    with own_home() as home:
        monkeypatch.setenv("HOME", str(home))
        NotebookClient(nb, kernel_name=kernel, timeout=120, resources=resources).execute()
    return nb


def output_text(output: Any) -> str:
    return json.dumps(output.get("data", {})) + str(output.get("text", ""))


def check_ran_cleanly(nb: Any) -> None:
    """No error, no sentence of a recording that does not fit (the notebook changed since
    it was recorded), and each ``%%agent`` cell keeps a finished transcript."""
    outputs = [o for c in nb.cells for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    found = [p for o in outputs for p in RECORDING_PROBLEMS if p in output_text(o)]
    assert not found, "re-record: python notebooks/recordings/record.py NAME"
    for cell in agent_cells(nb):
        text = transcript(cell)  # its parts, each updated in place
        assert "*Tokens: " in text  # the turn ended inside its cell
        assert "Working…" not in text


def test_each_notebook_says_it_runs_on_its_recording() -> None:
    """The first cell says how it runs; the first code cell names the recording, which
    record.py made (a model script beside it)."""
    for path in NOTEBOOKS.glob("*.ipynb"):
        nb = nbformat.read(path, as_version=4)
        assert nb.cells[0].cell_type == "markdown" and "OPENAI_API_KEY" in nb.cells[0].source
        first = next(c for c in nb.cells if c.cell_type == "code").source.splitlines()
        assert first[:2] == ["%load_ext agent_magics", f"%agent recording {RECORDING % path.stem}"]
        assert (NOTEBOOKS / (RECORDING % path.stem)).is_file()
        script = f"{path.stem.replace('-', '_')}_script.py"
        assert (NOTEBOOKS / "recordings" / script).is_file()


@pytest.mark.parametrize("python", KERNEL_PYTHONS)
@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_notebook_runs_headless_with_a_static_transcript(
    name: str, python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = execute(name, python, tmp_path, monkeypatch)
    check_ran_cleanly(nb)
    first = next(c for c in nb.cells if c.cell_type == "code")
    said = "".join(output_text(o) for o in first.outputs)
    assert "no model is configured, so the agent plays the recording" in said


@pytest.mark.parametrize("python", KERNEL_PYTHONS[:1])
@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_notebook_runs_headless_with_every_call_approved(
    name: str, python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path a person clicking Approve takes (the browser's Run All) plays too; on
    the first kernel only, to keep the suite's time down."""
    nb = execute(name, python, tmp_path, monkeypatch, "approve")
    check_ran_cleanly(nb)


def printed(nb: Any, source: str) -> str:
    """What the code cell whose source is ``source`` shows, as text."""
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and c.source == source]
    return "".join(
        str(o.get("text", "")) + str(o.get("data", {}).get("text/markdown", ""))
        for o in cell.outputs
    )


@pytest.mark.parametrize(
    ("python", "approval", "mechanism"),
    [
        pytest.param(p.values[0], "deny", None, id=f"{p.id}-deny", marks=p.marks)
        for p in KERNEL_PYTHONS
    ]
    + [
        pytest.param(KERNEL_PYTHONS[0].values[0], "approve", None, id="approve"),
        pytest.param(KERNEL_PYTHONS[0].values[0], "deny", "none", id="no-sandbox-deny"),
    ],
)
def test_quickstart_transcript_reads_well_without_widgets(
    python: str,
    approval: str,
    mechanism: str | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each step of the quickstart says in its saved output what its markdown promises:
    known-safe reads, the approval (denied headless, or approved), the plan, the patch and
    the turn's diff, status, the saved session and its export, the resumed session. With
    no sandbox (as on a Binder host with neither bubblewrap nor Landlock) every command
    asks first, so a headless run denies even ``ls``: the model says what it could not do,
    never what it did not see."""
    if mechanism:
        monkeypatch.setenv("AGENT_MAGICS_SANDBOX_MECHANISM", mechanism)
    nb = execute("quickstart.ipynb", python, tmp_path, monkeypatch, approval)
    check_ran_cleanly(nb)
    first, tests, fix, resumed = (transcript(c) for c in agent_cells(nb))
    status = printed(nb, "%agent status")
    export = printed(nb, next(c.source for c in nb.cells if c.source.startswith("%agent export")))
    run = "**exec_command** `python3 test_stats.py` · "
    if mechanism == "none":
        assert "No sandbox works on this machine" in first
        assert "**exec_command** `ls` · denied · by the headless policy" in first
        assert "Listing the folder was not approved, so I have not seen" in first
        assert "`cat " not in first and "divides by" not in first
        assert run + "denied · by the headless policy" in tests
        assert "I have not been able to read the code either" in tests
        assert "**exec_command** `cat stats.py` · denied · by the headless policy" in fix
        assert "so I could not find the bug, and I changed nothing." in fix
        assert "apply_patch" not in fix and "file changed" not in fix
        assert printed(nb, 'print((workdir / "stats.py").read_text())').endswith(
            "    return sum(values) / (len(values) + 1)\n\n"
        )
        assert "no mechanism works here, so every command asks first" in status
        assert "(3 turns)" in export
        assert "reading the files was not approved, so I never saw `stats.py`" in resumed
        return
    assert "**exec_command** `ls` · done" in first and "test_stats.py\n```" in first
    assert "**exec_command** `cat README.md stats.py test_stats.py` · done" in first
    assert "divides by `len(values) + 1` instead of `len(values)`" in first
    if approval == "deny":
        assert run + "denied · by the headless policy" in tests
        assert tests.count("> Denied: nobody can approve in a headless run, so every") == 1
        # nobody declined in a headless run: the answer says what happened, not who did it
        assert "The test run was not approved, so I did not run it." in tests
        assert "declined" not in tests
        assert "*1 tool call denied by the headless policy.*" in tests
    else:
        assert run + "failed" in tests and "approved by policy" in tests
        assert "FAILED: mean([1, 2, 3]) returned 1.5, expected 2" in tests
        assert "The test fails: `mean([1, 2, 3])` returned 1.5, not 2." in tests
    assert "- [ ] **Fix the divisor in stats.py** (in progress)" in fix
    assert "- [x] Fix the divisor in stats.py" in fix
    assert "**apply_patch** `Update stats.py` · done" in fix
    diff = "**1 file changed in this turn**\n\n<details><summary>stats.py · modified · +1 −1"
    assert diff in fix and "+    return sum(values) / len(values)" in fix.split(diff)[1]
    assert printed(nb, 'print((workdir / "stats.py").read_text())').endswith(
        "    return sum(values) / len(values)\n\n"
    )
    assert "none configured, so offline: the recording" in status
    assert "mode:            headless (each turn runs to its end in its cell)" in status
    sessions = printed(nb, "%agent sessions").splitlines()
    assert sessions[0].startswith("id ") and len(sessions) == 2  # this one session, saved
    assert "What does this project do?" in sessions[1]
    assert "Exported session " in export and "(3 turns)" in export
    assert "> Fix the bug in stats.py. Start with a short plan" in export
    said = printed(nb, "%agent reset\n%agent resume last")
    assert "agent: Resuming session " in said and ": 3 turns, started " in said
    assert "agent: The next %%agent cell continues it." in said
    assert "divided by `len(values) + 1`" in resumed  # it answered from the saved session


def test_binder_follows_repo2docker_conventions() -> None:
    binder = NOTEBOOKS.parent / "binder"
    post_build = binder / "postBuild"
    lines = post_build.read_text().splitlines()
    assert lines[0] == "#!/bin/bash" and "set -e" in lines  # errors must stop the build
    assert post_build.stat().st_mode & 0o111  # repo2docker runs it only when executable
    # the root pyproject is ignored; the live extra lets the agent edit the open notebook
    assert "python -m pip install --no-cache-dir '.[live]'" in lines
    requirements = (binder / "requirements.txt").read_text().splitlines()
    assert any(r.startswith("jupyter-collaboration") for r in requirements)
    assert not (binder / "environment.yml").exists()  # it would shadow requirements.txt
    assert (binder / "runtime.txt").read_text().strip().startswith("python-3.")


TOOLS_NOTEBOOK_RUNS = [
    pytest.param("bwrap", "deny", id="bwrap-deny"),
    pytest.param("landlock", "deny", id="landlock-deny"),
    pytest.param("none", "deny", id="no-sandbox-deny"),
    pytest.param("bwrap", "approve", id="bwrap-approve"),
]


@pytest.mark.parametrize(("mechanism", "approval"), TOOLS_NOTEBOOK_RUNS)
def test_how_the_tools_work_shows_what_its_text_says(
    mechanism: str, approval: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """how-the-tools-work.ipynb under each sandbox mechanism (and none, as on a Binder
    without one) plays its recording and shows what its markdown says: the same command
    under read-only, workspace-write and danger-full-access; a write the sandbox blocks
    whose retry outside it is denied (or approved); three reads in one response; a Python
    function the agent calls; a cell the teacher's policy refuses."""
    from tests.helpers.sandbox import require_mechanism

    if mechanism != "none":
        require_mechanism(mechanism)
    monkeypatch.setenv("AGENT_MAGICS_SANDBOX_MECHANISM", mechanism)
    # ipykernel leaves what its subprocesses write to the kernel's stderr out of the cell
    # when it sees pytest; a person's kernel shows it (the student kernel's log, below)
    monkeypatch.delenv("PYTEST_CURRENT_TEST", raising=False)
    nb = execute(
        "how-the-tools-work.ipynb", KERNEL_PYTHONS[0].values[0], tmp_path, monkeypatch, approval
    )
    check_ran_cleanly(nb)
    read_only, workspace, full, append, reads, function = (transcript(c) for c in agent_cells(nb))
    never = 'Rejected(\\"approval required by policy, but AskForApproval is set to Never\\")'
    if mechanism == "none":  # nothing can confine a command, and -a never asks nobody
        assert never in read_only and never in workspace
        assert "No sandbox works on this machine" in read_only
    else:
        assert "inside:  refused\noutside: refused\n" in read_only
        assert "inside:  written\noutside: refused\n" in workspace
        assert "notes/inside.txt · added" in workspace  # the turn's diff
    assert "inside:  written\noutside: written\n" in full
    on_disk = printed(nb, next(c.source for c in nb.cells if c.source.startswith("for path in")))
    assert (
        on_disk
        == "work/notes/inside.txt: written by the agent\noutside.txt: written by the agent\n"
    )
    appended = printed(nb, "print(outside.read_text())")
    head = '**exec_command** `echo "checked by the agent" >> ../outside.txt` · '
    if approval == "deny":
        assert head + "denied · by the headless policy" in append
        assert "was not approved, so I left it as it was." in append
        assert appended == "written by the agent\n\n"
    else:
        assert head + "done" in append and "as approved." in append
        assert appended == "written by the agent\nchecked by the agent\n\n"
    cards = [
        f"**exec_command** `sleep 1; cat data/{city}.csv` · " for city in ("oslo", "lima", "cairo")
    ]
    assert reads.index(cards[0]) < reads.index(cards[1]) < reads.index(cards[2])
    timed = printed(nb, next(c.source for c in nb.cells if c.source.startswith("ran = ")))
    if mechanism == "none" and approval == "deny":  # every command asks first there
        assert all(card + "denied · by the headless policy" in reads for card in cards)
        assert timed.startswith("The reads did not all run")
    else:
        assert all(card + "done" in reads for card in cards) and "Cairo,27" in reads
        assert "ran side by side" in reads and timed.startswith("Three one-second reads took ")
    assert '**to_fahrenheit** `{"celsius": 27}` · done' in function
    assert "27 °C is 80.6 °F, by your `to_fahrenheit`." in function
    refused = printed(nb, next(c.source for c in nb.cells if c.source.startswith("import json")))
    # the student's kernel keeps its own log (ipykernel's warning about TCP) out of the cell
    assert refused.startswith("student.ipynb: metadata.agent_magics = ")
    assert "[IPKernelApp]" not in refused and "WARNING" not in refused
    assert (
        "AgentTurnFailed: The teacher's policy (this notebook's metadata) "
        "allows approval up to on-request and sandbox up to workspace-write; this cell asks "
        "for -a never -s danger-full-access.\n"
    ) in refused
    assert "policy:          Teacher's policy (this notebook's metadata): " in refused
    assert "; no run_python." in refused


@pytest.mark.parametrize(
    ("approval", "mechanism"),
    [
        pytest.param("approve", None, id="approve"),
        pytest.param("deny", "none", id="no-sandbox-deny"),
    ],
)
def test_explore_a_data_repo_transcripts(
    approval: str, mechanism: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The data notebook's approved path: the file tools and the script's buggy output, a
    DataFrame the person then uses, a figure the model saw, the patch as a diff and the
    fixed output, a cell inserted into the working copy's notebook (never into this one,
    so it runs again), and the exported session; the repository's data stay as they were.
    With no sandbox (a Binder host with neither bubblewrap nor Landlock) running the script
    asks first, and headless the script and the patch are denied: the model says it has not
    seen the script's output, and the script stays as it was."""
    if mechanism:
        monkeypatch.setenv("AGENT_MAGICS_SANDBOX_MECHANISM", mechanism)
    python = KERNEL_PYTHONS[0].values[0]
    nb = execute("explore-a-data-repo.ipynb", python, tmp_path, monkeypatch, approval)
    check_ran_cleanly(nb)
    cells = {c.get("id"): c for c in nb.cells}

    def said(cell_id: str) -> str:
        return "".join(output_text(o) for o in cells[cell_id].outputs)

    look = transcript(cells["look"])
    for call in ("**list_dir**", "**read_file**", "**grep_files** `temp_c in", "**shell_command**"):
        assert call in look
    if mechanism == "none":
        assert "No sandbox works on this machine" in look
        assert "`python3 scripts/summarize.py` · denied · by the headless policy" in look
        assert "Running it was not approved, so I have not seen its output" in look
        assert "Its output looks plausible" not in look and "4.4" not in look
        fix = transcript(cells["fix"])
        assert "**apply_patch** `Update scripts/summarize.py` · denied" in fix
        assert "The patch was not approved, so `scripts/summarize.py` is unchanged" in fix
        assert "declined" not in fix  # a headless run denied it; nobody declined
        assert "harbour  2024-02      4.4     21.6" in said("rerun")  # still the bug
        assert "Names defined: pd, readings" in transcript(cells["load-df"])
        assert "Inserted code cell" in transcript(cells["cell"])
        assert "(5 turns)" in said("export")
        return
    assert "harbour  2024-02      4.4     21.6" in look  # the bug, before the fix
    load = transcript(cells["load-df"])
    assert "**inspect_variable**" in load and "Names defined: pd, readings" in load
    table = cells["yours"].outputs[0]["data"]["text/plain"]  # the person's cell uses it
    assert "harbour 2024-01   3.6     31\n        2024-02   6.3     21" in table
    plot = transcript(cells["plot"])
    assert "[image 1: image/png <Figure size 700x300 with 1 Axes>" in plot  # sent to the model
    assert any("image/png" in o.get("data", {}) for o in cells["plot"].outputs)
    fix = transcript(cells["fix"])
    assert "**apply_patch** `Update scripts/summarize.py` · done" in fix
    diff = fix.split("**1 file changed in this turn**")[1]
    assert "+        days[key] += 1" in diff
    assert "-    return {key: (temps[key] / 30, rain[key]) for key in temps}" in diff
    assert (
        "harbour  2024-02      6.3     21.6" in fix.split("**shell_command**")[1]
    )  # run after the fix
    assert "harbour  2024-02      6.3     21.6" in said("rerun")
    cell = transcript(cells["cell"])
    assert "**edit_notebook** `analysis.ipynb` · done" in cell and "Inserted code cell" in cell
    shown = said("show-cell")
    assert "--- cell 3 (code)\n# Monthly mean temperature per station. Harbour" in shown
    assert "Exported session" in said("export") and "(5 turns)" in said("export")
    assert "# Agent session" in said("show-export")
    copy = tmp_path / "notebooks"  # the notebook and its data as the run left them
    assert nbformat.read(copy / "explore-a-data-repo.ipynb", as_version=4).cells == [
        c for c in nbformat.read(NOTEBOOKS / "explore-a-data-repo.ipynb", as_version=4).cells
    ]
    assert "/ 30" in (copy / "data" / "scripts" / "summarize.py").read_text()
    assert len(nbformat.read(copy / "data" / "analysis.ipynb", as_version=4).cells) == 2
