"""Reading ``obj.name`` and ``obj[key]`` the way Python would, without running any of the
person's code, or saying which code it would take.

``getattr`` runs properties, ``__getattr__``, ``__getattribute__`` and descriptors;
``obj[key]`` runs ``__getitem__`` and ``__missing__`` (a ``defaultdict`` inserts the
key); a dict lookup hashes the key and compares it with stored keys (their ``__eq__``).
So attributes are found as :func:`inspect.getattr_static` finds them, in the class dicts
along the MRO and in the instance's own ``__dict__`` (both walked item by item, see
:func:`~agent_magics.jupyter.kernel.static.str_item`); what Python would then hand to code
(a property, a custom descriptor, a missing name with ``__getattr__``) raises
:class:`_NeedsCode`. Keys are read only on dicts, lists and tuples whose lookup is the
built-in one, and on pandas and polars frames (the libraries' own code).
"""

from __future__ import annotations

import types
from collections import Counter, defaultdict
from typing import Any

from agent_magics.jupyter.kernel import libraries
from agent_magics.jupyter.kernel.plain import plain
from agent_magics.jupyter.kernel.static import (
    class_dict,
    class_module,
    from_module,
    module_dict,
    mro,
    str_item,
    type_name,
)

DATA_ATTRIBUTES = frozenset(
    {
        "columns",
        "dtype",
        "dtypes",
        "index",
        "name",
        "names",
        "nbytes",
        "ndim",
        "schema",
        "shape",
        "size",
    }
)
"""Attributes of pandas, polars and numpy values read with the library's own code."""
TRUSTED_MODULES = ("builtins", "datetime", "collections", "decimal", "numpy", "pandas", "polars")
"""Whose compiled accessors (``getset_descriptor``) are read as Python would."""
_C_BINDABLE = (
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.ClassMethodDescriptorType,
)
_MODULE_DICT = vars(types.ModuleType)["__dict__"]
_OBJECT_GETATTRIBUTE = object.__dict__["__getattribute__"]
_FACTORY = defaultdict.__dict__["default_factory"]


class _NeedsCode(Exception):
    """Reading it would run code; the message says whose."""


class _Missing(Exception):
    """There is nothing of that name or key."""


def _on_type(cls: type, name: str) -> tuple[bool, Any, type | None]:
    """``name`` in the class dicts along ``cls``'s MRO: (found, value, owner)."""
    for klass in mro(cls):
        found, value = str_item(class_dict(klass), name)
        if found:
            return True, value, klass
    return False, None, None


def _has(cls: type, name: str) -> bool:
    return _on_type(cls, name)[0]


def is_data_descriptor(value: Any) -> bool:
    cls = type(value)
    return _has(cls, "__set__") or _has(cls, "__delete__")


def _trusted_owner(owner: type | None) -> bool:
    module = class_module(owner) if owner is not None else "?"
    return any(module == m or module.startswith(m + ".") for m in TRUSTED_MODULES)


def instance_dict(obj: Any) -> dict[str, Any] | None:
    """``obj``'s own ``__dict__``, when its class did not replace the attribute."""
    found, entry, owner = _on_type(type(obj), "__dict__")
    if not found:
        return None
    if entry is _MODULE_DICT:
        return module_dict(obj)
    if not (
        type(entry) is types.GetSetDescriptorType
        and entry.__name__ == "__dict__"
        and entry.__objclass__ is owner
    ):
        return None  # a property or descriptor of the class's own
    value = entry.__get__(obj, type(obj))
    return value if issubclass(type(value), dict) else None


def attribute(obj: Any, name: str) -> Any:
    """``obj.name`` as Python would read it, or :class:`_NeedsCode` / :class:`_Missing`."""
    found = libraries.kind(obj)
    own_attribute = name in DATA_ATTRIBUTES and _has(type(obj), name)  # not a column's name
    if found is not None and own_attribute and libraries.trusted(obj, found):
        try:
            return getattr(obj, name)  # the library's own property
        except AttributeError:
            raise _Missing(name) from None
    if issubclass(type(obj), type):
        return _class_attribute(obj, name)
    return _instance_attribute(obj, name, found)


def _custom_getattribute(cls: type) -> bool:
    found, value, owner = _on_type(cls, "__getattribute__")
    if not found or value is _OBJECT_GETATTRIBUTE:
        return False
    return not (type(value) is types.WrapperDescriptorType and _trusted_owner(owner))


def _instance_attribute(obj: Any, name: str, data_kind: str | None) -> Any:
    cls = type(obj)
    if _custom_getattribute(cls):
        raise _NeedsCode(f"its class {type_name(obj)} reads attributes with __getattribute__")
    found, value, owner = _on_type(cls, name)
    if found and is_data_descriptor(value):
        return _data_descriptor(obj, value, owner, name)
    own = instance_dict(obj)
    if own is not None:
        there, stored = str_item(own, name)
        if there:
            return stored
    if found:
        return _bind(obj, cls, value, name)
    if data_kind in ("pandas.DataFrame", "polars.DataFrame"):
        return item(obj, name)  # a column read as an attribute, as pandas allows
    if issubclass(cls, types.ModuleType) and str_item(own or {}, "__getattr__")[0]:
        raise _NeedsCode("the module answers names it does not hold with its own __getattr__")
    if _has(cls, "__getattr__"):
        raise _NeedsCode(f"its class {type_name(obj)} answers missing attributes with __getattr__")
    raise _Missing(name)


def read_without_code(descriptor: Any, owner: type | None) -> bool:
    """A slot, or a field of a built-in or library type: read by C, no code of the class."""
    kind = type(descriptor)
    return kind is types.MemberDescriptorType or (
        kind is types.GetSetDescriptorType and _trusted_owner(owner)
    )


def _data_descriptor(obj: Any, value: Any, owner: type | None, name: str) -> Any:
    kind = type(value)
    if read_without_code(value, owner):
        try:
            return value.__get__(obj, type(obj))  # a slot, or a built-in type's field
        except AttributeError:
            raise _Missing(name) from None
    if issubclass(kind, property):
        raise _NeedsCode(f"`{name}` is a property: reading it runs its code")
    raise _NeedsCode(f"`{name}` is read through {type_name(value)}, which runs code")


def _bind(obj: Any, cls: type, value: Any, name: str) -> Any:
    """What a class attribute becomes when read through an instance."""
    kind = type(value)
    if kind is types.FunctionType:
        return types.MethodType(value, obj)
    if kind is staticmethod:
        return value.__func__
    if kind is classmethod and type(value.__func__) is types.FunctionType:
        return types.MethodType(value.__func__, cls)
    if kind in _C_BINDABLE:
        return value.__get__(obj, cls)  # a built-in method bound: no code of the class
    if not _has(kind, "__get__"):
        return value
    raise _NeedsCode(f"`{name}` is read through {type_name(value)}, which runs code")


def _class_attribute(cls: type, name: str) -> Any:
    meta = type(cls)
    if _custom_getattribute(meta):
        raise _NeedsCode(f"its metaclass {type_name(cls)} reads attributes with its own code")
    on_meta, meta_value, meta_owner = _on_type(meta, name)
    if on_meta and is_data_descriptor(meta_value):
        return _data_descriptor(cls, meta_value, meta_owner, name)
    found, value, _ = _on_type(cls, name)
    if found:
        kind = type(value)
        if kind is staticmethod:
            return value.__func__
        if kind is classmethod and type(value.__func__) is types.FunctionType:
            return types.MethodType(value.__func__, cls)
        if not _has(kind, "__get__") or kind is types.FunctionType or issubclass(kind, property):
            return value  # read through the class: the object itself
        if kind in (*_C_BINDABLE, types.MemberDescriptorType, types.GetSetDescriptorType):
            return value
        raise _NeedsCode(f"`{name}` is read through {type_name(value)}, which runs code")
    if on_meta:
        return _bind(cls, meta, meta_value, name)
    if _has(meta, "__getattr__"):
        raise _NeedsCode(f"its metaclass {type_name(cls)} answers missing attributes with code")
    raise _Missing(name)


def _same_key(stored: Any, key: str | int) -> bool:
    if type(key) is str:
        return type(stored) is str and stored == key
    return type(stored) in (int, bool, float) and stored == key


def keyed(obj: Any) -> bool:
    """Whether keys are read on ``obj`` at all (dicts, lists, tuples, frames)."""
    cls = type(obj)
    return issubclass(cls, (dict, list, tuple)) or libraries.kind(obj) in (
        "pandas.DataFrame",
        "polars.DataFrame",
    )


def item(obj: Any, key: str | int) -> Any:
    """``obj[key]`` as Python would read it, or :class:`_NeedsCode` / :class:`_Missing`."""
    cls = type(obj)
    owner = _on_type(cls, "__getitem__")[2]
    if issubclass(cls, dict):
        if owner is not dict:
            raise _NeedsCode(f"{type_name(obj)} looks keys up with its own __getitem__")
        return _dict_item(obj, cls, key)
    for base in (list, tuple):
        if issubclass(cls, base):
            if owner is not base:
                raise _NeedsCode(f"{type_name(obj)} reads items with its own __getitem__")
            if type(key) is not int:
                raise _Missing(key)
            try:
                return base.__getitem__(obj, key)
            except (IndexError, OverflowError):
                raise _Missing(key) from None
    found = libraries.kind(obj)
    if found not in ("pandas.DataFrame", "polars.DataFrame"):
        raise _NeedsCode(f"{type_name(obj)} is not a dict, list, tuple or data frame")
    return _column(obj, found, key)


def _dict_item(obj: Any, cls: type, key: str | int) -> Any:
    for stored, value in dict.items(obj):
        if _same_key(stored, key):
            return value
    found, _, owner = _on_type(cls, "__missing__")
    if not found or owner is Counter or (owner is defaultdict and _FACTORY.__get__(obj) is None):
        raise _Missing(key)
    if owner is defaultdict:
        raise _NeedsCode("a defaultdict calls its default factory for a missing key and adds it")
    raise _NeedsCode(f"{type_name(obj)} answers a missing key with its own __missing__")


def _column(frame: Any, found: str, key: str | int) -> Any:
    if not libraries.trusted(frame, found):
        raise _NeedsCode("one of its dtypes is a class of the person's own")
    if found == "pandas.DataFrame":
        labels = frame.columns
        dtype = labels.dtype
        simple = from_module(type(dtype), "numpy") and not dtype.hasobject
        if not simple and not all(plain(label) for label in labels.tolist()):
            raise _NeedsCode("a column label is an object whose hash and == are its own code")
    try:
        return frame[key]
    except (KeyError, IndexError, TypeError, ValueError):
        raise _Missing(key) from None
    except Exception as exc:  # polars raises its own errors for a missing column
        if type(exc).__name__ in ("ColumnNotFoundError", "OutOfBoundsError"):
            raise _Missing(key) from None
        raise
