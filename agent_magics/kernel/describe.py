"""An object of the person's namespace as budgeted text, for ``list_variables`` (one line)
and ``inspect_variable`` (a few lines).

Nothing here imports pandas, polars or numpy: a value is recognised by its type's module
(:mod:`agent_magics.kernel.frames`), and those libraries are only used through the module
the person already imported. Every repr is capped (:class:`reprlib.Repr` caps containers
and strings before building their text), and a repr that raises is described instead of
ending the turn.
"""

from __future__ import annotations

import inspect
import reprlib
import types
from typing import Any

from agent_magics.kernel import frames

MAX_OUTPUT_CHARS = 8_000  # one inspect_variable answer; longer text is cut with a note
MAX_REPR_CHARS = 1_500  # the repr of a value of no known kind
MAX_VALUE_CHARS = 60  # the short value a list_variables line shows
MAX_ITEMS = 10  # first items shown of a dict, list, tuple or set
MAX_ITEM_CHARS = 200  # one of those items
MAX_DOC_CHARS = 200  # the first docstring line

_CONTAINERS = (dict, list, tuple, set, frozenset)
_SCALARS = (int, float, complex, bool, str, bytes, type(None))
_CALLABLES = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.BuiltinMethodType,
)


class _Repr(reprlib.Repr):
    """:class:`reprlib.Repr` that says why a repr failed instead of hiding it."""

    def repr_instance(self, x: Any, level: int) -> str:
        try:
            text = repr(x)
        except Exception as exc:  # the person's __repr__ may raise anything
            return f"<repr failed: {type(exc).__name__}: {_cut(str(exc), MAX_ITEM_CHARS)}>"
        return _cut(text, self.maxother)


def _capped_repr(limit: int) -> reprlib.Repr:
    r = _Repr()
    r.maxlevel = 3
    r.maxdict = r.maxlist = r.maxtuple = r.maxset = r.maxfrozenset = r.maxdeque = MAX_ITEMS
    r.maxarray = MAX_ITEMS
    r.maxstring = r.maxother = r.maxlong = limit
    return r


_REPR = _capped_repr(MAX_REPR_CHARS)
_ITEM_REPR = _capped_repr(MAX_ITEM_CHARS)
_SHORT_REPR = _capped_repr(MAX_VALUE_CHARS)


def safe_repr(value: Any, r: reprlib.Repr = _REPR) -> str:
    """``value``'s capped repr, or a sentence saying why there is none."""
    try:
        return r.repr(value)
    except Exception as exc:  # the person's __repr__ may raise anything
        return f"<repr failed: {type(exc).__name__}: {_cut(str(exc), MAX_ITEM_CHARS)}>"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def type_name(value: Any) -> str:
    """``DataFrame`` as ``pandas.DataFrame``: the shortest public name of the type."""
    cls = type(value)
    module = getattr(cls, "__module__", "") or ""
    name = getattr(cls, "__qualname__", cls.__name__)
    if module == "builtins":
        return str(name)
    top = module.split(".")[0]
    return f"{top}.{name}" if frames.exported_by(top, name, cls) else f"{module}.{name}"


def is_own(value: Any) -> bool:
    """Whether ``value`` belongs to this extension (left out of every listing)."""
    if isinstance(value, types.ModuleType):
        return value.__name__.split(".")[0] == "agent_magics"
    module = getattr(type(value), "__module__", "") or ""
    return module.split(".")[0] == "agent_magics"


def doc_line(value: Any) -> str:
    """The first non-empty line of ``value``'s docstring, capped ("" when none)."""
    try:
        doc = inspect.getdoc(value) or ""
    except Exception:
        return ""
    first = next((line.strip() for line in doc.splitlines() if line.strip()), "")
    return _cut(first, MAX_DOC_CHARS)


def signature(value: Any) -> str:
    """``(a, b=1)`` or ``(…)`` when Python cannot tell."""
    try:
        return _cut(str(inspect.signature(value)), MAX_ITEM_CHARS)
    except (TypeError, ValueError):
        return "(…)"


def summary(value: Any) -> str:
    """One line after the type in ``list_variables``: shape and size, or a short value."""
    try:
        known = frames.summary(value)
    except Exception as exc:  # a broken frame or array: say so, list the rest
        return f"<could not describe: {type(exc).__name__}>"
    if known is not None:
        return known
    if isinstance(value, _SCALARS):
        return safe_repr(value, _SHORT_REPR)
    if isinstance(value, _CONTAINERS):
        return f"len {len(value)}"
    if isinstance(value, types.ModuleType):
        return value.__name__
    if isinstance(value, type):
        return f"class {value.__name__}{signature(value)}"
    if isinstance(value, _CALLABLES):
        return f"{getattr(value, '__name__', '?')}{signature(value)}"
    return safe_repr(value, _SHORT_REPR)


def describe(name: str, value: Any, max_rows: int) -> str:
    """What ``inspect_variable`` answers: the type, then what matters for that kind."""
    head = f"{name}: {type_name(value)}"
    try:
        known = frames.describe(value, max_rows)
    except Exception as exc:  # a broken frame or array: fall back to its capped repr
        known = f"<could not describe: {type(exc).__name__}: {_cut(str(exc), MAX_ITEM_CHARS)}>"
        known += "\n" + safe_repr(value)
    if known is not None:
        body = known
    elif isinstance(value, types.ModuleType):
        body = _module(value)
    elif isinstance(value, (type, *_CALLABLES)):
        body = _callable(value)
    elif isinstance(value, _CONTAINERS):
        body = _container(value)
    else:
        body = safe_repr(value)
    return budget(f"{head}\n{body}")


def _module(module: types.ModuleType) -> str:
    lines = [f"module {module.__name__}"]
    version = getattr(module, "__version__", None)
    if isinstance(version, str):
        lines.append(f"version: {_cut(version, MAX_VALUE_CHARS)}")
    where = getattr(module, "__file__", None)
    if isinstance(where, str):
        lines.append(f"file: {_cut(where, MAX_ITEM_CHARS)}")
    doc = doc_line(module)
    return "\n".join([*lines, doc] if doc else lines)


def _callable(value: Any) -> str:
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", "?")
    if isinstance(value, type):
        bases = ", ".join(b.__name__ for b in value.__bases__ if b is not object)
        line = f"class {name}{signature(value)}" + (f", bases: {bases}" if bases else "")
    else:
        prefix = "async def" if inspect.iscoroutinefunction(value) else "def"
        line = f"{prefix} {name}{signature(value)}"
    module = getattr(value, "__module__", None)
    if isinstance(module, str) and module not in ("__main__", "builtins"):
        line += f"  (from {module})"
    doc = doc_line(value)
    return f"{line}\n{doc}" if doc else line


def _container(value: Any) -> str:
    lines = [f"length: {len(value)}"]
    shown = 0
    if isinstance(value, dict):
        for key, item in value.items():
            if shown == MAX_ITEMS:
                break
            k, v = safe_repr(key, _SHORT_REPR), safe_repr(item, _ITEM_REPR)
            lines.append(f"  {k}: {type_name(item)} {v}")
            shown += 1
    else:
        for item in value:
            if shown == MAX_ITEMS:
                break
            lines.append(f"  {type_name(item)} {safe_repr(item, _ITEM_REPR)}")
            shown += 1
    if len(value) > shown:
        lines.append(f"  … {len(value) - shown} more")
    return "\n".join(lines)


def budget(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, with a note saying how much was left out."""
    if len(text) <= limit:
        return text
    note = (
        f"\n… {{}} more characters left out (the answer is cut at {limit}; ask for fewer "
        "rows or an attribute)"
    )
    keep = limit - len(note.format(len(text)))
    return text[:keep] + note.format(len(text) - keep)
