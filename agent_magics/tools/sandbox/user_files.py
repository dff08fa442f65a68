"""The person's own files a sandboxed command must not read or change.

- The session signing key, ``~/.agent_magics/session_key`` (see
  :mod:`agent_magics.store.signing`): it seals the session files, and a file it seals
  gives its settings (approval policy, sandbox, model server, MCP servers) to
  ``%agent resume last``. Whoever reads it, the model server included, can forge such a
  file and ship it in a repository. So it is hidden from commands (:func:`hidden_files`;
  the folder itself stays visible, as it holds the shell snapshot commands source):
  bubblewrap shows them an empty file in its place, Landlock and Seatbelt refuse to read
  it, also before it exists (it is made at a first save, perhaps while a command runs),
  and the key in its written forms joins the secrets every output is scrubbed of
  (:func:`signing_key_secrets`).
- The shell's start-up files (:data:`SHELL_START_FILES`): the person's next terminal
  runs them unconfined. When the home lies in a writable root (JupyterLab started in
  ``~``; on Binder the repository is the home), no command and no shell snapshot reads
  them (they may be the repository's: :mod:`agent_magics.tools.unified_exec.snapshot`), and
  those that exist stay read-only, with the person's ``~/.agent_magics`` (settings,
  key, snapshots), like the kernel's own code (see :mod:`.roots`). A missing one cannot
  get a mount point in its place (an empty folder named ``.bashrc`` breaks the shell,
  an empty ``.bash_profile`` hides ``.profile``): patches refuse to create it by name, Landlock
  lets no command create an entry at the top of a folder holding a protected path, and
  only a bubblewrap command can still create one.

Paths follow ``HOME`` (``Path.home()``), as the key's owner and the shell find them.
"""

from __future__ import annotations

import base64
import contextlib
import os
from pathlib import Path

USER_DIR = ".agent_magics"
SIGNING_KEY = "session_key"
SHELL_START_FILES = (
    *(".profile", ".bash_profile", ".bash_login", ".bashrc", ".bash_logout", ".bash_aliases"),
    *(".zshenv", ".zprofile", ".zshrc", ".zlogin", ".zlogout"),
)
"""What bash (login or interactive, with Debian's ``.bash_aliases``) and zsh run from
the home (zsh's from ``ZDOTDIR`` when it is set)."""


def home() -> Path:
    return Path(os.path.expanduser("~"))


def user_dir(at: Path | None = None) -> Path:
    """The person's own folder: settings, the signing key, shell snapshots, logs."""
    return (at or home()) / USER_DIR


def signing_key_path(at: Path | None = None) -> Path:
    return user_dir(at) / SIGNING_KEY


def shell_start_files() -> list[Path]:
    """Every start-up file the shells look for, existing or not (as named, not resolved)."""
    found = [home() / name for name in SHELL_START_FILES]
    zdotdir = os.environ.get("ZDOTDIR")
    if zdotdir:
        found += [Path(zdotdir).expanduser() / n for n in SHELL_START_FILES if n.startswith(".z")]
    return list(dict.fromkeys(found))


def hidden_files() -> list[Path]:
    """What commands must not read (real paths): the signing key, existing or not (only
    bubblewrap skips a missing one: a missing file cannot get a mount point outside the
    writable roots), and any copy of it left beside it where it is made
    (``.session_key.<pid>.<hex>``, linked in place, then removed)."""
    key = Path(os.path.realpath(signing_key_path()))
    try:
        entries = list(os.scandir(key.parent))
    except OSError:
        entries = []
    aside = [Path(e.path) for e in entries if e.name.startswith(f".{SIGNING_KEY}.")]
    return [key, *sorted(aside)]


class _Seen:
    """The key file :func:`signing_key_secrets` read last, by path and identity."""

    stamp: tuple[str, int, int, int] | None = None
    secrets: tuple[str, ...] = ()


def signing_key_secrets() -> tuple[str, ...]:
    """The signing key as its file holds it (hex), in capitals, and base64 of the
    file's text and of the key's bytes (``base64 session_key``, ``xxd -r -p | base64``).
    Read again when the file changes; otherwise a call costs a ``stat``."""
    path = signing_key_path()
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return ()
    stamp = (str(path), info.st_ino, info.st_mtime_ns, info.st_size)
    if stamp != _Seen.stamp:
        _Seen.stamp, _Seen.secrets = stamp, _key_forms(path)
    return _Seen.secrets


def _key_forms(path: Path) -> tuple[str, ...]:
    try:
        with open(path, "rb") as f:
            text = f.read(4096)
    except OSError:
        return ()
    written = text.decode("ascii", "replace").strip()
    if not written:
        return ()
    forms = {written, written.upper(), written.lower()}
    forms |= {base64.b64encode(t).decode() for t in (text, text.strip(), text.strip() + b"\n")}
    with contextlib.suppress(ValueError):  # not hex: no bytes form
        forms.add(base64.b64encode(bytes.fromhex(written)).decode())
    return tuple(sorted(forms))
