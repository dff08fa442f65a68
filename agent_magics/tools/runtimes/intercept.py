"""Spotting apply_patch run through a shell tool, so it can be applied in-process.

Codex recognises ``["apply_patch" | "applypatch", PATCH]`` and a shell wrapper
(``bash|zsh|sh -c|-lc``, ``pwsh|powershell [-NoProfile] -Command``, ``cmd /c``) whose
whole script is ``apply_patch <<'EOF' … EOF``, optionally preceded by ``cd DIR &&``.
A patch handed over without any ``apply_patch`` is refused with a hint instead.

Only the finding lives here; the shell handlers apply what is found through the
apply_patch tool's own path. Codex 0.169.0 adds no note to the history for such a call
(its recordings show none), so neither do we.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_magics.apply_patch.parser import PatchError, parse_patch
from agent_magics.errors import RespondToModel
from agent_magics.tools.unified_exec.command_line import shell_stem

APPLY_PATCH_NAMES = ("apply_patch", "applypatch")
IMPLICIT_PATCH = (
    "apply_patch verification failed: patch detected without explicit call to apply_patch. "
    'Rerun as ["apply_patch", "<patch>"]'
)

_BLANK = r"[ \t]*"
_WORD = r"[^\s'\"\\$`;&|<>(){}#*?\[\]]+"
_CD = rf"cd[ \t]+(?P<dir>{_WORD}|'[^']*'|\"[^\"\\$`]*\"){_BLANK}&&\s*"
_HEAD = re.compile(
    rf"\s*(?:{_CD})?(?:apply_patch|applypatch){_BLANK}<<{_BLANK}"
    rf"(?P<mark>'[^'\n]+'|\"[^\"\n]+\"|[A-Za-z0-9_]+){_BLANK}\n"
)


@dataclass(frozen=True)
class PatchCall:
    """An apply_patch found in a command: the patch text and the folder to apply it in."""

    patch: str
    cwd: Path


def shell_script(argv: Sequence[str]) -> str | None:
    """The script of a shell wrapper argv, or ``None`` when ``argv`` is not one."""
    if len(argv) == 3:
        shell, flag, script = argv
        stem = shell_stem(shell)
        if stem in ("bash", "zsh", "sh") and flag in ("-lc", "-c"):
            return script
        if stem in ("pwsh", "powershell") and flag.lower() == "-command":
            return script
        if stem == "cmd" and flag.lower() == "/c":
            return script
    if (
        len(argv) == 4
        and shell_stem(argv[0]) in ("pwsh", "powershell")
        and argv[1].lower() == "-noprofile"
        and argv[2].lower() == "-command"
    ):
        return argv[3]
    return None


def _unquote(token: str) -> str:
    if len(token) >= 2 and token[0] == token[-1] and token[0] in "'\"":
        return token[1:-1]
    return token


def heredoc_patch(script: str) -> tuple[str, str | None] | None:
    """``(patch, cd_dir)`` when ``script`` is exactly ``[cd DIR &&] apply_patch <<MARK``
    followed by the body and the closing ``MARK`` line, else ``None``."""
    head = _HEAD.match(script)
    if head is None:
        return None
    mark = _unquote(head["mark"])
    rest = script[head.end() :]
    body: list[str] = []
    lines = rest.split("\n")
    for index, line in enumerate(lines):
        if line == mark:
            if "\n".join(lines[index + 1 :]).strip():
                return None  # something runs after the heredoc
            cd_dir = _unquote(head["dir"]) if head["dir"] is not None else None
            return "\n".join(body).rstrip("\n"), cd_dir
        body.append(line)
    return None  # the heredoc is never closed


def _is_patch(text: str) -> bool:
    try:
        parse_patch(text)
    except PatchError:
        return False
    return True


def find_apply_patch(argv: Sequence[str], cwd: Path) -> PatchCall | None:
    """The apply_patch call ``argv`` makes, if any.

    Raises :class:`RespondToModel` when ``argv`` (or a shell script) is a bare patch."""
    if len(argv) == 1 and _is_patch(argv[0]):
        raise RespondToModel(IMPLICIT_PATCH)
    script = shell_script(argv)
    if script is not None and _is_patch(script):
        raise RespondToModel(IMPLICIT_PATCH)
    if len(argv) == 2 and argv[0] in APPLY_PATCH_NAMES:
        return PatchCall(argv[1], cwd)
    if script is None:
        return None
    found = heredoc_patch(script)
    if found is None:
        return None
    patch, cd_dir = found
    return PatchCall(patch, cwd / cd_dir if cd_dir is not None else cwd)
