"""What can be shown of a value without running the person's code.

``repr``, ``len``, ``isinstance`` and attribute reads all reach code a class can define
(``__repr__``, ``__len__``, a ``__class__`` property, a metaclass ``__getattribute__``),
and a repr that never returns, or loops in C holding the GIL, cannot be interrupted from
here. So a value is only ever looked at through its type (``type(value)`` runs nothing)
and through code this extension trusts:

* the built-in scalars (``int``, ``str``, ``datetime``...) whose exact type is known,
  shown with their own repr;
* the built-in containers, read through the base type's own methods (``dict.items``,
  ``list.__len__``), so a subclass's overrides do not run, their items shown by the same
  rules;
* numpy, pandas and polars values of the libraries' own exact types
  (:mod:`agent_magics.jupyter.kernel.frames`);
* anything else as its type's name: ``<mymodule.Account object>``.

A type's name, module and docstring are read through ``type``'s own descriptors, which
a metaclass cannot replace.
"""

from __future__ import annotations

import datetime
import decimal
import types
from collections import deque
from typing import Any

from agent_magics.jupyter.kernel import libraries
from agent_magics.jupyter.kernel.static import (
    base_of,
    class_dict,
    class_name,
    class_qualname,
    module_name,
    mro,
    str_item,
    type_name,
)

MAX_ITEMS = 10  # first items shown of a container
MAX_DEPTH = 3  # containers inside containers shown before "…"
MAX_INT_BITS = 10_000  # about 3000 digits: longer ints are described by their size

SCALARS = frozenset(
    {
        int,
        float,
        complex,
        bool,
        str,
        bytes,
        bytearray,
        type(None),
        type(...),
        range,
        decimal.Decimal,
        datetime.date,
        datetime.timedelta,
    }
)
_WITH_TZ = (datetime.datetime, datetime.time)
_SEQUENCES: dict[type, tuple[str, str]] = {
    list: ("[", "]"),
    tuple: ("(", ")"),
    set: ("{", "}"),
    frozenset: ("frozenset({", "})"),
    deque: ("deque([", "])"),
}


def cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def known_scalar(value: Any) -> bool:
    """Whether ``value`` is a scalar whose repr is the library's own (no person's code)."""
    cls = type(value)
    if cls in SCALARS:
        return True
    if cls in _WITH_TZ:
        return libraries.trusted_tz(value.tzinfo)  # an exact datetime: its own tzinfo
    return libraries.known_scalar(value)


def plain(value: Any, depth: int = 1) -> bool:
    """A known scalar, or a tuple of them (a multi-index label): safe to hand to a
    library that will call its ``str``."""
    if type(value) is tuple and depth > 0:
        return all(plain(v, depth - 1) for v in value)
    return known_scalar(value)


def text(value: Any, limit: int, depth: int = MAX_DEPTH) -> str:
    """``value`` as short text, at most ``limit`` characters, no person's code run."""
    return cut(_text(value, limit, depth), limit)


def _text(value: Any, limit: int, depth: int) -> str:
    cls = type(value)
    if cls is str or cls is bytes or cls is bytearray:
        return repr(value[: limit + 1])
    if cls is int and value.bit_length() > MAX_INT_BITS:
        return f"<int of about {int(value.bit_length() * 0.30103)} digits>"
    if known_scalar(value):
        try:
            return repr(value)
        except ValueError as exc:  # int beyond sys.get_int_max_str_digits()
            return f"<int: {exc}>"
    if issubclass(cls, dict):
        return _mapping(value, cls, limit, depth)
    sequence = base_of(cls, _SEQUENCES)
    if sequence is not None:
        return _sequence(value, cls, sequence, limit, depth)
    return short(value)


def short(value: Any) -> str:
    """What stands for a value whose contents are not shown: its kind and type."""
    cls = type(value)
    if issubclass(cls, types.ModuleType):
        return f"<module {module_name(value)}>"
    if issubclass(cls, type):
        return f"<class {class_name(value)}>"
    known = libraries.describe_line(value)
    if known is not None:
        return f"<{type_name(value)} {known}>"
    if cls is types.FunctionType:
        name = value.__qualname__
        return f"<function {name if type(name) is str else '?'}>"
    return f"<{type_name(value)} object>"


def _named(cls: type, base: type, body: str) -> str:
    """A subclass's items shown with its name: ``Counter({'a': 1})``."""
    return body if cls is base else f"{class_qualname(cls)}({body})"


def _mapping(value: Any, cls: type, limit: int, depth: int) -> str:
    if depth <= 0:
        return "{…}"
    parts: list[str] = []
    size, used = dict.__len__(value), 0
    for key, item in dict.items(value):
        if len(parts) == MAX_ITEMS or used > limit:
            break
        part = f"{_text(key, limit, depth - 1)}: {_text(item, limit, depth - 1)}"
        parts.append(part)
        used += len(part) + 2
    more = ", …" if size > len(parts) else ""
    return _named(cls, dict, "{" + ", ".join(parts) + more + "}")


def _sequence(value: Any, cls: type, base: Any, limit: int, depth: int) -> str:
    opening, closing = _SEQUENCES[base]
    if depth <= 0:
        return opening + "…" + closing
    fields = _fields(cls) if base is tuple else None
    parts: list[str] = []
    size, used = base.__len__(value), 0
    for index, item in enumerate(base.__iter__(value)):
        if len(parts) == MAX_ITEMS or used > limit:
            break
        part = _text(item, limit, depth - 1)
        if fields is not None and index < len(fields):
            part = f"{fields[index]}={part}"
        parts.append(part)
        used += len(part) + 2
    more = ", …" if size > len(parts) else ""
    body = ", ".join(parts) + more
    if base is tuple and size == 1 and not more and fields is None:
        body += ","
    if fields is not None:
        return f"{class_qualname(cls)}({body})"
    return _named(cls, base, opening + body + closing)


def _fields(cls: type) -> tuple[str, ...] | None:
    """A named tuple's field names, read from its class (``_fields``)."""
    for klass in mro(cls):
        found, names = str_item(class_dict(klass), "_fields")
        if found:
            ok = type(names) is tuple and all(type(n) is str for n in names)
            return names if ok else None
    return None
