"""Public names of a package imported on their first use (PEP 562).

A package whose parts cost much to import, and which a turn often does not need, names
where each of its public names lives; the part is imported when a name is first asked
for, and the value kept, so later lookups are plain attribute reads. (The top package,
which must import none of its parts, keeps its own copy of these few lines.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from importlib import import_module
from typing import Any


def lazy_names(
    package: str, namespace: dict[str, Any], where: Mapping[str, Iterable[str]]
) -> Callable[[str], Any]:
    """The ``__getattr__`` of ``package`` (whose globals are ``namespace``): ``where`` maps
    each submodule (relative to ``package``) to the public names it holds."""
    module_of = {name: module for module, names in where.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = module_of.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__
