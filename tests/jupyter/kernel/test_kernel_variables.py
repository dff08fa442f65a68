"""``list_variables`` and ``inspect_variable`` in real kernels (both ipykernel lines of
:mod:`tests.helpers.kernels`), against the scripted model server: what a cell made is what the
model reads, and nothing asks for approval."""

from __future__ import annotations

import json

import pytest

from agent_magics.testing import ScriptedResponsesServer, Turn, function_call, message
from tests.helpers.kernels import TURN_DONE, Kernel

pytestmark = pytest.mark.slow

CELL = """
import pandas as pd
sales = pd.DataFrame({"region": ["north", "south", "east"], "units": [12, 7, 30]})
threshold = 10
"""


def test_a_variable_made_in_a_cell_reaches_the_model(kernel: Kernel) -> None:
    assert "error" not in [m["msg_type"] for m in kernel.run(CELL)]
    script: list[Turn] = [
        [
            function_call("list_variables", {}, "c1"),
            function_call("inspect_variable", {"name": "sales", "max_rows": 2}, "c2"),
        ],
        [message("seen")],
    ]
    with ScriptedResponsesServer(script) as server:
        # untrusted asks before anything that is not known to be safe: these never ask
        kernel.run(f"%%agent --base-url {server.base_url} -a untrusted\nwhat is in sales?")
        kernel.wait_for(lambda: len(server.requests) == 2)
        offered = {t.get("name") or t["type"] for t in server.requests[0]["tools"]}
        assert {"list_variables", "inspect_variable"} <= offered
        listed = server.outputs(1)["c1"].splitlines()
        assert listed[0].startswith("sales  pandas.DataFrame  (3, 2), ")
        assert listed[1:] == ["threshold  int  10", "modules: pd (pandas)"]
        seen = server.outputs(1)["c2"]
        assert seen.splitlines()[:2] == ["sales: pandas.DataFrame", "shape: 3 rows × 2 columns"]
        assert "  units: int64" in seen
        head = seen.split("first 2 rows:\n")[1].splitlines()
        assert [row.split() for row in head] == [
            ["region", "units"],
            ["0", "north", "12"],
            ["1", "south", "7"],
        ]
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
        assert not kernel.buttons("Approve")
        assert json.dumps(server.requests[1]).count("function_call_output") == 2
