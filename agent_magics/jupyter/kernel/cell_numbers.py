"""Execution counts for the cells the agent runs (run_cell) while its ``%%agent`` cell runs.

IPython takes a cell's number when the cell starts (``execution_count`` is already the
next one while it runs) and ``In`` gets one entry per numbered cell, so a cell the agent
runs takes the next number and its ``In`` entry is the one the number names. ipykernel
answers a cell with ``execution_count - 1`` once it ends, which JupyterLab shows as the
cell's number: after the agent ran cells, that would be the number of the last one. So
the awaited ``%%agent`` cell is numbered again when its turn ends, after the cells it ran
(its source stored under that number, as it finished after them): no two cells share one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def numbered_after_its_cells(shell: Any) -> Iterator[None]:
    """While the awaited ``%%agent`` cell of ``shell`` runs its turn."""
    start = getattr(shell, "execution_count", None)
    try:
        yield
    finally:
        history = getattr(shell, "history_manager", None)
        if isinstance(start, int) and history is not None and shell.execution_count != start:
            parsed, raw = history.input_hist_parsed, history.input_hist_raw
            if 0 < start <= len(parsed) and len(raw) == len(parsed):
                history.store_inputs(shell.execution_count, parsed[start - 1], raw[start - 1])
                shell.execution_count += 1
