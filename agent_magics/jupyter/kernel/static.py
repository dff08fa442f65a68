"""Reading a type's facts without running the person's code.

``isinstance`` may read ``obj.__class__`` (a property runs), ``cls.__module__`` goes
through the metaclass's ``__getattribute__``, and a dict lookup compares the key with
stored keys that hash alike (their ``__eq__`` runs). Here a type's name, module, MRO,
dict and docstring are read through ``type``'s own descriptors, subclass tests use
``issubclass`` on plain types (it reads the MRO), and a ``str`` key is found by walking
the items.
"""

from __future__ import annotations

import sys
import types
from typing import Any

_MODULE = type.__dict__["__module__"]
_QUALNAME = type.__dict__["__qualname__"]
_MRO = type.__dict__["__mro__"]
_DICT = type.__dict__["__dict__"]
_DOC = type.__dict__["__doc__"]
_MODULE_DICT = vars(types.ModuleType)["__dict__"]  # a module subclass cannot replace it


def mro(cls: type) -> tuple[type, ...]:
    found: tuple[type, ...] = _MRO.__get__(cls)
    return found


def class_dict(cls: type) -> types.MappingProxyType[str, Any]:
    found: types.MappingProxyType[str, Any] = _DICT.__get__(cls)
    return found


def class_module(cls: type) -> str:
    module = _MODULE.__get__(cls)
    return module if type(module) is str else "?"


def class_qualname(cls: type) -> str:
    name: str = _QUALNAME.__get__(cls)
    return name


def class_doc(cls: type) -> str:
    doc = _DOC.__get__(cls)
    return doc if type(doc) is str else ""


def from_module(cls: type, top: str) -> bool:
    """Whether ``cls`` was defined in the package ``top`` (``pandas``, ``numpy``...)."""
    module = class_module(cls)
    return module == top or module.startswith(top + ".")


def str_item(mapping: Any, key: str) -> tuple[bool, Any]:
    """``mapping[key]`` for a ``str`` key, found by walking the items of a dict or of a
    class's mappingproxy (whose dict is a plain one): a lookup would hash and compare
    the key with whatever else is stored, running their ``__eq__``."""
    items = dict.items(mapping) if issubclass(type(mapping), dict) else mapping.items()
    for name, value in items:
        if type(name) is str and name == key:
            return True, value
    return False, None


def loaded(top: str) -> types.ModuleType | None:
    """The module ``top`` when it is already imported, else None (never imports it)."""
    module = sys.modules.get(top)
    return module if type(module) is types.ModuleType else None


def library_name(top: str, name: str) -> Any:
    """``pandas.DataFrame`` when pandas is imported, else None (a library's own dict)."""
    module = loaded(top)
    return None if module is None else module.__dict__.get(name)


def class_name(cls: type) -> str:
    """``DataFrame`` as ``pandas.DataFrame``: the shortest public name of the type."""
    module, name = class_module(cls), class_qualname(cls)
    if module == "builtins":
        return name
    top = loaded(module.split(".")[0])
    if top is not None and str_item(module_dict(top), name)[1] is cls:
        return f"{module_name(top)}.{name}"
    return f"{module}.{name}"


def type_name(value: Any) -> str:
    return class_name(type(value))


def module_name(module: types.ModuleType) -> str:
    """A module's ``__name__`` as it is stored ("?" when it is not a string)."""
    found, name = str_item(module_dict(module), "__name__")
    return name if found and type(name) is str else "?"


def module_dict(module: types.ModuleType) -> dict[str, Any]:
    found: dict[str, Any] = _MODULE_DICT.__get__(module)
    return found


def base_of(cls: type, bases: Any) -> Any:
    """The first of ``bases`` that ``cls`` derives from, or None."""
    return next((b for b in bases if issubclass(cls, b)), None)
