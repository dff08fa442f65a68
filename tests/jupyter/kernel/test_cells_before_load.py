"""Cells run before ``%load_ext agent_magics`` reach the model's first turn, in a real
kernel: their sources, what they printed and returned, the error one raised, with the
secrets out, as the cells run after loading do; the next turn does not get them again."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_magics.models.secret import REDACTED
from agent_magics.testing import ScriptedResponsesServer, message
from tests.helpers.kernels import KERNEL_PYTHONS, Kernel, kernel_manager

pytestmark = pytest.mark.slow

TOKEN = "tok-0123456789abcdef"
FRAME = (
    "import pandas as pd\n"
    "rain = pd.DataFrame({'city': ['Oslo', 'Lima', 'Pune'], 'mm': [763, 6, 722]})\n"
    "print('rows:', len(rain))\n"
    "rain.shape"
)
FAILING = "rain['inches'] = rain['mm'] / inches_per_mm"


@pytest.fixture(params=KERNEL_PYTHONS)
def bare_kernel(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Kernel]:
    """A real kernel without the extension loaded."""
    ws = tmp_path / "ws"
    ws.mkdir()
    k = Kernel(kernel_manager(request.param, tmp_path / "specs"), ws)
    try:
        yield k
    finally:
        k.close()


def contexts(body: dict[str, Any]) -> list[str]:
    texts = [i["content"][0]["text"] for i in body["input"] if i.get("type") == "message"]
    return [t for t in texts if t.startswith("<notebook_context>")]


def test_cells_run_before_load_ext_reach_the_first_turn(bare_kernel: Kernel) -> None:
    kernel = bare_kernel
    kernel.run(
        f"import os\nos.environ['SERVICE_TOKEN'] = {TOKEN!r}\nprint(os.environ['SERVICE_TOKEN'])"
    )
    kernel.run(FRAME)
    failed = kernel.run(FAILING)
    assert any(m["msg_type"] == "error" for m in failed)
    kernel.run("%load_ext agent_magics")
    kernel.run("rain.describe();")  # a cell after loading, recorded as before
    with ScriptedResponsesServer([[message("seen")], [message("ok")]]) as server:
        for n, prompt in enumerate(["what is in rain?", "and now?"], start=1):
            kernel.run(f"%%agent --base-url {server.base_url} -c allow_login_shell=false\n{prompt}")
            kernel.wait_for(lambda: len(server.requests) == n)  # noqa: B023 (waited for here)
    (told,) = contexts(server.requests[0])
    cells = re.findall(r"<cell execution_count=\"(\d+)\">(.*?)</cell>", told, re.DOTALL)
    assert [int(count) for count, _ in cells] == [1, 2, 3, 5]  # not the %load_ext cell
    secret, frame, failing, after = (cell for _, cell in cells)
    assert f"<source>\n{FRAME}\n</source>" in frame
    assert "<output>\nrows: 3\n(3, 2)\n</output>" in frame
    assert f"<source>\n{FAILING}\n</source>" in failing
    assert "NameError: name 'inches_per_mm' is not defined" in failing.split("<error>")[1]
    assert "rain.describe();" in after
    assert f"<output>\n{REDACTED}\n</output>" in secret
    assert TOKEN not in str(server.requests[0]) and TOKEN not in str(server.requests[1])
    assert contexts(server.requests[1]) == [told]  # given once, kept in the history


def test_only_the_newest_earlier_cells_are_kept_the_older_counted() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    from agent_magics.jupyter.kernel.cell_log import MAX_CELLS, CellLog
    from agent_magics.jupyter.kernel.earlier_cells import record_earlier_cells
    from agent_magics.jupyter.kernel.notebook_context import context_text

    shell: Any = InteractiveShell.instance()
    shell.history_manager.reset()  # cells other tests ran in this shell are not ours
    shell.execution_count = 1
    try:
        first = shell.execution_count
        for i in range(MAX_CELLS + 5):
            shell.run_cell(f"value_{i} = {i}\nvalue_{i}", store_history=True)
        shell.run_cell("%%agent\nnot a cell of the person's", store_history=True)
        shell.run_cell("%load_ext agent_magics  # the loading cell", store_history=True)
        log = CellLog(shell)
        record_earlier_cells(log)
        cells, dropped = log.take()
        assert dropped == 5
        assert [c.execution_count for c in cells] == list(range(first + 5, first + MAX_CELLS + 5))
        assert (
            cells[-1].source.text()
            == f"value_{MAX_CELLS + 4} = {MAX_CELLS + 4}\nvalue_{MAX_CELLS + 4}"
        )
        assert cells[-1].output.text() == f"{MAX_CELLS + 4}\n"
        assert "<earlier_cells>5 earlier cells ran; not shown.</earlier_cells>" in context_text(
            None, cells, dropped
        )
    finally:
        shell.run_cell("%unload_ext agent_magics", store_history=False)
        shell.run_cell("%reset -f", store_history=False)
