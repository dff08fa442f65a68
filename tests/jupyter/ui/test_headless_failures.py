"""A notebook run headlessly whose %%agent turn could not run (no model configured, the
server unreachable, a model the server does not have, a bad setting, a blank prompt)
fails its cell: nbclient and ``jupyter nbconvert --execute`` stop there with a non-zero
exit and the one sentence, as ``agent-magics exec`` exits 1, and the cells after it do
not run.

Before, the cell stayed green and the run exited 0, the failure only in the saved
transcript. Real kernels, a real closed port on 127.0.0.1, a real server answering 404."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from tests.helpers.fault_server import Answer, FaultServer
from tests.helpers.kernels import KERNEL_PYTHONS, NO_LOGIN, write_kernelspec

pytestmark = pytest.mark.slow

QUICK = f"{NO_LOGIN} -c request_max_retries=0 -c stream_max_retries=0"
NBCONVERT = [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute"]
UNKNOWN = json.dumps(
    {"error": {"message": "The model `nope` does not exist", "code": "model_not_found"}}
).encode()


def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def failing_cell(case: str) -> Iterator[tuple[str, str]]:
    """The %%agent cell for ``case`` and the sentence the person must read."""
    if case == "no model":
        yield f"%%agent {QUICK}\ngo", "No model is configured"
    elif case == "bad setting":
        yield f"%%agent {QUICK} -c request_max_retries=500\ngo", "request_max_retries"
    elif case == "empty cell":
        yield f"%%agent {QUICK}\n  \n", "The cell is empty"
    elif case == "unreachable":
        url = f"http://127.0.0.1:{closed_port()}/v1"
        yield f"%%agent --base-url {url} {QUICK}\ngo", "127.0.0.1"
    else:
        server = FaultServer([Answer(status=404, body=UNKNOWN)])
        try:
            yield (
                f"%%agent --base-url {server.base_url} -m nope {QUICK}\ngo",
                "The model server has no model 'nope'",
            )
        finally:
            server.close()


def notebook(agent_cell: str) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext agent_magics"),
        nbformat.v4.new_code_cell(agent_cell),
        nbformat.v4.new_code_cell("print('ran after the turn')"),
    ]
    return nb


@pytest.mark.parametrize(
    "case", ["no model", "unreachable", "unknown model", "bad setting", "empty cell"]
)
@pytest.mark.parametrize("python", KERNEL_PYTHONS)
def test_nbclient_stops_at_a_turn_that_could_not_run(python: str, case: str, home: Path) -> None:
    kernel = write_kernelspec(python, home / "specs")
    with failing_cell(case) as (line, sentence):
        nb = notebook(line)
        client = NotebookClient(
            nb, kernel_name=kernel, timeout=120, resources={"metadata": {"path": str(home)}}
        )
        with pytest.raises(CellExecutionError) as failed:
            client.execute()
    assert "AgentTurnFailed" in str(failed.value) and sentence in str(failed.value)
    (error,) = [o for o in nb.cells[1].outputs if o["output_type"] == "error"]
    assert error["ename"] == "AgentTurnFailed" and sentence in error["evalue"]
    assert error["traceback"] == [f"AgentTurnFailed: {error['evalue']}"]  # no code of ours
    if case not in ("bad setting", "empty cell"):  # those stop before a turn begins
        shown = [o["data"]["text/markdown"] for o in nb.cells[1].outputs if "data" in o]
        assert shown and sentence in shown[-1]  # the saved transcript says it too
    assert nb.cells[2].outputs == []  # the run stopped at the failed cell


@pytest.mark.parametrize("case", ["unreachable", "unknown model"])
def test_nbconvert_execute_exits_non_zero(case: str, home: Path) -> None:
    kernel = write_kernelspec(KERNEL_PYTHONS[0].values[0], home / "specs")
    path = home / "run.ipynb"
    with failing_cell(case) as (line, sentence):
        nbformat.write(notebook(line), path)
        done = subprocess.run(
            [*NBCONVERT, f"--ExecutePreprocessor.kernel_name={kernel}", str(path)],
            capture_output=True,
            text=True,
            cwd=home,
            timeout=180,
        )
    assert done.returncode != 0
    assert "AgentTurnFailed" in done.stderr and sentence in done.stderr
    assert not (home / "run.nbconvert.ipynb").exists()


@pytest.mark.skipif(shutil.which("papermill") is None, reason="papermill is not installed")
def test_papermill_exits_non_zero(home: Path) -> None:
    kernel = write_kernelspec(KERNEL_PYTHONS[0].values[0], home / "specs")
    path, out = home / "run.ipynb", home / "out.ipynb"
    with failing_cell("unreachable") as (line, sentence):
        nbformat.write(notebook(line), path)
        done = subprocess.run(
            ["papermill", "-k", kernel, str(path), str(out)],
            capture_output=True,
            text=True,
            cwd=home,
            timeout=180,
        )
    assert done.returncode != 0 and sentence in done.stderr
