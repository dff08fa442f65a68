"""An object of the person's namespace as budgeted text, for ``list_variables`` (one line)
and ``inspect_variable`` (a few lines), without running any of the person's code.

A value whose class is the person's is described by what can be read without calling
it: its type, where it lives, its class's docstring, and the attributes stored in its
``__dict__`` or slots (each shown by the same rules). Its ``repr``, ``len`` and
properties are never called: they are the person's code, and a repr that never
returns (or loops in C, where no signal reaches it) would hold the kernel for good.
Built-in values, containers read through their base type's methods
(:mod:`agent_magics.jupyter.kernel.plain`), functions and classes (read from their code objects
and class dicts, :mod:`agent_magics.jupyter.kernel.signature`) and numpy,
pandas and polars values (:mod:`agent_magics.jupyter.kernel.frames`) are shown in full.
"""

from __future__ import annotations

import types
from collections import deque
from typing import Any

from agent_magics.jupyter.kernel import frames, libraries, lookup
from agent_magics.jupyter.kernel.plain import cut, known_scalar, text
from agent_magics.jupyter.kernel.signature import (
    callable_line,
    doc_line,
    function_doc,
    function_module,
)
from agent_magics.jupyter.kernel.static import (
    base_of,
    class_dict,
    class_doc,
    class_module,
    class_qualname,
    module_dict,
    module_name,
    mro,
    str_item,
    type_name,
)

__all__ = ["MAX_OUTPUT_CHARS", "budget", "describe", "is_own", "summary", "type_name"]

MAX_OUTPUT_CHARS = 8_000  # one inspect_variable answer; longer text is cut with a note
MAX_REPR_CHARS = 1_500  # a scalar's text
MAX_VALUE_CHARS = 60  # the short value a list_variables line shows
MAX_ITEMS = 10  # first items shown of a dict, list, tuple or set
MAX_ITEM_CHARS = 200  # one of those items
MAX_ATTRIBUTES = 20  # attributes of an instance shown
MAX_NAMES = 5  # attribute names on a list_variables line

_SEQUENCES = (list, tuple, set, frozenset, deque)
NOT_CALLED = (
    "its repr is not called here, as it could run the user's code; "
    "run_python can show it, under the user's approval"
)


def is_own(value: Any) -> bool:
    """Whether ``value`` belongs to this extension (left out of every listing)."""
    cls = type(value)
    module = module_name(value) if issubclass(cls, types.ModuleType) else class_module(cls)
    return module.split(".")[0] == "agent_magics"


def _length(value: Any) -> int | None:
    cls = type(value)
    if issubclass(cls, dict):
        return dict.__len__(value)
    base = base_of(cls, _SEQUENCES)
    return None if base is None else int(base.__len__(value))


def summary(value: Any) -> str:
    """One line after the type in ``list_variables``: shape and size, or a short value."""
    try:
        known = libraries.describe_line(value)
    except Exception as exc:  # a broken frame or array: say so, list the rest
        return f"<could not describe: {type(exc).__name__}>"
    if known is not None:
        return known
    if known_scalar(value):
        return text(value, MAX_VALUE_CHARS)
    size = _length(value)
    if size is not None:
        return f"len {size}"
    if issubclass(type(value), types.ModuleType):
        return module_name(value)
    line = callable_line(value)
    if line is not None:
        kind, name, signature = line
        short = name.rsplit(".", 1)[-1]
        return f"class {short}{signature}" if kind == "class" else f"{short}{signature}"
    names = _attribute_names(value)
    return f"attributes: {', '.join(names)}" if names else "object (repr not called)"


def _attribute_names(value: Any) -> list[str]:
    own = lookup.instance_dict(value) or {}
    names = [n for n in dict.keys(own) if type(n) is str and not n.startswith("_")]
    return names[:MAX_NAMES] + (["…"] if len(names) > MAX_NAMES else [])


def describe(name: str, value: Any, max_rows: int) -> str:
    """What ``inspect_variable`` answers: the type, then what matters for that kind."""
    head = f"{name}: {type_name(value)}"
    try:
        known = frames.describe(value, max_rows)
    except Exception as exc:  # the library raised on a broken frame or array
        known = f"<could not describe: {type(exc).__name__}: {str(exc)[:MAX_ITEM_CHARS]}>"
    if known is not None:
        body = known
    elif issubclass(type(value), types.ModuleType):
        body = _module(value)
    elif callable_line(value) is not None:
        body = _callable(value)
    elif _length(value) is not None:
        body = _container(value)
    elif known_scalar(value):
        body = text(value, MAX_REPR_CHARS)
    else:
        body = _instance(value)
    return budget(f"{head}\n{body}")


def _module(module: types.ModuleType) -> str:
    names = module_dict(module)
    lines = [f"module {module_name(module)}"]
    found, version = str_item(names, "__version__")
    if found and type(version) is str:
        lines.append(f"version: {cut(version, MAX_VALUE_CHARS)}")
    found, where = str_item(names, "__file__")
    if found and type(where) is str:
        lines.append(f"file: {cut(where, MAX_ITEM_CHARS)}")
    doc = doc_line(str_item(names, "__doc__")[1])
    return "\n".join([*lines, doc] if doc else lines)


def _callable(value: Any) -> str:
    kind, name, signature = callable_line(value) or ("?", "?", "")
    line = f"{kind} {name}{signature}"
    if kind == "class":
        bases = type.__dict__["__bases__"].__get__(value)
        shown = ", ".join(class_qualname(b) for b in bases if b is not object)
        line += f", bases: {shown}" if shown else ""
    module = function_module(value)
    if module is not None and module not in ("__main__", "builtins"):
        line += f"  (from {module})"
    doc = function_doc(value)
    return f"{line}\n{doc}" if doc else line


def _container(value: Any) -> str:
    size = _length(value) or 0
    lines = [f"length: {size}"]
    if issubclass(type(value), dict):
        for key, item in _first(dict.items(value)):
            k, v = text(key, MAX_VALUE_CHARS), text(item, MAX_ITEM_CHARS)
            lines.append(f"  {k}: {type_name(item)} {v}")
    else:
        base = base_of(type(value), _SEQUENCES)
        for item in _first(base.__iter__(value)):
            lines.append(f"  {type_name(item)} {text(item, MAX_ITEM_CHARS)}")
    shown = len(lines) - 1
    if size > shown:
        lines.append(f"  … {size - shown} more")
    return "\n".join(lines)


def _first(items: Any) -> list[Any]:
    found: list[Any] = []
    for entry in items:
        if len(found) == MAX_ITEMS:
            break
        found.append(entry)
    return found


def _instance(value: Any) -> str:
    cls = type(value)
    lines = [f"an instance of {type_name(value)} at {hex(id(value))}; {NOT_CALLED}"]
    doc = doc_line(class_doc(cls))
    if doc:
        lines.append(f"class doc: {doc}")
    own = lookup.instance_dict(value)
    stored = [(n, v) for n, v in dict.items(own or {}) if type(n) is str]
    stored += _slots(value)
    if stored:
        lines.append(f"attributes ({len(stored)}):")
        for name, item in stored[:MAX_ATTRIBUTES]:
            lines.append(f"  {name}: {type_name(item)} {text(item, MAX_ITEM_CHARS)}")
        if len(stored) > MAX_ATTRIBUTES:
            lines.append(f"  … {len(stored) - MAX_ATTRIBUTES} more")
    computed = _computed(cls)
    if computed:
        lines.append("computed when read, so not read here: " + ", ".join(computed))
    return "\n".join(lines)


def _slots(value: Any) -> list[tuple[str, Any]]:
    """Values in ``__slots__`` (member descriptors read a field: no code runs)."""
    found = []
    for klass in mro(type(value))[:-1]:
        for name, entry in class_dict(klass).items():
            slot = type(entry) is types.MemberDescriptorType and type(name) is str
            if slot and not name.startswith("__"):
                try:
                    found.append((name, entry.__get__(value, type(value))))
                except AttributeError:
                    continue  # a slot never set
    return found


def _computed(cls: type) -> list[str]:
    """Names of the class's properties and other data descriptors of its own."""
    names: list[str] = []
    for klass in mro(cls)[:-1]:
        if class_module(klass) == "builtins":
            continue
        for name, entry in class_dict(klass).items():
            read = lookup.read_without_code(entry, klass) or not lookup.is_data_descriptor(entry)
            if type(name) is str and not name.startswith("__") and not read and name not in names:
                names.append(name)
    return names[:MAX_ATTRIBUTES]


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
