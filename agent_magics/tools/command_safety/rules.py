"""Codex's command heuristics: known-safe commands, dangerous commands, approval keys.

* :func:`is_known_safe_command` — read-only commands that may run without asking.
* :func:`is_dangerous_command` — forced ``rm`` (also behind ``sudo``), which must be
  asked about (or refused under ``never``).
* :func:`commands_of` / :func:`exec_policy_commands` — the sub-commands the approval
  policy judges one by one.
* :func:`canonical_command` — the argv stored in approval keys, so that
  ``/bin/bash -lc "cargo   test"`` and ``bash -lc "cargo test"`` share a key.

The shell-script parsing they rely on lives in :mod:`agent_magics.tools.command_safety.parse`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from agent_magics.tools.command_safety.parse import (
    bash_script_words,
    executable_name,
    extract_powershell_script,
    extract_shell_script,
    parse_heredoc_command,
    parse_shell_script,
    shell_heredoc_command,
    shell_script_commands,
)
from agent_magics.tools.command_safety.paths import git_is_trusted, program_is_trusted

__all__ = [
    "all_known_safe",
    "canonical_command",
    "commands_of",
    "exec_policy_commands",
    "is_dangerous_command",
    "is_known_safe_command",
    "parse_heredoc_command",
    "parse_shell_script",
    "untrusted_by_place",
]

SHELL_SCRIPT_KEY = "__codex_shell_script__"
POWERSHELL_SCRIPT_KEY = "__codex_powershell_script__"

_ALWAYS_SAFE = frozenset(
    {"cat", "cd", "cut", "echo", "expr", "false", "grep", "head", "id", "ls", "nl", "paste"}
    | {"pwd", "rev", "seq", "stat", "tail", "tr", "true", "uname", "uniq", "wc", "which"}
    | {"whoami"}
)
_LINUX_ONLY_SAFE = frozenset({"numfmt", "tac"})
_FIND_UNSAFE = frozenset(
    {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fls", "-fprint", "-fprint0", "-fprintf"}
)
_RG_UNSAFE_FLAGS = frozenset({"--search-zip", "-z"})
_RG_UNSAFE_WITH_VALUE = ("--pre", "--hostname-bin")
_GIT_READ_ONLY = frozenset({"status", "log", "diff", "show", "branch"})
# The only options allowed before git's subcommand. Others can point git at another
# repository or config (`-C`, `--git-dir`, `--work-tree`, `--bare`, `-c`, ...), whose
# hooks, `core.fsmonitor` or pager git would run; Codex skips over them.
_GIT_HARMLESS_GLOBALS = frozenset(
    {"--", "--no-pager", "-P", "--no-optional-locks", "--literal-pathspecs"}
    | {"--glob-pathspecs", "--noglob-pathspecs", "--icase-pathspecs", "--no-replace-objects"}
)
_GIT_UNSAFE_FLAGS = frozenset({"--output", "--ext-diff", "--textconv", "--exec", "--paginate"})
_GIT_BRANCH_LISTING = frozenset(
    {"--list", "-l", "--show-current", "-a", "--all", "-r", "--remotes", "-v", "-vv"}
    | {"--verbose"}
)


def is_known_safe_command(
    argv: Sequence[str], *, cwd: Path | None = None, writable_roots: Sequence[Path] = ()
) -> bool:
    """Whether ``argv`` only reads: a safe command, or a ``bash -lc`` script of them.

    Every element equal to ``zsh`` counts as ``bash`` first, as in Codex. ``cwd`` is the
    folder the command runs in and ``writable_roots`` where the model's commands may
    write: a program or repository found there is not trusted (see
    :mod:`agent_magics.tools.command_safety.paths`). Without them only absolute program paths
    count, and nothing is taken for model-written.
    """
    command = ["bash" if arg == "zsh" else arg for arg in argv]
    if _is_safe_exec(command, cwd, writable_roots):
        return True
    commands = shell_script_commands(command)
    return bool(commands) and all_known_safe(
        commands or [], argv=command, cwd=cwd, writable_roots=writable_roots
    )


def all_known_safe(
    commands: Sequence[Sequence[str]],
    *,
    argv: Sequence[str],
    cwd: Path | None,
    writable_roots: Sequence[Path],
) -> bool:
    """Whether every sub-command of ``argv`` is known-safe where it runs: after a ``cd``
    the folder is unknown. When ``argv`` is a shell script, ``commands`` are read as
    Codex reads them and the words bash passes must be known-safe too
    (:func:`bash_script_words`; tree-sitter keeps the backslash of ``find . -\\delete``).
    The shell around them reads no start-up file the model or the repository may have
    written: such a shell runs without them
    (:func:`agent_magics.tools.unified_exec.snapshot.snapshot_command`)."""
    readings = [commands]
    script = extract_shell_script(argv)
    if script is not None:
        as_bash = bash_script_words(script)
        if as_bash is None:
            return False
        readings.append(as_bash)
    return all(_all_safe_here(reading, cwd, writable_roots) for reading in readings)


def _all_safe_here(
    commands: Sequence[Sequence[str]], cwd: Path | None, writable_roots: Sequence[Path]
) -> bool:
    here = cwd
    for command in commands:
        if not _is_safe_exec(command, here, writable_roots):
            return False
        if command and command[0] == "cd":
            here = None
    return True


def untrusted_by_place(
    commands: Sequence[Sequence[str]], *, cwd: Path | None, writable_roots: Sequence[Path]
) -> str | None:
    """Why ``commands``, each known-safe by name, are not known-safe where they run: the
    first one whose program (or, for git, whose repository or git config) lies where
    the model's commands may write, as a phrase for the approval question; None when
    one is not safe by name at all, or when none is refused by its place."""
    here = cwd
    for command in commands:
        if not command or not _is_safe_by_name(command):
            return None
        if not program_is_trusted(command[0], here, writable_roots):
            return f"the program `{command[0]}` names lies where commands may write"
        if executable_name(command[0]) == "git" and not git_is_trusted(here, writable_roots):
            return "the git repository or git config it reads lies where commands may write"
        if command[0] == "cd":
            here = None
    return None


def _is_safe_exec(command: Sequence[str], cwd: Path | None, roots: Sequence[Path]) -> bool:
    if not command or not _is_safe_by_name(command):
        return False
    if not program_is_trusted(command[0], cwd, roots):
        return False
    return executable_name(command[0]) != "git" or git_is_trusted(cwd, roots)


def _is_safe_by_name(command: Sequence[str]) -> bool:
    name = executable_name(command[0])
    args = command[1:]
    if name in _ALWAYS_SAFE:
        return True
    if name in _LINUX_ONLY_SAFE:
        return sys.platform.startswith("linux")
    if name == "base64":
        # `-o`, `-oFILE`, `--output`, `--output=FILE` write a file.
        return not any(
            a.startswith("-o") or a == "--output" or a.startswith("--output=") for a in args
        )
    if name == "find":
        return not any(a in _FIND_UNSAFE for a in command)
    if name == "rg":
        return not any(
            a in _RG_UNSAFE_FLAGS
            or any(a == o or a.startswith(f"{o}=") for o in _RG_UNSAFE_WITH_VALUE)
            for a in command
        )
    if name == "git":
        return _is_safe_git(command)
    if name == "sed":
        return len(command) <= 4 and _arg(command, 1) == "-n" and _is_sed_print(_arg(command, 2))
    return False


def _arg(command: Sequence[str], i: int) -> str | None:
    return command[i] if i < len(command) else None


def _is_sed_print(arg: str | None) -> bool:
    """``<N>p`` or ``<M>,<N>p`` with ASCII digits."""
    if arg is None or not arg.endswith("p"):
        return False
    parts = arg[:-1].split(",")
    return len(parts) <= 2 and all(p and p.isascii() and p.isdigit() for p in parts)


def _is_safe_git(command: Sequence[str]) -> bool:
    if any(
        a in ("-c", "--config-env")
        or (a.startswith("-c") and len(a) > 2)
        or a.startswith("--config-env=")
        for a in command
    ):
        return False  # config overrides can make git run arbitrary programs
    found = _git_subcommand(command)
    if found is None:
        return False
    index, sub = found
    sub_args = command[index + 1 :]
    if any(
        a in _GIT_UNSAFE_FLAGS or a.startswith("--output=") or a.startswith("--exec=")
        for a in sub_args
    ):
        return False
    if sub != "branch" or not sub_args:
        return True
    return all(a in _GIT_BRANCH_LISTING or a.startswith("--format=") for a in sub_args)


def _git_subcommand(command: Sequence[str]) -> tuple[int, str] | None:
    """The first non-option argument after git's global options, if read-only and
    only harmless global options come before it."""
    for index in range(1, len(command)):
        arg = command[index]
        if arg in _GIT_HARMLESS_GLOBALS:
            continue
        if arg.startswith("-"):
            return None
        return (index, arg) if arg in _GIT_READ_ONLY else None
    return None


def is_dangerous_command(argv: Sequence[str]) -> bool:
    """``rm -f`` / ``rm -rf`` (also after ``sudo``), directly or in a plain script, read
    as Codex reads it or as bash runs it: ``r\\m -f x`` is Codex's ``r\\m`` but bash's
    ``rm``, and stays dangerous (Codex lets it through)."""
    if _is_dangerous_exec(argv):
        return True
    readings = [shell_script_commands(argv)]
    script = extract_shell_script(argv)
    if script is not None:
        readings.append(bash_script_words(script))
    return any(r is not None and any(_is_dangerous_exec(c) for c in r) for r in readings)


def _is_dangerous_exec(command: Sequence[str]) -> bool:
    # Codex compares the literal argv[0] here (not the file name) and only argv[1].
    while command and command[0] == "sudo":
        command = command[1:]
    return bool(command) and command[0] == "rm" and _arg(command, 1) in ("-f", "-rf")


def exec_policy_commands(argv: Sequence[str]) -> tuple[list[list[str]], bool]:
    """The sub-commands the approval policy judges, and whether "complex parsing"
    (a here-document prefix) produced them; known-safe never applies to those."""
    commands = shell_script_commands(argv)
    if commands:
        return commands, False
    heredoc = shell_heredoc_command(argv)
    if heredoc is not None:
        return [heredoc], True
    return [list(argv)], False


def commands_of(argv: Sequence[str]) -> list[list[str]]:
    """The sub-commands of ``argv`` (see :func:`exec_policy_commands`)."""
    return exec_policy_commands(argv)[0]


def canonical_command(argv: Sequence[str]) -> list[str]:
    """The argv used in approval keys (Codex's ``canonicalize_command_for_approval``)."""
    commands = shell_script_commands(argv)
    if commands is not None and len(commands) == 1:
        return commands[0]
    script = extract_shell_script(argv)
    if script is not None:
        return [SHELL_SCRIPT_KEY, argv[1], script]
    script = extract_powershell_script(argv)
    if script is not None:
        return [POWERSHELL_SCRIPT_KEY, script]
    return list(argv)
