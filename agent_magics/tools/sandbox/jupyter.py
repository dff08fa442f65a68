"""Jupyter's runtime folder: where a Jupyter server and its kernels keep their secrets.

A server writes ``jpserver-<pid>.json`` (its URL and token), ``jpserver-<pid>-open.html``
(the same token in a link) and ``jupyter_cookie_secret`` there; each kernel's connection
file ``kernel-<id>.json`` holds the key that signs the messages it obeys. Whoever holds
the token runs code wherever the server is reachable (Binder, JupyterHub, a server on
``0.0.0.0``). So:

- sandboxed commands cannot read the folder (:func:`hidden_paths`, with the folder of
  the kernel's own connection file when that lies elsewhere, or the file alone when it
  lies in a shared folder such as ``/tmp``): bubblewrap mounts an empty one over it,
  Landlock and Seatbelt refuse to read it. Landlock leaves one readable where commands
  may create files on its way (a runtime folder in ``/tmp``: see
  :func:`.landlock.hideable`), and the session says so once
  (:func:`.platform.weakness_notices`);
- the secrets found there join the ones every output is scrubbed of
  (:func:`runtime_secrets`: the front ends hand it to their sessions, which ask it
  again at each turn's start and after each tool call; see
  :mod:`agent_magics.agent.redaction`).

The kernel side registers its own connection file (:func:`register_connection_file`):
this layer does not import IPython, and a kernel's file may lie outside the folder.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path

from agent_magics.tools.sandbox.roots import real

MAX_FILE_BYTES = 64 * 1024
"""A runtime file larger than this is not a server's or a kernel's: it is not read."""
SETTLED_NS = 1_000_000_000
"""A folder changed longer ago than this is not read again until it changes."""
MAX_KERNEL_FILES = 16
"""The newest connection files read: a file is written once, when its kernel starts, and
the folder keeps those of kernels that crashed; a long list of secrets slows every
scrub (each one is looked for in every output)."""
SERVER_FILES = ("jpserver-", "nbserver-")
"""Jupyter Server's files, and the classic notebook server's."""
SECRET_FIELDS = ("token", "key")
"""The fields of ``jpserver-*.json`` (``token``) and ``kernel-*.json`` (``key``)."""
ENV_NAMES = (
    *("JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR", "JUPYTER_PLATFORM_DIRS"),
    *("XDG_DATA_HOME", "HOME", "APPDATA"),
)
"""The settings the runtime folder's place depends on."""

CONNECTION_FILES: list[Path] = []
"""The connection files of the kernels this process is (see ``agent_magics.jupyter.kernel``)."""


def register_connection_file(path: Path) -> None:
    """Hide ``path``'s folder from sandboxed commands too (a kernel's own file)."""
    path = real(path)
    if path not in CONNECTION_FILES:
        CONNECTION_FILES.append(path)


def runtime_dir() -> Path:
    """Jupyter's runtime folder as this process's Jupyter would find it (real path):
    ``JUPYTER_RUNTIME_DIR``, else jupyter_core's answer, else its usual place."""
    named = os.environ.get("JUPYTER_RUNTIME_DIR")
    if named:
        return real(Path(named).expanduser())
    try:
        from jupyter_core.paths import jupyter_runtime_dir
    except ImportError:
        return real(_data_dir() / "runtime")
    return real(Path(jupyter_runtime_dir()))


def _data_dir() -> Path:
    """Jupyter's data folder by jupyter_core's rules, without it."""
    named = os.environ.get("JUPYTER_DATA_DIR")
    if named:
        return Path(named).expanduser()
    home = Path(os.path.expanduser("~"))
    if sys.platform == "darwin":
        return home / "Library" / "Jupyter"
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or home) / "jupyter"
    return Path(os.environ.get("XDG_DATA_HOME") or home / ".local" / "share") / "jupyter"


def hidden_paths(seen: Iterable[Path]) -> list[Path]:
    """What a sandbox hides from commands: the runtime folder and each registered
    connection file's folder, or, where that folder is or holds a place commands must
    see (``seen``: the working folder, ``/tmp``, ``$TMPDIR``, the home; the file sits in
    ``/tmp``, as ``jupyter_client`` and ``nbclient`` put it, or in the working folder),
    the file alone.

    ``seen`` does not depend on the sandbox mode: under ``read-only`` nothing is
    writable, yet a command must still see its working folder, and the home holds the
    shell snapshot it sources and the signing key, hidden on its own (nothing can be
    mounted inside a folder hidden whole)."""
    places = list(seen)
    folders = [runtime_dir(), *(p.parent for p in CONNECTION_FILES)]
    out: dict[Path, None] = {}
    for folder in folders:
        if not any(folder == r or folder in r.parents for r in places):
            out[folder] = None
    for path in CONNECTION_FILES:
        if not any(f == path.parent for f in out):
            out[path] = None
    return list(out)


class _Seen:
    """What :func:`runtime_secrets` read last: for which settings, from which folder at
    which modification time."""

    where: tuple[str | None, ...] = ()
    folder: Path | None = None
    stamp = -1
    secrets: tuple[str, ...] = ()


def runtime_secrets() -> tuple[str, ...]:
    """The tokens, signing keys and cookie secrets in the runtime folder's files.

    Read again when the folder changes (a server or kernel starts or ends), and a file
    read half-written again at the next call; otherwise a call costs a ``stat``."""
    where = tuple(os.environ.get(name) for name in ENV_NAMES)
    if where != _Seen.where or _Seen.folder is None:
        _Seen.where, _Seen.folder, _Seen.stamp = where, runtime_dir(), -1
    try:
        stamp = os.stat(_Seen.folder).st_mtime_ns
    except (OSError, ValueError):
        return ()
    if stamp != _Seen.stamp:
        _Seen.secrets, complete = _read_secrets(_Seen.folder)
        # A change within the clock's coarse tick may keep the stamp: read again then.
        settled = time.time_ns() - stamp > SETTLED_NS
        _Seen.stamp = stamp if complete and settled else -1
    return _Seen.secrets


def _read_secrets(folder: Path) -> tuple[tuple[str, ...], bool]:
    """The secrets of the folder's files, and whether every file could be read whole."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return (), False
    servers = [e for e in entries if e.name.startswith(SERVER_FILES) and e.name.endswith(".json")]
    cookies = [e for e in entries if e.name.endswith("cookie_secret")]
    kernels = [e for e in entries if e.name.startswith("kernel-") and e.name.endswith(".json")]
    kernels = sorted(kernels, key=_mtime, reverse=True)[:MAX_KERNEL_FILES]
    found: set[str] = set()
    complete = True
    for entry in [*servers, *kernels, *cookies]:
        try:
            with open(entry.path, "rb") as f:
                text = f.read(MAX_FILE_BYTES).decode("utf-8", "replace").strip()
        except OSError:
            continue
        if entry in cookies:
            found.add(text)
            continue
        try:
            doc = json.loads(text)
        except ValueError:
            complete = False  # written as we read it: read it again next time
            continue
        if isinstance(doc, dict):
            found.update(v for k in SECRET_FIELDS if isinstance(v := doc.get(k), str))
    return tuple(sorted(s for s in found if s)), complete


def _mtime(entry: os.DirEntry[str]) -> int:
    try:
        return entry.stat().st_mtime_ns
    except OSError:
        return 0
