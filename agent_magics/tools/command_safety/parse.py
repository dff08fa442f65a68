"""Which shell scripts Codex can see through, and the commands inside them.

* :func:`parse_shell_script`: a script made only of plain commands (words and quoted
  strings with literal content) joined by ``&&``, ``||``, ``;``, ``|`` or newlines gives
  its commands, each word as tree-sitter-bash spells it (Codex's "word only" commands);
  anything else gives None. :func:`bash_script_words` gives the words bash passes instead,
  when it splits the script alike (see :mod:`agent_magics.tools.command_safety.bash_words`).
* :func:`parse_heredoc_command`: a script that is one command fed by a here-document
  (``python3 <<'PY' ... PY``) gives that command's words, Codex's "complex parsing".
* :func:`extract_shell_script`: ``[bash|zsh|sh, -lc|-c, script]`` gives the script.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath

from agent_magics.tools.command_safety.bash import (
    heredoc_command,
    parse_script,
    word_only_commands,
)
from agent_magics.tools.command_safety.bash_words import bash_words


def parse_shell_script(script: str) -> list[list[str]] | None:
    """The plain commands of ``script`` in order, or None if it has anything else."""
    parsed = parse_script(script)
    return None if parsed is None else word_only_commands(*parsed)


def bash_script_words(script: str) -> list[list[str]] | None:
    """The words bash passes to the commands :func:`parse_shell_script` reads (bash
    removes backslashes that tree-sitter keeps), or None when the script is not plain
    commands or bash would split it into other commands or words."""
    parsed = parse_script(script)
    if parsed is None or word_only_commands(*parsed) is None:
        return None
    return bash_words(*parsed)


def parse_heredoc_command(script: str) -> list[str] | None:
    """The literal words of the single command of a here-document script, else None.

    The script may hold one command only (a ``$(...)`` in the body is a second one),
    with at least one here-document; that command's assignments, redirections and
    comments are left out of its words, and a quoted or expanded word refuses it.
    """
    parsed = parse_script(script)
    return None if parsed is None else heredoc_command(*parsed)


def _shell_kind(path: str) -> str | None:
    """Codex's shell detection: exact names first, then the file stem, repeatedly."""
    while True:
        if path in ("bash", "zsh", "sh", "cmd", "pwsh", "powershell"):
            return "powershell" if path == "pwsh" else path
        stem = _rust_file_stem(path)
        if stem is None or stem == path:
            return None
        path = stem


def _rust_file_stem(path: str) -> str | None:
    name = PurePosixPath(path).name
    if name in ("", ".."):
        return None
    base, dot, _ = name.rpartition(".")
    return base if dot and base else name


def executable_name(raw: str) -> str | None:
    """The file name of an executable path (``/usr/bin/git`` -> ``git``)."""
    name = PurePosixPath(raw).name
    return None if name in ("", "..") else name


def extract_shell_script(argv: Sequence[str]) -> str | None:
    """The script of ``[bash|zsh|sh, -lc|-c, script]`` (shell by path or name)."""
    if len(argv) != 3 or argv[1] not in ("-lc", "-c"):
        return None
    return argv[2] if _shell_kind(argv[0]) in ("bash", "zsh", "sh") else None


def extract_powershell_script(argv: Sequence[str]) -> str | None:
    """The script of ``[pwsh|powershell, (-NoLogo|-NoProfile)..., -Command|-c, script]``."""
    if len(argv) < 3 or _shell_kind(argv[0]) != "powershell":
        return None
    for i in range(1, len(argv) - 1):
        flag = "".join(c.lower() if c.isascii() else c for c in argv[i])
        if flag not in ("-nologo", "-noprofile", "-command", "-c"):
            return None
        if flag in ("-command", "-c"):
            return argv[i + 1]
    return None


def shell_script_commands(argv: Sequence[str]) -> list[list[str]] | None:
    """The plain commands of a ``bash -lc`` style argv, or None."""
    script = extract_shell_script(argv)
    return None if script is None else parse_shell_script(script)


def shell_heredoc_command(argv: Sequence[str]) -> list[str] | None:
    """The here-document command of a ``bash -lc`` style argv, or None."""
    script = extract_shell_script(argv)
    return None if script is None else parse_heredoc_command(script)
