"""How a command line becomes an argv and an environment, as Codex builds them.

Scripts run in a shell: a POSIX shell as ``[shell, "-lc" | "-c", script]`` (``-lc`` for
login semantics), PowerShell as ``[shell, ("-NoProfile",) "-Command", script]`` and cmd as
``[cmd, "/c", script]``. The environment is the agent's own plus a few variables Codex
sets for every command (unified exec also forces plain, pager-free output), with the
agent's Python environment first on ``PATH`` (:mod:`agent_magics.tools.sandbox.python_env`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Literal

from agent_magics.tools.sandbox import python_env
from agent_magics.tools.sandbox.environ import HIDDEN_FROM_TOOLS

ShellFamily = Literal["posix", "powershell", "cmd"]

POSIX_SHELLS = frozenset({"bash", "zsh", "sh"})
FALLBACK_SHELL = "/bin/sh"
LOGIN_DISABLED = "login shell is disabled by config; omit `login` or set it to false."

UNIFIED_EXEC_ENV: Mapping[str, str] = {
    "NO_COLOR": "1",
    "TERM": "dumb",
    "LANG": "C.UTF-8",
    "LC_CTYPE": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "COLORTERM": "",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GH_PAGER": "cat",
    "CODEX_CI": "1",
}


def shell_stem(path: str) -> str:
    """A shell's name without directory or extension, lower-cased (``/bin/Bash`` → ``bash``)."""
    return PurePath(path.replace("\\", "/")).stem.lower()


def shell_family(path: str) -> ShellFamily | None:
    stem = shell_stem(path)
    if stem in POSIX_SHELLS:
        return "posix"
    if stem in ("pwsh", "powershell"):
        return "powershell"
    if stem == "cmd":
        return "cmd"
    return None


def resolve_shell(path: str) -> tuple[str, ShellFamily]:
    """The shell binary a model named: kept when it exists, else looked up on ``PATH`` by
    name; a shell of an unknown kind falls back to ``/bin/sh``."""
    family = shell_family(path)
    if family is None:
        return FALLBACK_SHELL, "posix"
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return path, family
    found = shutil.which(path) or shutil.which(shell_stem(path))
    return (found or path), family


def shell_argv(shell: str, family: ShellFamily, script: str, login: bool) -> list[str]:
    if family == "powershell":
        return [shell, "-Command", script] if login else [shell, "-NoProfile", "-Command", script]
    if family == "cmd":
        return [shell, "/c", script]
    return [shell, "-lc" if login else "-c", script]


def spawn_argv(argv: Sequence[str], *, startup: bool = True) -> list[str]:
    """What runs for ``argv``: a ``[sh|bash|zsh, "-lc", script]`` runs the script after
    :func:`python_env.shell_line`, on its first line (line numbers and ``$0`` unchanged),
    so the login profile cannot take the agent's Python off ``PATH``. Other argvs run as
    they are. The argv shown, approved and judged stays the model's.

    ``startup=False`` (the start-up files lie where the model may write them, see
    :func:`no_startup_argv`): a POSIX shell's ``-lc`` or ``-c`` script runs in a shell
    that reads none of them."""
    if not startup:
        return no_startup_argv(argv)
    if len(argv) != 3 or argv[1] != "-lc" or shell_family(argv[0]) != "posix":
        return list(argv)
    return [argv[0], "-lc", python_env.shell_line() + argv[2]]


def no_startup_argv(argv: Sequence[str]) -> list[str]:
    """``[sh|bash|zsh, "-lc" | "-c", script]`` as a shell that reads no start-up file of
    the home: ``bash --noprofile --norc -c`` (``--norc`` also covers the ``.bashrc`` bash
    reads when it thinks sshd started it), ``zsh -f -c`` (only the system's
    ``/etc/zshenv``), ``sh -c`` (a non-login ``sh`` reads none). The environment the
    command gets already has the agent's Python first on ``PATH``
    (:func:`command_env`). Other argvs run as they are."""
    if len(argv) != 3 or argv[1] not in ("-lc", "-c") or shell_family(argv[0]) != "posix":
        return list(argv)
    stem = shell_stem(argv[0])
    flags = {"bash": ["--noprofile", "--norc"], "zsh": ["-f"]}.get(stem, [])
    return [argv[0], *flags, "-c", argv[2]]


def use_login(requested: bool | None, allowed: bool) -> bool:
    """The ``login`` argument against the config: asking for a login shell when login
    shells are disabled is an error the model can fix."""
    from agent_magics.errors import RespondToModel

    if requested and not allowed:
        raise RespondToModel(LOGIN_DISABLED)
    return allowed if requested is None else requested


def command_env(
    thread_id: str, *, unified: bool = False, call_id: str | None = None
) -> dict[str, str]:
    """The agent's environment plus Codex's variables for one command, the agent's
    Python environment first on ``PATH`` (:func:`python_env.pin`).

    The model server's key and Jupyter's tokens (``HIDDEN_FROM_TOOLS``) are left out: a
    command that prints its environment must not carry them into tool output."""
    env = {k: v for k, v in os.environ.items() if k not in HIDDEN_FROM_TOOLS}
    python_env.pin(env)
    if thread_id:
        env["CODEX_THREAD_ID"] = thread_id
    if unified:
        env.update(UNIFIED_EXEC_ENV)
        env["CODEX_APPLY_PATCH_PRESERVE_LINE_ENDINGS"] = "1"
        if call_id:
            env["CODEX_TOOL_CALL_ID"] = call_id
    return env
