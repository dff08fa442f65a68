"""The package's own imports never come from a folder the agent or a repository can write.

In a kernel, ``sys.path`` starts with the notebook's folder, and this package imports
most of what it uses late: nbformat at the first notebook call, the HTTP library at the
first request, the markdown renderer when a turn ends. A ``nbformat.py`` or ``h11.py``
that a cloned repository ships, or that the model writes there with a sandboxed command
or a patch, would then run inside the kernel, outside every sandbox, with the API key in
reach. So :func:`install` puts a finder first in ``sys.meta_path`` that, for an import
asked for by this package's code (directly, or by a library it is importing), searches
only the trusted entries of the path. An entry is untrusted when it is ``''`` (the
current folder) or lies in the current folder, a session's working folder, ``/tmp`` or
``$TMPDIR``, unless it lies in the interpreter's own environment (``sys.prefix`` and its
kin, the user's site-packages), which the sandbox keeps read-only where it lies inside a
writable root. A module found nowhere else is not found: the import fails with a
sentence saying why, and the planted file never runs; a module found nowhere at all is
not found as usual (``importlib.util.find_spec`` answers ``None``).

Whose import it is is read from the stack: the nearest frame of this package's code says
"ours"; the nearest frame of code run in the person's namespace (a cell, ``run_python``'s
code, whose globals are ``__main__``) or of :func:`call_person_code` says "theirs", and
their imports keep Python's usual rules. Frames of other libraries decide nothing.
Imports that only ever search trusted entries (a submodule of an installed package) skip
that walk: the finder hands them on unchanged.

One library reads ``sys.path`` for more than modules: pydantic runs the plugins that
package metadata names, so when the package's models are the first to ask, that look-up
also sees only trusted entries (a repository's ``*.dist-info`` cannot pick a module).

This module imports only the standard library, and :mod:`agent_magics` installs it before
anything else, so the package's own first imports are already guarded.
"""

from __future__ import annotations

import contextlib
import functools
import os
import site
import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from importlib.abc import Loader
from importlib.machinery import ModuleSpec, PathFinder
from types import FrameType, ModuleType
from typing import Any, TypeVar

T = TypeVar("T")

PACKAGE = __name__.rpartition(".")[0]
PACKAGE_DIR = os.path.dirname(os.path.realpath(__file__))
_distrusted: set[str] = set()


def call_person_code(function: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Call the person's own ``function`` (one they registered as a tool): what it imports
    follows Python's usual rules, as it would in their cell."""
    return function(*args, **kwargs)


async def await_person_code(awaitable: Awaitable[T]) -> T:
    """Await the person's own coroutine: what it imports follows Python's usual rules."""
    return await awaitable


def distrust(*folders: os.PathLike[str] | str) -> None:
    """Add folders the agent may write (a session's working folder, its writable roots):
    the package imports nothing from them from now on."""
    _distrusted.update(os.path.realpath(f) for f in folders)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


@functools.cache
def trusted_environment() -> tuple[str, ...]:
    """The interpreter's own environment: its prefixes and the user's site-packages
    (fixed for the life of the process)."""
    places = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    with contextlib.suppress(AttributeError, OSError):  # an embedded interpreter
        places.add(site.getusersitepackages())
    return tuple(sorted(os.path.realpath(p) for p in places if p))


def writable_places() -> tuple[str, ...]:
    """The folders whose entries are untrusted: the current folder, every distrusted
    folder, ``/tmp`` and ``$TMPDIR``."""
    places = set(_distrusted)
    with contextlib.suppress(OSError):  # the current folder was removed: '' finds nothing
        places.add(os.path.realpath(os.getcwd()))
    for tmp in ("/tmp", os.environ.get("TMPDIR")):
        if tmp:
            places.add(os.path.realpath(tmp))
    return tuple(sorted(places))


def untrusted(entry: object, writable: tuple[str, ...], *, own: bool = False) -> bool:
    """Whether a ``sys.path`` (or package ``__path__``) entry may hold files the agent or
    a repository wrote, ``writable`` being :func:`writable_places`. ``own``: the import
    is of this package's own submodules, whose folder counts as trusted."""
    if not isinstance(entry, str):
        return False  # not a folder (a path hook's token): left to the other finders
    if entry == "":
        return True  # the current folder
    real = os.path.realpath(entry)
    if own and _inside(real, PACKAGE_DIR):
        return False
    if any(_inside(real, place) for place in trusted_environment()):
        return False
    return any(_inside(real, place) for place in writable)


def _plainly_trusted(entry: object, own: bool) -> bool:
    """An absolute entry written inside the interpreter's environment (or, for the
    package's own submodules, its folder): what lies beneath is kept read-only, so no
    link there can lead into a writable folder."""
    if not isinstance(entry, str) or not os.path.isabs(entry):
        return False
    if own and _inside(entry, PACKAGE_DIR):
        return True
    return any(_inside(entry, place) for place in trusted_environment())


def _decides(frame: FrameType) -> bool | None:
    if frame.f_code is call_person_code.__code__ or frame.f_code is await_person_code.__code__:
        return False
    name = frame.f_globals.get("__name__")
    if not isinstance(name, str):
        return None
    if name == PACKAGE or name.startswith(PACKAGE + "."):
        return name != __name__ or None  # this module's own frames decide nothing
    if name == "__main__":
        return False
    return None


def requested_by_package(frame: FrameType | None) -> bool:
    """Whether the import running at ``frame`` was asked for by this package's code."""
    while frame is not None:
        verdict = _decides(frame)
        if verdict is not None:
            return verdict
        frame = frame.f_back
    return False


class GuardedFinder:
    """A ``sys.meta_path`` finder: the package's imports search trusted entries only."""

    @classmethod
    def find_spec(
        cls, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname == PLUGIN_LOADER and requested_by_package(sys._getframe(1)):
            return _plugin_loader_spec(fullname, path, target)
        search = list(sys.path if path is None else path)
        own = fullname.startswith(PACKAGE + ".")
        unsure = [entry for entry in search if not _plainly_trusted(entry, own)]
        if not unsure:
            return None  # a submodule of an installed package: the common case, kept cheap
        writable = writable_places()
        bad = [entry for entry in unsure if untrusted(entry, writable, own=own)]
        if not bad or not requested_by_package(sys._getframe(1)):
            return None  # Python's own finders go on, as they would without this one
        safe = [entry for entry in search if entry not in bad]
        spec = PathFinder.find_spec(fullname, safe, target)
        if spec is not None:
            return spec
        spec, planted = _from_other_finders(fullname, path, target, writable)
        if spec is not None:
            return spec
        planted = planted or PathFinder.find_spec(fullname, bad, target)
        if planted is None:
            return None  # found nowhere: the usual ModuleNotFoundError (or find_spec's None)
        raise ModuleNotFoundError(
            f"agent_magics did not import {fullname!r}: it was found only in "
            f"{planted.origin or fullname}, a folder the agent or the repository can write",
            name=fullname,
        )

    @classmethod
    def invalidate_caches(cls) -> None:
        """Nothing cached here (``importlib.invalidate_caches`` asks every finder)."""


def _from_other_finders(
    fullname: str,
    path: Sequence[str] | None,
    target: ModuleType | None,
    writable: tuple[str, ...],
) -> tuple[ModuleSpec | None, ModuleSpec | None]:
    """A spec from the other finders (an editable install's, say) whose files all lie
    outside untrusted places; and the first spec they offered from an untrusted place."""
    refused = None
    for finder in list(sys.meta_path):
        if finder is GuardedFinder or finder is PathFinder:
            continue
        find = getattr(finder, "find_spec", None)
        if find is None:
            continue
        spec: ModuleSpec | None = find(fullname, path, target)
        if spec is None:
            continue
        if not _spec_untrusted(spec, writable):
            return spec, None
        refused = refused or spec
    return None, refused


def _spec_untrusted(spec: ModuleSpec, writable: tuple[str, ...]) -> bool:
    places: Iterable[str] = [*(spec.submodule_search_locations or ())]
    if spec.origin and os.path.isabs(spec.origin):
        places = [*places, os.path.dirname(spec.origin)]
    return any(untrusted(p, writable) for p in places)


@contextlib.contextmanager
def trusted_path() -> Iterator[None]:
    """``sys.path`` without its untrusted entries for the length of the block, for look-ups
    that read it themselves (package metadata: entry points)."""
    saved = list(sys.path)
    writable = writable_places()
    sys.path[:] = [e for e in saved if _plainly_trusted(e, False) or not untrusted(e, writable)]
    try:
        yield
    finally:
        sys.path[:] = saved


PLUGIN_LOADER = "pydantic.plugin._loader"
"""pydantic picks its plugins from the package metadata found on ``sys.path``: a
repository's ``*.dist-info`` in the working folder could name any installed module to run
(or one that breaks every model), even though the module itself comes from elsewhere."""


def _plugin_loader_spec(
    fullname: str, path: Sequence[str] | None, target: ModuleType | None
) -> ModuleSpec | None:
    spec = PathFinder.find_spec(fullname, path, target)
    if spec is not None and isinstance(spec.loader, Loader):
        spec.loader = _TrustedPlugins(spec.loader)
    return spec


class _TrustedPlugins(Loader):
    """Loads pydantic's plugin loader so that its one discovery of plugins reads only the
    metadata of trusted ``sys.path`` entries (when the package's models are the first)."""

    def __init__(self, inner: Loader) -> None:
        self.inner = inner

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        discover = getattr(module, "get_plugins", None)
        if discover is None:  # another pydantic: leave it as it is
            return

        def get_plugins() -> Any:
            if getattr(module, "_plugins", None) is not None:
                return discover()  # found already: no look-up to guard
            with trusted_path():
                return discover()

        module.get_plugins = get_plugins  # type: ignore[attr-defined]


def install() -> None:
    """Put the finder first in ``sys.meta_path`` (once)."""
    if GuardedFinder not in sys.meta_path:
        sys.meta_path.insert(0, GuardedFinder)
