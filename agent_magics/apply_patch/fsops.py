"""File-system helpers shared by the standalone applier and the verified tool path."""

from __future__ import annotations

import os
import pwd
from pathlib import Path

from agent_magics.text.rust import INVALID_UTF8, RustIoError

from .files import PlainFiles

__all__ = ["PLAIN", "read_utf8", "resolve_patch_path", "rust_parent", "write_text"]

PLAIN = PlainFiles()


def rust_parent(path: str) -> str | None:
    """Rust's ``Path::parent`` for ``path``: ``""`` for a bare name, ``None`` for a root."""
    absolute = path.startswith("/")
    parts = [
        part
        for index, part in enumerate(path.split("/"))
        if part and (part != "." or (index == 0 and not absolute))
    ]
    if not parts:
        return None
    return ("/" if absolute else "") + "/".join(parts[:-1])


def _home() -> str | None:
    home = os.environ.get("HOME")
    if home:
        return home
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except KeyError:
        return None


def _normalize(path: str) -> str:
    """Lexically remove ``.`` and ``..`` components from an absolute path."""
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/" + "/".join(parts)


def resolve_patch_path(cwd: str | os.PathLike[str], raw: str) -> Path:
    """Resolve a path written in a patch the way Codex's tool does.

    A leading ``~`` or ``~/`` names the home directory; relative paths are joined to
    ``cwd`` (absolute ones are kept); ``.`` and ``..`` are then removed lexically, without
    looking at the disk.
    """
    expanded = raw
    home = _home() if raw == "~" or raw.startswith("~/") else None
    if home is not None:
        expanded = home if raw == "~" else os.path.join(home, raw[1:].lstrip("/"))
    base = os.path.abspath(os.fspath(cwd))
    return Path(_normalize(os.path.join(base, expanded)))


def read_utf8(path: str | os.PathLike[str], files: PlainFiles = PLAIN) -> str:
    """The file's text; raises ``OSError``, or :class:`RustIoError` for non-UTF-8 bytes.

    Only a regular file is read, and at most :data:`~.files.MAX_FILE_BYTES` of it.
    """
    data = files.read(os.fspath(path))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise RustIoError(INVALID_UTF8) from None


def write_text(path: str | os.PathLike[str], text: str, files: PlainFiles = PLAIN) -> None:
    """Create or truncate the file and write ``text`` as UTF-8 (like ``std::fs::write``)."""
    files.write(os.fspath(path), text.encode("utf-8"))
