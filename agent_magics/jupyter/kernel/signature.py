"""A function's signature and docstring, read from its code object.

``inspect.signature`` follows ``__wrapped__`` and ``__signature__`` (attribute reads on
the person's objects), looks at a class's metaclass ``__call__``, and formats default
values and annotations with their ``repr``: all of it can run the person's code. Here a
plain function's parameters come from ``__code__``, its defaults are shown by
:func:`agent_magics.jupyter.kernel.plain.text`, and annotations only when they are classes,
strings or ``typing`` forms of those. A class's signature is its ``__init__``'s (or
``__new__``'s), found in the class dicts along its MRO.
"""

from __future__ import annotations

import inspect
import sys
import types
import typing
from typing import Any

from agent_magics.jupyter.kernel.plain import cut, known_scalar, text
from agent_magics.jupyter.kernel.static import (
    class_dict,
    class_doc,
    class_module,
    class_qualname,
    from_module,
    mro,
    str_item,
)

MAX_DEFAULT_CHARS = 60  # one default value
MAX_SIGNATURE_CHARS = 200
MAX_DOC_CHARS = 200  # the first docstring line
UNKNOWN = "(…)"
_VARARGS, _VARKEYWORDS, _COROUTINE = 0x04, 0x08, 0x80
_ANNOTATIONS_RUN_CODE = sys.version_info >= (3, 14)  # __annotations__ calls __annotate__
_BUILTIN_CALLABLES = (
    types.BuiltinFunctionType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.MethodWrapperType,
    types.ClassMethodDescriptorType,
)


def doc_line(doc: Any) -> str:
    """The first non-empty line of a docstring, capped ("" when there is none)."""
    if type(doc) is not str:
        return ""
    lines = inspect.cleandoc(doc).splitlines()
    return cut(next((line.strip() for line in lines if line.strip()), ""), MAX_DOC_CHARS)


def is_async(fn: types.FunctionType) -> bool:
    return bool(fn.__code__.co_flags & _COROUTINE)


def function_signature(fn: types.FunctionType, bound: bool = False) -> str:
    """``(x: float, factor: float = 2.0) -> float``; ``bound`` leaves out the first."""
    code = fn.__code__
    names = code.co_varnames
    positional = names[: code.co_argcount]
    keyword = names[code.co_argcount : code.co_argcount + code.co_kwonlyargcount]
    rest = code.co_argcount + code.co_kwonlyargcount
    star = names[rest] if code.co_flags & _VARARGS else None
    stars = names[rest + (star is not None)] if code.co_flags & _VARKEYWORDS else None
    defaults = fn.__defaults__ if type(fn.__defaults__) is tuple else ()
    keyword_defaults = fn.__kwdefaults__ if type(fn.__kwdefaults__) is dict else {}
    notes = _annotations(fn)
    first_default = len(positional) - len(defaults)
    parts: list[str] = []
    for index, name in enumerate(positional):
        given = index >= first_default
        default = (True, defaults[index - first_default]) if given else (False, None)
        parts.append(_parameter(name, notes, default))
        if index + 1 == code.co_posonlyargcount:
            parts.append("/")
    if star is not None:
        parts.append("*" + _parameter(star, notes, (False, None)))
    elif keyword:
        parts.append("*")
    parts += [_parameter(n, notes, str_item(keyword_defaults, n)) for n in keyword]
    if stars is not None:
        parts.append("**" + _parameter(stars, notes, (False, None)))
    if bound and parts and parts[0] not in ("/", "*") and not parts[0].startswith("*"):
        parts.pop(0)
        if parts and parts[0] == "/":
            parts.pop(0)
    found, returns = str_item(notes, "return")
    arrow = f" -> {_annotation(returns)}" if found else ""
    return cut(f"({', '.join(parts)}){arrow}", MAX_SIGNATURE_CHARS)


def _parameter(name: str, notes: dict[str, Any], default: tuple[bool, Any]) -> str:
    found, note = str_item(notes, name)
    has_default, value = default
    shown = text(value, MAX_DEFAULT_CHARS) if has_default else ""
    if found:
        return f"{name}: {_annotation(note)}" + (f" = {shown}" if has_default else "")
    return name + (f"={shown}" if has_default else "")


def _annotations(fn: types.FunctionType) -> dict[str, Any]:
    if _ANNOTATIONS_RUN_CODE:
        return {}
    notes = fn.__annotations__
    return notes if type(notes) is dict else {}


def _annotation(note: Any, depth: int = 3) -> str:
    """A class's name, a string as written, a ``typing`` form of those; else ``…``."""
    return _annotation_text(note, depth) or "…"


def _annotation_text(note: Any, depth: int, strict: bool = False) -> str | None:
    """``strict``: inside a ``typing`` form, whose repr reads a class's name through its
    metaclass, only classes of plain ``type`` are shown."""
    cls = type(note)
    if note is None:
        return "None"
    if cls is str:
        return str(note)
    if cls is type or (issubclass(cls, type) and not strict):
        module = class_module(note)
        qualname = class_qualname(note)
        return qualname if module == "builtins" else f"{module}.{qualname}"
    generic = cls is types.GenericAlias or cls is types.UnionType or from_module(cls, "typing")
    if depth > 0 and generic and all(_plain_argument(a, depth - 1) for a in typing.get_args(note)):
        return repr(note).replace("typing.", "")
    return None


def _plain_argument(arg: Any, depth: int) -> bool:
    return known_scalar(arg) or _annotation_text(arg, depth, strict=True) is not None


def class_signature(cls: type) -> str:
    """The signature of calling ``cls``: its ``__init__``'s, else its ``__new__``'s."""
    for name in ("__init__", "__new__"):
        for klass in mro(cls):
            found, value = str_item(class_dict(klass), name)
            if not found:
                continue
            if type(value) is staticmethod:
                value = value.__func__
            if type(value) is types.FunctionType:
                return function_signature(value, bound=True)
            if klass is not object:
                return UNKNOWN  # written in C: its text signature is not read
            break
    return "()"


def builtin_signature(value: Any) -> str:
    """A built-in's text signature (``__text_signature__``, set by C code)."""
    found = value.__text_signature__
    if type(found) is not str:
        return UNKNOWN
    for prefix in ("$self, ", "$module, ", "$type, ", "$cls, ", "$self", "$module", "$type"):
        found = found.replace(prefix, "", 1) if found.startswith("(" + prefix) else found
    return cut(found.replace("($", "(", 1), MAX_SIGNATURE_CHARS)


def callable_line(value: Any) -> tuple[str, str, str] | None:
    """``(kind, name, signature)`` of a plain function, a method of one, a class or a
    built-in function; None for any other value."""
    cls = type(value)
    if cls is types.MethodType and type(value.__func__) is types.FunctionType:
        fn = value.__func__
        kind = "async def" if is_async(fn) else "def"
        return kind, _name(fn.__qualname__), function_signature(fn, bound=True)
    if cls is types.FunctionType:
        kind = "async def" if is_async(value) else "def"
        return kind, _name(value.__qualname__), function_signature(value)
    if issubclass(cls, type):
        return "class", class_qualname(value), class_signature(value)
    if cls in _BUILTIN_CALLABLES:
        return "built-in", _name(value.__name__), builtin_signature(value)
    return None


def _name(name: Any) -> str:
    return name if type(name) is str else "?"


def function_doc(value: Any) -> str:
    """The first docstring line of a value :func:`callable_line` knows."""
    cls = type(value)
    if cls is types.MethodType:
        value = value.__func__
    if issubclass(cls, type):
        return doc_line(class_doc(value))
    return doc_line(value.__doc__)


def function_module(value: Any) -> str | None:
    cls = type(value)
    if cls is types.MethodType:
        value = value.__func__
    if issubclass(cls, type):
        return class_module(value)
    try:
        module = value.__module__  # a plain function's or a built-in's own field
    except AttributeError:
        return None
    return module if type(module) is str else None
