"""The agent's Python in every command: its environment's scripts come first on ``PATH``.

A kernel started from a venv, a conda environment or a pyenv version has no reason to
have that environment on the ``PATH`` it inherited (Jupyter starts kernels by the
interpreter's path), and commands run in a login shell by default, whose profile sets
``PATH`` anew (Debian's ``/etc/profile``; macOS's ``path_helper`` puts the system's
folders first); the shell snapshot replays what the profile did. So ``python``,
``python3``, ``pip`` and the environment's scripts are pinned twice: in the environment
a command starts with (non-login shells, programs run without a shell), and by a short
line the shell runs after its profile, ahead of the script (login shells, with the
snapshot or without). In ``agent-magics exec`` it is the environment that runs it.

The folders are the one ``sys.executable`` lies in as the environment names it (a
venv's ``python`` is a link to the base interpreter: the link's folder, not its
target's) and ``sys.prefix/bin`` (conda, or an interpreter started through a link
elsewhere). The system's own folders (``/usr/bin``, ``/bin``) are never moved forward:
for a system interpreter that would put every system program ahead of the person's
``/usr/local/bin`` and ``~/.local/bin``, and the profile's ``PATH`` has them anyway.

``VIRTUAL_ENV`` names the venv, as its ``activate`` script sets it: tools that work on
"the active environment" (uv, poetry, pipenv, pip's ``--require-virtualenv``) then act
on the one ``python`` runs. Outside a venv an inherited ``VIRTUAL_ENV`` is dropped,
since it would name an environment other than the interpreter's.

Programs found in these folders are judged like any other by the known-safe rules
(:mod:`agent_magics.tools.command_safety.paths` looks them up first, as the command will); a
venv inside the working folder is read-only to sandboxed commands, as the kernel's
code (:func:`agent_magics.tools.sandbox.roots.kernel_code_paths`).
"""

from __future__ import annotations

import os
import platform
import shlex
import sys
from collections.abc import MutableMapping

SYSTEM_FOLDERS = frozenset({"/usr/bin", "/bin", "/usr/sbin", "/sbin"})


def bin_folders() -> list[str]:
    """The environment's script folders that exist, to come first on ``PATH``."""
    found: list[str] = []
    candidates = [os.path.dirname(sys.executable) if sys.executable else ""]
    candidates.append(os.path.join(sys.prefix, "bin"))
    for folder in candidates:
        folder = os.path.normpath(folder) if folder else ""
        if not folder or not os.path.isabs(folder) or folder in found:
            continue
        if folder in SYSTEM_FOLDERS or os.path.realpath(folder) in SYSTEM_FOLDERS:
            continue
        if os.path.isdir(folder):
            found.append(folder)
    return found


def virtual_env() -> str | None:
    """The venv the interpreter runs in, or None (a conda environment or a base
    interpreter has ``sys.prefix == sys.base_prefix``)."""
    return sys.prefix if sys.prefix != sys.base_prefix else None


def pin(env: MutableMapping[str, str]) -> None:
    """``env`` with the environment's folders first on ``PATH`` and ``VIRTUAL_ENV`` set
    as described in the module's docstring (changed in place)."""
    folders = bin_folders()
    rest = [p for p in env.get("PATH", os.defpath).split(os.pathsep) if p not in folders]
    env["PATH"] = os.pathsep.join([*folders, *rest])
    venv = virtual_env()
    if venv is None:
        env.pop("VIRTUAL_ENV", None)
    else:
        env["VIRTUAL_ENV"] = venv


def shell_line() -> str:
    """What a POSIX shell runs after its profile and before the script: the same folders
    first on the ``PATH`` the profile left (empty when there is nothing to pin)."""
    folders = bin_folders()
    venv = virtual_env()
    parts: list[str] = []
    if folders:
        joined = shlex.quote(os.pathsep.join(folders))
        parts.append(f'PATH={joined}${{PATH:+:"$PATH"}}; export PATH;')
    if venv is None:
        parts.append("unset VIRTUAL_ENV;")
    else:
        parts.append(f"VIRTUAL_ENV={shlex.quote(venv)}; export VIRTUAL_ENV;")
    return " ".join(parts) + " "


def describe() -> str:
    """The interpreter as the environment context names it: its path and version."""
    return f"{sys.executable or 'python'} (Python {platform.python_version()})"
