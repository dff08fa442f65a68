"""pandas and polars frames and series, pandas indexes and numpy arrays, described by the
libraries' own code, never by the person's.

Which values these are, and whether their dtypes are the libraries' own, is decided by
:mod:`agent_magics.jupyter.kernel.libraries`; this module never imports pandas, polars or numpy.
What is read is cheap on any size: shape, dtypes, the first rows, and memory as the
library counts it without walking Python objects (pandas ``memory_usage(deep=False)``,
polars ``estimated_size()``, numpy ``nbytes``).

A printout calls ``str`` on every cell and label it shows, so before one is made the
shown cells of ``object`` and extension columns, the labels and the names are checked
to be plain scalars (:func:`agent_magics.jupyter.kernel.plain.plain`); if one is not, the rows
are left out and the answer says why. numpy prints with its default formatters (the
person's ``set_printoptions(formatter=...)`` is their code) and pandas without the
person's ``display.float_format``.
"""

from __future__ import annotations

from typing import Any

from agent_magics.jupyter.kernel.libraries import kind, pandas_bytes, shape_text, size_text, trusted
from agent_magics.jupyter.kernel.plain import plain, text
from agent_magics.jupyter.kernel.static import from_module, loaded, type_name

MAX_COLUMNS = 50  # columns whose dtype is listed
MAX_HEAD_COLUMNS = 20  # columns shown in the first rows (wider frames show "...")
MAX_CELL_CHARS = 40  # one cell of the first rows
MAX_ARRAY_VALUES = 100  # a numpy array with more elements is summarised by numpy itself
EDGE_ITEMS = 3  # values numpy shows at each end of a summarised axis
LINE_WIDTH = 100  # numpy's line width
MAX_LABELS = 10  # first labels of an index

NOT_TRUSTED = (
    "not described: one of its dtypes (or time zones) is a class of the person's own, "
    "and describing it would run that code; run_python can show it, under the user's "
    "approval"
)
ROWS_HIDDEN = (
    "first rows not shown: {where} holds a {kind}, whose text only its own code makes; "
    "run_python can print them, under the user's approval"
)


def describe(value: Any, max_rows: int) -> str | None:
    """Several lines for ``inspect_variable``, or None when ``value`` is none of these."""
    found = kind(value)
    if found is None:
        return None
    if not trusted(value, found):
        return NOT_TRUSTED
    if found == "pandas.DataFrame":
        return _pandas_frame(value, max_rows)
    if found == "pandas.Series":
        return _pandas_series(value, max_rows)
    if found == "pandas.Index":
        return _pandas_index(value)
    if found.startswith("polars."):
        return _polars(value, max_rows, frame=found == "polars.DataFrame")
    return _numpy(value)


def _label(value: Any) -> str:
    shown = value if type(value) is str else text(value, MAX_CELL_CHARS)
    return shown[:MAX_CELL_CHARS]


def _dtypes(names: list[Any], dtypes: list[Any], total: int) -> list[str]:
    lines = [f"columns ({total}):"]
    lines += [f"  {_label(name)}: {dtype}" for name, dtype in zip(names, dtypes, strict=True)]
    if total > len(names):
        lines.append(f"  … {total - len(names)} more columns")
    return lines


def _index_line(index: Any) -> str:
    kind_name = type(index).__name__
    if kind_name == "RangeIndex":
        return f"RangeIndex(start={index.start}, stop={index.stop}, step={index.step})"
    names = [_label(n) for n in index.names if n is not None]
    named = f", names {names}" if names else ""
    return f"{kind_name}, dtype {index.dtype}, {len(index)} entries{named}"


def _head_text(shown: str, rows: int, count: int) -> str:
    label = f"first {count} rows" if count < rows else f"all {rows} rows"
    return f"{label}:\n{shown}" if count else "no rows"


def _simple(dtype: Any) -> bool:
    """A numpy dtype without Python objects: pandas prints its values by itself."""
    return from_module(type(dtype), "numpy") and not dtype.hasobject


def _foreign(values: list[Any], where: str) -> str | None:
    for value in values:
        if not (value is None or plain(value)):
            return ROWS_HIDDEN.format(where=where, kind=type_name(value))
    return None


def _foreign_index(index: Any, where: str) -> str | None:
    found = _foreign(list(index.names), f"a name of the {where}")
    if found is None and not _simple(index.dtype):
        found = _foreign(index.tolist(), f"the {where}")
    return found


def _shown_columns(count: int) -> list[int]:
    """The column positions pandas prints with ``max_cols=MAX_HEAD_COLUMNS``."""
    if count <= MAX_HEAD_COLUMNS:
        return list(range(count))
    half = MAX_HEAD_COLUMNS // 2
    return [*range(half), *range(count - half, count)]


def _frame_hidden(head: Any) -> str | None:
    positions = _shown_columns(head.shape[1])
    found = _foreign_index(head.index, "index")
    found = found or _foreign(list(head.columns.names), "a name of the columns")
    labels = head.columns.take(positions)
    if found is None and not _simple(labels.dtype):
        found = _foreign(labels.tolist(), "a column label")
    dtypes = head.dtypes.tolist()
    for position in positions:
        if found is None and not _simple(dtypes[position]):
            found = _foreign(head.iloc[:, position].tolist(), f"column {position}")
    return found


def _pandas_options(pd: Any) -> Any:
    return pd.option_context("display.float_format", None)


def _pandas_frame(df: Any, max_rows: int) -> str:
    rows, cols = df.shape
    lines = [
        f"shape: {rows} rows × {cols} columns",
        f"index: {_index_line(df.index)}",
        f"memory: {size_text(pandas_bytes(df))} (object contents not counted)",
        *_dtypes(df.columns[:MAX_COLUMNS].tolist(), df.dtypes.iloc[:MAX_COLUMNS].tolist(), cols),
    ]
    head = df.head(max_rows)
    hidden = _frame_hidden(head)
    if hidden is not None:
        return "\n".join([*lines, hidden])
    with _pandas_options(loaded("pandas")):
        shown = head.to_string(max_cols=MAX_HEAD_COLUMNS, max_colwidth=MAX_CELL_CHARS)
    return "\n".join([*lines, _head_text(shown, rows, len(head))])


def _pandas_series(s: Any, max_rows: int) -> str:
    lines = [
        f"length: {len(s)}, dtype: {s.dtype}, name: {text(s.name, MAX_CELL_CHARS)}",
        f"index: {_index_line(s.index)}",
        f"memory: {size_text(pandas_bytes(s))} (object contents not counted)",
    ]
    head = s.head(max_rows)
    hidden = _foreign_index(head.index, "index") or _foreign([s.name], "the name")
    if hidden is None and not _simple(s.dtype):
        hidden = _foreign(head.tolist(), "the series")
    if hidden is not None:
        return "\n".join([*lines, hidden])
    with _pandas_options(loaded("pandas")):
        shown = head.to_string(max_rows=max_rows)
    return "\n".join([*lines, _head_text(shown, len(s), len(head))])


def _pandas_index(index: Any) -> str:
    lines = [f"index: {_index_line(index)}"]
    if type(index).__name__ != "RangeIndex":
        labels = index[:MAX_LABELS].tolist()
        more = ", …" if len(index) > len(labels) else ""
        lines.append("first labels: " + ", ".join(text(x, MAX_CELL_CHARS) for x in labels) + more)
    return "\n".join(lines)


def _polars(value: Any, max_rows: int, frame: bool) -> str:
    if frame:
        rows, cols = value.shape
        schema = list(value.schema.items())
        names, dtypes = [n for n, _ in schema], [d for _, d in schema]
        lines = [
            f"shape: {rows} rows × {cols} columns",
            f"estimated size: {size_text(value.estimated_size())}",
            *_dtypes(names[:MAX_COLUMNS], dtypes[:MAX_COLUMNS], cols),
        ]
    else:
        rows, dtypes = len(value), [value.dtype]
        lines = [
            f"length: {rows}, dtype: {value.dtype}, name: {text(value.name, MAX_CELL_CHARS)}",
            f"estimated size: {size_text(value.estimated_size())}",
        ]
    if any("Object" in str(d) for d in dtypes):  # Python objects, printed with their repr
        return "\n".join([*lines, ROWS_HIDDEN.format(where="a column", kind="Python object")])
    head = value.head(max_rows)
    with loaded("polars").Config(  # type: ignore[union-attr]
        tbl_rows=max_rows,
        tbl_cols=MAX_HEAD_COLUMNS,
        fmt_str_lengths=MAX_CELL_CHARS,
        tbl_hide_dataframe_shape=True,
    ):
        shown = str(head)
    return "\n".join([*lines, _head_text(shown, rows, len(head))])


def _numpy(a: Any) -> str:
    head = f"shape: {shape_text(a.shape)}, dtype: {a.dtype}, size: {size_text(a.nbytes)}"
    if a.dtype.hasobject and (a.size > MAX_ARRAY_VALUES or not all(map(plain, a.flat))):
        return f"{head}\nvalues not shown: it holds Python objects, whose text is their own code"
    values = loaded("numpy").array2string(  # type: ignore[union-attr]
        a, threshold=MAX_ARRAY_VALUES, edgeitems=EDGE_ITEMS, max_line_width=LINE_WIDTH, formatter={}
    )
    return f"{head}\nvalues:\n{values}"
