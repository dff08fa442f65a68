"""``inspect_variable`` on a 10-million-row pandas frame of a few dtypes, against
``df.head().to_string()`` on the same frame (what a person would type to look at it).

The frame lives in a real IPython shell's namespace and the handler is called as the
router calls it; ``list_variables`` on the same namespace is timed for the note.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from _cases import _interleaved

from agent_magics.tools.context import FunctionPayload, SessionServices, ToolInvocation, TurnContext


def make_frame(rows: int) -> Any:
    """int, float, datetime, category, bool and string columns, ``rows`` long."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(7)
    words = np.array(["alpha", "beta", "gamma", "delta"])
    return pd.DataFrame(
        {
            "id": np.arange(rows, dtype=np.int64),
            "price": rng.random(rows),
            "when": pd.date_range("2020-01-01", periods=rows, freq="s"),
            "city": pd.Categorical.from_codes(rng.integers(0, 3, rows), ["Oslo", "Rome", "Lima"]),
            "flag": rng.random(rows) < 0.5,
            "label": pd.array(words[rng.integers(0, 4, rows)], dtype="str"),
        }
    )


def _call(name: str, args: dict[str, object]) -> ToolInvocation:
    payload = FunctionPayload(json.dumps(args))
    return ToolInvocation(
        "call_bench", name, payload, TurnContext(cwd=Path.cwd()), SessionServices()
    )


def inspect_frame(rows: int, runs: int) -> dict[str, float]:
    """Median seconds of the handler and of the baseline, the answer's length in
    characters, and one list_variables call's seconds."""
    import time

    from IPython.core.interactiveshell import InteractiveShell

    from agent_magics.jupyter.kernel.describe import MAX_OUTPUT_CHARS
    from agent_magics.jupyter.kernel.inspect_variable import InspectVariableHandler
    from agent_magics.jupyter.kernel.list_variables import ListVariablesHandler

    df = make_frame(rows)
    shell = InteractiveShell.instance()
    shell.user_ns["df"] = df
    inspect, listing = InspectVariableHandler(shell), ListVariablesHandler(shell)
    inv = _call(inspect.name, {"name": "df"})
    with asyncio.Runner() as runner:

        def candidate() -> str:
            return runner.run(inspect.handle(inv)).text

        def baseline() -> str:
            text: str = df.head().to_string()
            return text

        answer = candidate()
        if f"shape: {rows} rows × 6 columns" not in answer or len(answer) > MAX_OUTPUT_CHARS:
            raise RuntimeError(f"unexpected answer ({len(answer)} chars):\n{answer}")
        cand, base = _interleaved(runs, candidate, baseline)
        t0 = time.perf_counter()
        listed = runner.run(listing.handle(_call(listing.name, {}))).text
        list_secs = time.perf_counter() - t0
        if not listed.startswith("df  pandas.DataFrame"):
            raise RuntimeError(f"unexpected listing: {listed}")
    del shell.user_ns["df"]
    return {"candidate": cand, "baseline": base, "chars": len(answer), "list": list_secs}
