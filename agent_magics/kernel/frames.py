"""pandas and polars frames and series and numpy arrays, described without importing them.

A value is one of these only when its library is already in ``sys.modules`` (the person
imported it, or the value could not exist); this module never imports pandas, polars or
numpy. What is read is cheap on any size: shape, dtypes, the first rows, and memory as
the library counts it without walking Python objects (pandas ``memory_usage(deep=False)``,
polars ``estimated_size()``, numpy ``nbytes``).
"""

from __future__ import annotations

import sys
from typing import Any

MAX_COLUMNS = 50  # columns whose dtype is listed
MAX_HEAD_COLUMNS = 20  # columns shown in the first rows (wider frames show "...")
MAX_CELL_CHARS = 40  # one cell of the first rows
MAX_ARRAY_VALUES = 100  # a numpy array with more elements is summarised by numpy itself
EDGE_ITEMS = 3  # values numpy shows at each end of a summarised axis
LINE_WIDTH = 100  # numpy's line width


def loaded(top: str) -> Any:
    """The module ``top`` when it is already imported, else None (never imports it)."""
    return sys.modules.get(top)


def exported_by(top: str, name: str, cls: type) -> bool:
    """Whether the package ``top`` (already imported) names ``cls`` at its top level."""
    module = loaded(top)
    return module is not None and vars(module).get(name) is cls


def _kind(value: Any) -> tuple[str, Any] | None:
    """("pandas.DataFrame", pandas) and so on, or None for anything else."""
    for top, names in (
        ("pandas", ("DataFrame", "Series")),
        ("polars", ("DataFrame", "Series")),
        ("numpy", ("ndarray",)),
    ):
        module = loaded(top)
        if module is None:
            continue
        for name in names:
            cls = vars(module).get(name)
            if isinstance(cls, type) and isinstance(value, cls):
                return f"{top}.{name}", module
    return None


def is_frame(value: Any) -> bool:
    """Whether ``value`` is a pandas or polars DataFrame (whose columns are read by key)."""
    found = _kind(value)
    return found is not None and found[0].endswith(".DataFrame")


def size_text(n: int) -> str:
    """``n`` bytes for people: ``305.2 MiB``."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def summary(value: Any) -> str | None:
    """Shape and size on one line, or None when ``value`` is none of these kinds."""
    found = _kind(value)
    if found is None:
        return None
    kind, _ = found
    if kind == "pandas.DataFrame":
        return f"{_shape(value.shape)}, {size_text(_pandas_bytes(value))}"
    if kind == "pandas.Series":
        return f"len {len(value)}, {value.dtype}, {size_text(_pandas_bytes(value))}"
    if kind == "polars.DataFrame":
        return f"{_shape(value.shape)}, {size_text(value.estimated_size())}"
    if kind == "polars.Series":
        return f"len {len(value)}, {value.dtype}, {size_text(value.estimated_size())}"
    return f"{_shape(value.shape)} {value.dtype}, {size_text(value.nbytes)}"


def describe(value: Any, max_rows: int) -> str | None:
    """Several lines for ``inspect_variable``, or None when ``value`` is none of these."""
    found = _kind(value)
    if found is None:
        return None
    kind, module = found
    if kind == "pandas.DataFrame":
        return _pandas_frame(value, max_rows)
    if kind == "pandas.Series":
        return _pandas_series(value, max_rows)
    if kind == "polars.DataFrame":
        return _polars(value, max_rows, module, frame=True)
    if kind == "polars.Series":
        return _polars(value, max_rows, module, frame=False)
    return _numpy(value, module)


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def _pandas_bytes(value: Any) -> int:
    used = value.memory_usage(index=True, deep=False)
    return int(used.sum()) if hasattr(used, "sum") else int(used)


def _dtypes(pairs: list[tuple[Any, Any]], total: int) -> list[str]:
    lines = [f"columns ({total}):"]
    lines += [f"  {str(name)[:MAX_CELL_CHARS]}: {dtype}" for name, dtype in pairs]
    if total > len(pairs):
        lines.append(f"  … {total - len(pairs)} more columns")
    return lines


def _index(index: Any) -> str:
    kind = type(index).__name__
    if kind == "RangeIndex":
        return f"RangeIndex(start={index.start}, stop={index.stop}, step={index.step})"
    names = [n for n in index.names if n is not None]
    named = f", names {names}" if names else ""
    return f"{kind}, dtype {index.dtype}, {len(index)} entries{named}"


def _head_text(text: str, rows: int, shown: int) -> str:
    label = f"first {shown} rows" if shown < rows else f"all {rows} rows"
    return f"{label}:\n{text}" if shown else "no rows"


def _pandas_frame(df: Any, max_rows: int) -> str:
    rows, cols = df.shape
    dtypes = df.dtypes.iloc[:MAX_COLUMNS]
    lines = [
        f"shape: {rows} rows × {cols} columns",
        f"index: {_index(df.index)}",
        f"memory: {size_text(_pandas_bytes(df))} (object contents not counted)",
        *_dtypes(list(dtypes.items()), cols),
    ]
    head = df.head(max_rows)
    text = head.to_string(max_cols=MAX_HEAD_COLUMNS, max_colwidth=MAX_CELL_CHARS)
    return "\n".join([*lines, _head_text(text, rows, len(head))])


def _pandas_series(s: Any, max_rows: int) -> str:
    lines = [
        f"length: {len(s)}, dtype: {s.dtype}, name: {s.name!r}"[: MAX_CELL_CHARS * 4],
        f"index: {_index(s.index)}",
        f"memory: {size_text(_pandas_bytes(s))} (object contents not counted)",
    ]
    head = s.head(max_rows)
    text = head.to_string(max_rows=max_rows)
    return "\n".join([*lines, _head_text(text, len(s), len(head))])


def _polars(value: Any, max_rows: int, pl: Any, frame: bool) -> str:
    if frame:
        rows, cols = value.shape
        schema = list(value.schema.items())
        lines = [
            f"shape: {rows} rows × {cols} columns",
            f"estimated size: {size_text(value.estimated_size())}",
            *_dtypes(schema[:MAX_COLUMNS], cols),
        ]
    else:
        rows = len(value)
        lines = [
            f"length: {rows}, dtype: {value.dtype}, name: {value.name!r}"[: MAX_CELL_CHARS * 4],
            f"estimated size: {size_text(value.estimated_size())}",
        ]
    head = value.head(max_rows)
    with pl.Config(
        tbl_rows=max_rows,
        tbl_cols=MAX_HEAD_COLUMNS,
        fmt_str_lengths=MAX_CELL_CHARS,
        tbl_hide_dataframe_shape=True,
    ):
        text = str(head)
    return "\n".join([*lines, _head_text(text, rows, len(head))])


def _numpy(a: Any, np: Any) -> str:
    values = np.array2string(
        a, threshold=MAX_ARRAY_VALUES, edgeitems=EDGE_ITEMS, max_line_width=LINE_WIDTH
    )
    return "\n".join(
        [
            f"shape: {_shape(a.shape)}, dtype: {a.dtype}, size: {size_text(a.nbytes)}",
            f"values:\n{values}",
        ]
    )
