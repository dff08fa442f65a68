"""``list_variables`` and ``inspect_variable`` on a real IPython shell, with real pandas,
polars and numpy values made by running cells."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from agent_magics.jupyter.kernel.describe import MAX_OUTPUT_CHARS, NOT_CALLED
from agent_magics.jupyter.kernel.frames import MAX_COLUMNS
from agent_magics.jupyter.kernel.inspect_variable import MAX_ROWS, InspectVariableHandler
from agent_magics.jupyter.kernel.list_variables import MAX_VARIABLES, ListVariablesHandler
from agent_magics.jupyter.kernel.tools import KernelTools
from agent_magics.tools.config import ToolsConfig
from tests.helpers.tools import call_tool

SETUP = """
import numpy as np
import pandas as pd
import polars as pl
df = pd.DataFrame({"price": [1.5, 2.5, 3.5, 4.5], "city": ["Oslo", "Rome", "Lima", "Pune"]})
pf = pl.DataFrame({"n": [1, 2, 3], "word": ["a", "b", "c"]})
arr = np.arange(100_000).reshape(1000, 100)
settings = {"lr": 0.1, "layers": [64, 64], "name": "run-7"}
count = 3
_private = 1
def scale(x: float, factor: float = 2.0) -> float:
    '''Multiply x by factor.

    Longer text that is not shown.'''
    return x * factor
class Model:
    '''A tiny model.'''
    def __init__(self, size: int) -> None:
        self.size = size
"""


def run(ip: Any, code: str) -> None:
    result = ip.run_cell(textwrap.dedent(code), store_history=True)
    assert result.success, result.error_in_exec or result.error_before_exec


async def listing(ip: InteractiveShell, **args: Any) -> str:
    text, ok = await call_tool(ListVariablesHandler(ip), Path.cwd(), args)
    assert ok
    return text


async def inspect(ip: InteractiveShell, name: str, **more: Any) -> tuple[str, bool]:
    return await call_tool(InspectVariableHandler(ip), Path.cwd(), {"name": name, **more})


async def test_list_shows_the_persons_variables_sorted_one_line_each(
    shell: InteractiveShell,
) -> None:
    run(shell, SETUP)
    run(shell, "count")  # makes _, _1, Out[1]...
    lines = (await listing(shell)).splitlines()
    names = [line.split()[0] for line in lines[:-1]]
    assert names == ["arr", "count", "df", "Model", "pf", "scale", "settings"]
    assert lines[0] == "arr  numpy.ndarray  (1000, 100) int64, 781.2 KiB"
    assert lines[1] == "count  int  3"
    assert lines[2].startswith("df  pandas.DataFrame  (4, 2), ")
    assert lines[5] == "scale  function  scale(x: float, factor: float = 2.0) -> float"
    assert lines[-1] == "modules: np (numpy), pd (pandas), pl (polars)"


async def test_list_leaves_out_ipython_private_and_own_names(shell: InteractiveShell) -> None:
    run(shell, "x = 1")
    run(shell, "x")  # shown, so IPython sets _ and Out
    run(shell, "_x = 2")
    shell.user_ns["kernel_tools"] = KernelTools(shell)  # the extension's own object
    names = [line.split()[0] for line in (await listing(shell)).splitlines()]
    assert names == ["x"]
    present = set(shell.user_ns)
    assert {"In", "Out", "_", "exit", "quit", "get_ipython", "_x"} <= present
    assert any(n.startswith("_i") and n[2:].isdigit() for n in present)  # _i3: an input
    shell.user_ns["exit"] = "rebound"  # the person's own value now: listed
    assert "exit  str  'rebound'" in await listing(shell)


async def test_list_filter_is_a_part_or_a_glob(shell: InteractiveShell) -> None:
    run(shell, "df_train = 1\ndf_test = 2\nmy_DF = 3\nother = 4")
    by_part = [line.split()[0] for line in (await listing(shell, filter="df")).splitlines()]
    assert by_part == ["df_test", "df_train", "my_DF"]
    by_glob = [line.split()[0] for line in (await listing(shell, filter="df_*")).splitlines()]
    assert by_glob == ["df_test", "df_train"]
    assert (
        await listing(shell, filter="zzz")
        == "No variables matching 'zzz' in the kernel's namespace."
    )


async def test_list_stops_at_its_budget_and_says_how_many_more(shell: InteractiveShell) -> None:
    run(shell, f"for i in range({MAX_VARIABLES + 7}): globals()[f'v{{i:03}}'] = i\ndel i")
    lines = (await listing(shell)).splitlines()
    assert len(lines) == MAX_VARIABLES + 1
    assert lines[-1] == "… 7 more; narrow the list with `filter`"


async def test_inspect_pandas_frame(shell: InteractiveShell) -> None:
    run(shell, SETUP)
    text, ok = await inspect(shell, "df", max_rows=2)
    assert ok
    assert text.splitlines()[:3] == [
        "df: pandas.DataFrame",
        "shape: 4 rows × 2 columns",
        "index: RangeIndex(start=0, stop=4, step=1)",
    ]
    assert "memory: " in text and "(object contents not counted)" in text
    assert "  price: float64\n" in text and "  city: " in text
    head = text.split("first 2 rows:\n")[1].splitlines()
    assert head[0].split() == ["price", "city"]
    assert head[1].split() == ["0", "1.5", "Oslo"] and head[2].split() == ["1", "2.5", "Rome"]
    assert len(head) == 3


async def test_inspect_series_column_and_polars_frame(shell: InteractiveShell) -> None:
    run(shell, SETUP)
    text, _ = await inspect(shell, "df['city']")
    assert text.splitlines()[:2] == [
        "df['city']: pandas.Series",
        "length: 4, dtype: str, name: 'city'",
    ]
    assert "all 4 rows:" in text and "Pune" in text
    text, _ = await inspect(shell, "pf")
    assert text.splitlines()[:3] == [
        "pf: polars.DataFrame",
        "shape: 3 rows × 2 columns",
        f"estimated size: {shell.user_ns['pf'].estimated_size()} B",
    ]
    assert "  n: Int64\n  word: String" in text and "all 3 rows:" in text


async def test_inspect_numpy_array_is_summarised_by_numpy(shell: InteractiveShell) -> None:
    run(shell, SETUP)
    text, _ = await inspect(shell, "arr")
    lines = text.splitlines()
    assert lines[1] == "shape: (1000, 100), dtype: int64, size: 781.2 KiB"
    assert lines[3].startswith("[[    0     1     2 ...")
    assert len(text) < 1_000


async def test_wide_frame_stays_within_the_budget(shell: InteractiveShell) -> None:
    run(
        shell,
        "import pandas as pd\nwide = pd.DataFrame({f'column_{i}': range(5) for i in range(400)})",
    )
    text, _ = await inspect(shell, "wide", max_rows=MAX_ROWS)
    assert len(text) <= MAX_OUTPUT_CHARS
    assert f"  … {400 - MAX_COLUMNS} more columns" in text
    assert "..." in text.split("all 5 rows:")[1].splitlines()[1]  # columns elided by pandas


async def test_containers_show_length_and_first_items(shell: InteractiveShell) -> None:
    run(shell, SETUP + "\nbig = list(range(1000))\nnames = {'x'}")
    text, _ = await inspect(shell, "settings")
    assert text == (
        "settings: dict\nlength: 3\n  'lr': float 0.1\n  'layers': list [64, 64]\n"
        "  'name': str 'run-7'"
    )
    text, _ = await inspect(shell, "big")
    assert text.splitlines()[1:3] == ["length: 1000", "  int 0"]
    assert text.endswith("  … 990 more")
    text, _ = await inspect(shell, "settings['layers'][-1]")
    assert text == "settings['layers'][-1]: int\n64"


async def test_functions_classes_and_modules_get_one_line_and_a_doc_line(
    shell: InteractiveShell,
) -> None:
    run(shell, SETUP)
    text, _ = await inspect(shell, "scale")
    assert text == (
        "scale: function\ndef scale(x: float, factor: float = 2.0) -> float\nMultiply x by factor."
    )
    text, _ = await inspect(shell, "Model")
    assert text == "Model: type\nclass Model(size: int) -> None\nA tiny model."
    text, _ = await inspect(shell, "pd")
    assert text.startswith(f"pd: module\nmodule pandas\nversion: {shell.user_ns['pd'].__version__}")


async def test_an_object_of_the_persons_class_is_described_without_its_repr(
    shell: InteractiveShell,
) -> None:
    run(
        shell,
        """
        class Broken:
            "Says no."
            def __repr__(self):
                raise ValueError("no repr today")
        class Huge:
            def __repr__(self):
                return "h" * 5_000_000
        broken, huge, blob = Broken(), Huge(), "b" * 5_000_000
        broken.reason = "x" * 5_000
        """,
    )
    text, ok = await inspect(shell, "broken")
    lines = text.splitlines()
    assert ok and lines[:2] == [
        "broken: __main__.Broken",
        f"an instance of __main__.Broken at {hex(id(shell.user_ns['broken']))}; {NOT_CALLED}",
    ]
    assert lines[2:4] == ["class doc: Says no.", "attributes (1):"]
    assert lines[4].startswith("  reason: str 'xxx") and len(lines[4]) < 250
    listed = await listing(shell)
    assert "broken  __main__.Broken  attributes: reason" in listed
    assert "huge  __main__.Huge  object (repr not called)" in listed
    for name in ("huge", "blob"):
        text, ok = await inspect(shell, name)
        assert ok and len(text) < 2_000


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("scale(1)", "cannot inspect `scale(1)`: give a variable name"),
        ("settings[key]", "cannot inspect `settings[key]`"),
        ("count + 1", "cannot inspect `count + 1`"),
        ("__import__('os')", "cannot inspect `__import__('os')`"),
        ("scale.__globals__", "cannot inspect `scale.__globals__`: dunder attributes are not read"),
        ("missing", "no variable named `missing` in the kernel; list_variables shows what exists"),
        ("df.nope", "`df` has no attribute `nope`"),
        ("settings['nope']", "`settings` has no key 'nope'"),
        ("settings['layers'][5]", "`settings['layers']` has no key 5"),
        ("count[0]", "`count` is not a dict, list, tuple or data frame"),
        ("Model.size", "`Model` has no attribute `size`"),
        ("", "name must be 1 to 300 characters"),
    ],
)
async def test_bad_names_are_answered_and_nothing_runs(
    shell: InteractiveShell, name: str, error: str
) -> None:
    run(shell, SETUP + "\ncalls = []\ndef scale(*a):\n    calls.append(a)\n")
    text, ok = await inspect(shell, name)
    assert not ok and text.startswith(error), text
    assert shell.user_ns["calls"] == []


async def test_a_property_is_not_run(shell: InteractiveShell) -> None:
    run(
        shell,
        "class P:\n    @property\n    def bad(self):\n        raise RuntimeError('boom')\np = P()",
    )
    text, ok = await inspect(shell, "p.bad")
    assert (text, ok) == (
        "cannot read `p.bad` without running the user's code (`bad` is a property: reading "
        "it runs its code); run_python can read it, under the user's approval",
        False,
    )
    text, ok = await inspect(shell, "p")
    assert ok and text.endswith("\ncomputed when read, so not read here: bad")


async def test_bad_arguments_are_answered(shell: InteractiveShell) -> None:
    run(shell, SETUP)
    text, ok = await inspect(shell, "df", max_rows=MAX_ROWS + 1)
    assert (text, ok) == (f"max_rows must be at most {MAX_ROWS}", False)
    text, ok = await call_tool(InspectVariableHandler(shell), Path.cwd(), {"max_rows": 3})
    assert not ok and "missing field `name`" in text


def test_the_kernel_offers_both_read_only_tools(shell: InteractiveShell) -> None:
    handlers = KernelTools(shell)()
    found = {h.name: h for h in handlers}
    assert {"list_variables", "inspect_variable"} <= set(found)
    for name in ("list_variables", "inspect_variable"):
        assert found[name].supports_parallel
        assert found[name].spec(ToolsConfig()).to_wire()["name"] == name


PLAIN = """
import sys
from IPython.core.interactiveshell import InteractiveShell
from agent_magics.jupyter.kernel.describe import describe
from agent_magics.jupyter.kernel.list_variables import listing
ip = InteractiveShell.instance()
ip.run_cell("x = {'a': [1, 2]}\\ndef f(a): pass\\nclass C: pass\\nc = C()\\nimport os")
print(listing(ip, None))
for name in ("x", "f", "C", "c", "os"):
    print(describe(name, ip.user_ns[name], 5))
print("imported:", [m for m in ("pandas", "polars", "numpy") if m in sys.modules])
"""


def test_plain_values_do_not_import_pandas_polars_or_numpy() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PLAIN], capture_output=True, text=True, check=True
    ).stdout
    assert "x  dict  len 1" in out
    assert out.rstrip().endswith("imported: []")
