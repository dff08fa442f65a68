"""The cells a person ran before loading the extension, read back from IPython's history,
so that the first turn knows them as it knows the cells run since.

:class:`.cell_log.CellLog` hears only the cells that run after ``%load_ext``; a notebook
that loads the extension halfway down had told the model nothing of what came before
(the frame it built, the error it hit). IPython keeps what is needed: the raw source of
every cell by its execution count (``input_hist_raw``) and, from IPython 9, what each
cell printed, displayed and returned (``outputs``) and the error it raised
(``exceptions``); older versions keep only the values (``output_hist``). The records are
clipped with the same budgets as the others, and the newest :data:`.cell_log.MAX_CELLS`
kept, the older ones counted; the session scrubs secrets from them as from every cell.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from agent_magics.jupyter.kernel.cell_log import (
    AGENT_CELL,
    ERROR_HEAD_CHARS,
    ERROR_TAIL_CHARS,
    SOURCE_HEAD_CHARS,
    SOURCE_TAIL_CHARS,
    CellLog,
    CellRecord,
    clip,
    display_text,
)

LOAD_LINE = re.compile(r"\s*%(?:re)?load_ext\s+agent_magics\s*(?:#.*)?$")
"""A line that loads this extension: a cell of nothing else is not news to the model."""


def _history(shell: Any) -> Any:
    return getattr(shell, "history_manager", None)


def _sources(shell: Any) -> list[tuple[int, str]]:
    """``(execution_count, raw source)`` of the person's cells that ran before now,
    without the ``%%agent`` cells and the cells that only load the extension."""
    raw = getattr(_history(shell), "input_hist_raw", None)
    if not isinstance(raw, list):
        return []
    found = []
    for count, source in enumerate(raw):
        if not isinstance(source, str) or not source.strip() or AGENT_CELL.match(source):
            continue
        if all(LOAD_LINE.match(line) or not line.strip() for line in source.splitlines()):
            continue
        found.append((count, source))
    return found


def _output_pieces(log: CellLog, count: int) -> Iterator[str]:
    """What cell ``count`` printed, displayed and returned, in the order it came."""
    history = _history(log.shell)
    outputs = getattr(history, "outputs", None)
    if isinstance(outputs, dict):
        for output in list(outputs.get(count, ())):
            kind = getattr(output, "output_type", "")
            bundle = getattr(output, "bundle", None) or {}
            if kind in ("out_stream", "err_stream"):
                yield from (str(piece) for piece in list(bundle.get("stream", ())))
            elif kind in ("display_data", "execute_result"):
                yield display_text(bundle)
        return
    values = getattr(history, "output_hist", None)
    if isinstance(values, dict) and count in values:
        shown = log.plain(values[count])
        if shown is not None:
            yield shown if shown.endswith("\n") else shown + "\n"


def _error_text(shell: Any, count: int) -> str | None:
    """The error cell ``count`` raised, as IPython stored it (its traceback text)."""
    exceptions = getattr(_history(shell), "exceptions", None)
    stored = exceptions.get(count) if isinstance(exceptions, dict) else None
    if not isinstance(stored, dict):
        return None
    lines = stored.get("traceback")
    if isinstance(lines, list) and lines:
        return "\n".join(str(line).rstrip("\n") for line in lines)
    return f"{stored.get('ename', 'Error')}: {stored.get('evalue', '')}"


def record_earlier_cells(log: CellLog) -> None:
    """Give ``log`` the newest cells that ran before the extension was loaded (as many
    as it keeps, each finished), counting the older ones."""
    sources = _sources(log.shell)
    kept = sources[-log.max_cells :] if log.max_cells > 0 else []
    records = []
    for count, source in kept:
        record = CellRecord(clip(source, SOURCE_HEAD_CHARS, SOURCE_TAIL_CHARS))
        record.execution_count = count
        for piece in _output_pieces(log, count):
            record.output.add(piece)
        error = _error_text(log.shell, count)
        if error is not None:
            record.error = clip(error, ERROR_HEAD_CHARS, ERROR_TAIL_CHARS)
        record.finished = True
        records.append(record)
    log.add_earlier(records, len(sources) - len(kept))
