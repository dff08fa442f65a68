"""numpy, pandas and polars values recognised without importing the libraries.

A value is one of theirs only when its library is already in ``sys.modules`` and its
type is exactly the library's own (a subclass may override how it prints). Even then a
pandas object can carry the person's code: an extension dtype of their own, a time zone
class, objects in an ``object`` column. :func:`trusted` checks the dtypes before any of
the library's methods are called; the cells a printout would show are checked by
:mod:`agent_magics.jupyter.kernel.frames`.
"""

from __future__ import annotations

import datetime
from typing import Any

from agent_magics.jupyter.kernel.static import from_module, library_name, loaded

_TZ_MODULES = ("zoneinfo", "pytz", "dateutil")
_KINDS = (
    ("pandas", ("DataFrame", "Series")),
    ("polars", ("DataFrame", "Series")),
    ("numpy", ("ndarray",)),
)


def kind(value: Any) -> str | None:
    """``pandas.DataFrame``, ``pandas.Index``, ``numpy.ndarray``..., or None."""
    cls = type(value)
    for top, names in _KINDS:
        if loaded(top) is None:
            continue
        for name in names:
            if cls is library_name(top, name):
                return f"{top}.{name}"
    index = library_name("pandas", "Index")
    if isinstance(index, type) and issubclass(cls, index) and from_module(cls, "pandas"):
        return "pandas.Index"  # RangeIndex, MultiIndex... are pandas' own
    return None


def trusted_tz(tz: Any) -> bool:
    """A time zone whose text the standard library, pytz or dateutil make."""
    if tz is None or type(tz) is datetime.timezone:
        return True
    return any(from_module(type(tz), top) for top in _TZ_MODULES)


def trusted_dtype(dtype: Any) -> bool:
    """A numpy dtype, or one of pandas' own whose text and methods are pandas' code."""
    cls = type(dtype)
    if from_module(cls, "numpy"):
        return True
    if not from_module(cls, "pandas"):
        return False
    if cls is library_name("pandas", "DatetimeTZDtype"):
        return trusted_tz(dtype.tz)
    if cls is library_name("pandas", "SparseDtype"):
        return trusted_dtype(dtype.subtype) and known_scalar(dtype.fill_value)
    if cls is library_name("pandas", "ArrowDtype"):
        return from_module(type(dtype.pyarrow_dtype), "pyarrow")
    return True


def trusted(value: Any, found: str) -> bool:
    """Whether every dtype of ``value`` (of kind ``found``) is a trusted one."""
    if found == "numpy.ndarray":
        return from_module(type(value.dtype), "numpy")
    if not found.startswith("pandas."):
        return True  # polars holds no Python code but in Object columns (not printed)
    if found == "pandas.DataFrame":
        dtypes = value.dtypes.tolist()
        return all(map(trusted_dtype, dtypes)) and _trusted_index(value.columns)
    if found == "pandas.Index":
        return _trusted_index(value)
    return trusted_dtype(value.dtype) and _trusted_index(value.index)


def _trusted_index(index: Any) -> bool:
    levels = index.levels if kind(index) == "pandas.Index" and hasattr(index, "levels") else []
    return trusted_dtype(index.dtype) and all(trusted_dtype(level.dtype) for level in levels)


def known_scalar(value: Any) -> bool:
    """A numpy or pandas scalar, or a dtype, whose repr is the library's own code."""
    cls = type(value)
    numpy = loaded("numpy")
    if numpy is not None and from_module(cls, "numpy"):
        if issubclass(cls, numpy.generic):
            return not value.dtype.hasobject
        return issubclass(cls, numpy.dtype)
    if from_module(cls, "polars.datatypes"):
        return True
    if loaded("pandas") is None or not from_module(cls, "pandas"):
        return False
    if cls is library_name("pandas", "Timestamp"):
        return trusted_tz(value.tzinfo)
    for name in ("Timedelta", "Period", "NaT", "NA"):
        known = library_name("pandas", name)
        if cls is known or cls is type(known):
            return True
    return trusted_dtype(value) and issubclass(cls, _extension_dtype())


def _extension_dtype() -> type:
    api = library_name("pandas", "api")
    base = getattr(getattr(api, "extensions", None), "ExtensionDtype", None)
    return base if isinstance(base, type) else type(None)


def size_text(n: int) -> str:
    """``n`` bytes for people: ``305.2 MiB``."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


def shape_text(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(n) for n in shape) + ("," if len(shape) == 1 else "") + ")"


def pandas_bytes(value: Any) -> int:
    used = value.memory_usage(deep=False)
    return int(used.sum()) if hasattr(used, "sum") else int(used)


def summary(value: Any, found: str) -> str:
    """Shape and size on one line, for a value of kind ``found`` that is trusted."""
    if found == "pandas.DataFrame":
        return f"{shape_text(value.shape)}, {size_text(pandas_bytes(value))}"
    if found in ("pandas.Series", "pandas.Index"):
        return f"len {len(value)}, {value.dtype}, {size_text(pandas_bytes(value))}"
    if found == "polars.DataFrame":
        return f"{shape_text(value.shape)}, {size_text(value.estimated_size())}"
    if found == "polars.Series":
        return f"len {len(value)}, {value.dtype}, {size_text(value.estimated_size())}"
    return f"{shape_text(value.shape)} {value.dtype}, {size_text(value.nbytes)}"


def describe_line(value: Any) -> str | None:
    """``summary`` for a known, trusted value; a sentence for a known one that carries
    the person's code; None for anything else."""
    found = kind(value)
    if found is None:
        return None
    if not trusted(value, found):
        return "not described: a dtype or time zone of it is the person's own code"
    return summary(value, found)
