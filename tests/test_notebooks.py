"""The notebooks in notebooks/ run headlessly (nbclient, as papermill and nbconvert do)
and keep a static markdown transcript in their outputs, on every test kernel."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from tests.kernels import KERNEL_PYTHONS, write_kernelspec

pytestmark = pytest.mark.slow

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def execute(path: Path, python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Run a notebook as papermill does; nbclient starts (and cleans up) the kernel, found
    through a kernelspec written for ``python``."""
    nb = nbformat.read(path, as_version=4)
    specs = tmp_path / "specs"
    name = write_kernelspec(python, specs)
    monkeypatch.setenv("JUPYTER_PATH", str(specs))
    resources = {"metadata": {"path": str(tmp_path)}}
    NotebookClient(nb, kernel_name=name, timeout=120, resources=resources).execute()
    return nb


def markdown_outputs(cell: Any) -> list[str]:
    return [
        o["data"]["text/markdown"]
        for o in cell.get("outputs", [])
        if o.get("output_type") == "display_data" and "text/markdown" in o.get("data", {})
    ]


def agent_cells(nb: Any) -> list[Any]:
    return [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%agent")]


@pytest.mark.parametrize("python", KERNEL_PYTHONS)
@pytest.mark.parametrize("name", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_notebook_runs_headless_with_a_static_transcript(
    name: str, python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = execute(NOTEBOOKS / name, python, tmp_path, monkeypatch)
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    for cell in agent_cells(nb):
        (transcript,) = markdown_outputs(cell)  # one display, updated in place
        assert "*Tokens: " in transcript  # the turn ended inside its cell
        assert "Working…" not in transcript


@pytest.mark.parametrize("python", KERNEL_PYTHONS)
def test_demo_transcript_reads_well_without_widgets(
    python: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    nb = execute(NOTEBOOKS / "demo.ipynb", python, tmp_path, monkeypatch)
    first, second = (markdown_outputs(c)[0] for c in agent_cells(nb))
    assert "**exec_command** `cat temperatures.csv` · done" in first
    assert "exit code 0)</summary>" in first and "Cairo,27" in first
    assert "**apply_patch** `Add SUMMARY.md` · done" in first
    assert "- [x] Write SUMMARY.md" in first
    answer = "Cairo is the warmest city (27 °C) and Oslo the coldest (4 °C).\n\n"
    diff = "**1 file changed in this turn**\n\n<details><summary>SUMMARY.md · added · +3 −0"
    assert answer + diff in first  # the turn's diff follows the answer
    assert "+Three cities; the warmest is Cairo" in first.split(diff)[1]
    assert first.endswith("</details>\n\n*Tokens: 40 in · 20 out · 60 total*")
    assert "**exec_command** `rm temperatures.csv` · denied · by the headless policy" in second
    assert second.count("> Denied: nobody can approve in a headless run, so every") == 1
    assert "*1 tool call denied by the headless policy.*" in second
    status = "".join(o.get("text", "") for o in nb.cells[-2].outputs)
    assert "mode:            headless (each turn runs to its end in its cell)" in status
    summary = "".join(o.get("text", "") for o in nb.cells[-1].outputs)
    assert summary.startswith("# Temperatures")


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
