"""A plot turn's saved output stores each figure once, as an image/png output of its own.

Before, the finished transcript carried every figure three times: as a data URL in its
text/html, again in its text/markdown and again in its text/plain (a 344 KB output for
a plot turn). image/png is what every renderer of a saved notebook shows (JupyterLab,
trusted or not, nbconvert's HTML, GitHub, nbviewer); the transcript names the figure in
words where it was made. Real matplotlib in a real kernel run by nbclient, a scripted
model on 127.0.0.1, and ``jupyter nbconvert --to html`` of the saved notebook."""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.kernels import KERNEL_PYTHONS, PLOT, agent_cell, write_kernelspec

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("python", KERNEL_PYTHONS)
def test_a_plot_turn_saves_its_figure_once(
    python: str, tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "matplotlib"))  # its cache: not a change
    (ws := tmp_path / "ws").mkdir()
    kernel = write_kernelspec(python, tmp_path / "specs")
    turns = [
        [function_call("run_python", {"code": PLOT}, "c1")],
        [message("Plotted the squares.")],
    ]
    with ScriptedResponsesServer(turns) as server:  # type: ignore[arg-type]
        nb = nbformat.v4.new_notebook()
        nb.cells = [
            nbformat.v4.new_code_cell("%load_ext agent_magics"),
            nbformat.v4.new_code_cell(agent_cell(server.base_url, "-a never")),
        ]
        resources = {"metadata": {"path": str(ws)}}
        NotebookClient(nb, kernel_name=kernel, timeout=120, resources=resources).execute()
    sent = server.outputs(1)["c1"]
    (url,) = [i["image_url"] for i in sent if i.get("type") == "input_image"]
    png = url.partition("base64,")[2]
    assert base64.b64decode(png).startswith(b"\x89PNG")  # the model saw the figure
    path = ws / "saved.ipynb"
    nbformat.write(nb, path)
    saved = path.read_text()
    assert saved.count(png[:200]) == 1, "the figure is stored once"
    outputs = nb.cells[1].outputs
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert [o["data"]["image/png"].replace("\n", "") for o in images] == [png]
    kinds = ["image" if "image/png" in o["data"] else "transcript" for o in outputs]
    assert kinds == ["transcript", "image", "transcript"]  # the figure below its card
    card, _, rest = (o["data"] for o in outputs)
    assert "Plotted the squares." in rest["text/markdown"]
    for kind in ("text/html", "text/markdown", "text/plain"):
        assert "output image 1" in card[kind]
        assert "base64" not in card[kind] and "base64" not in rest[kind]
    assert len(saved) < len(png) + 30_000  # one copy and the transcript's text
    subprocess.run(
        [sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", str(path)],
        check=True,
        capture_output=True,
    )
    page = (ws / "saved.html").read_text()
    assert page.count(png[:200]) == 1  # nbconvert's page shows the figure, once
    assert "Plotted the squares." in page
