"""Which shell scripts Codex can see through, and the commands inside them.

* :func:`parse_shell_script`: a script made only of plain commands (words and quoted
  strings with literal content) joined by ``&&``, ``||``, ``;``, ``|`` or newlines gives
  its commands, each word as bash passes it; anything else gives None. These are the
  scripts whose tree-sitter-bash tree Codex accepts as "word only", less those that bash
  would split differently (tests/tools/test_shell_differential.py runs both on generated
  scripts).
* :func:`parse_heredoc_command`: a script that is one command fed by a here-document
  (``python3 <<'PY' ... PY``) gives that command's words, Codex's "complex parsing".
* :func:`extract_shell_script`: ``[bash|zsh|sh, -lc|-c, script]`` gives the script.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePosixPath

from agent_magics.tools.command_safety.lex import (
    REDIRECTS,
    BodyEnd,
    Comment,
    Heredoc,
    Op,
    Token,
    lex,
)
from agent_magics.tools.command_safety.words import Unparsable, Word

# Words that start something other than a simple command when they come first (or
# are a syntax error there for bash, though tree-sitter reads them as command names).
RESERVED = frozenset(
    {"if", "case", "for", "select", "while", "until", "function", "[", "[[", "!", "{"}
    | {"then", "else", "elif", "fi", "do", "done", "esac", "in", "}", "]]", "time", "coproc"}
    | {"declare", "typeset", "export", "readonly", "local", "unset", "unsetenv"}
)
_ASSIGNMENT = re.compile(r"\w+(\+?=|\[)")
_BAD_NAME = re.compile(r"(?!_[#%@?])\w+([#%@]|\?\w)")  # `x#y`, `a%b` as a name: a syntax error
_JOINERS = frozenset({"&&", "||", "|"})


def _command_words(words: Sequence[Word]) -> list[str] | None:
    """The argv of one plain command, or None when a word is not plain."""
    name = words[0]
    if name.kind != "word" or not _plain_name(name):
        return None
    argv = [name.value]
    for word in words[1:]:
        if word.kind in ("word", "number", "string", "raw_string"):
            if word.kind == "word" and _spelling(word) in ("==", "=~"):
                return None  # tree-sitter reads these as test operators
            argv.append(word.value)
        elif word.kind == "concatenation" and word.value:
            argv.append(word.value)
        else:
            return None
    return argv


def parse_shell_script(script: str) -> list[list[str]] | None:
    """The plain commands of ``script`` in order, or None if it has anything else."""
    try:
        tokens = lex(script)
    except Unparsable:
        return None
    commands: list[list[str]] = []
    current: list[Word] = []
    want_command = False  # an operator was read and its right-hand command is pending
    for token in tokens:
        if isinstance(token, Word):
            current.append(token)
            continue
        if not isinstance(token, Op):
            return None  # comments
        if token.text == "\n" and not current:
            continue  # blank line, or a line break after && || |
        if token.text not in _JOINERS | {";", "\n"} or not current:
            return None
        argv = _command_words(current)
        if argv is None:
            return None
        commands.append(argv)
        current = []
        want_command = token.text in _JOINERS
    if current:
        argv = _command_words(current)
        if argv is None:
            return None
        commands.append(argv)
    elif want_command:
        return None
    return commands


def parse_heredoc_command(script: str) -> list[str] | None:
    """The words of the single command of a here-document script, else None.

    Accepted: optional ``NAME=value`` prefixes, a literal command name and literal
    arguments, file redirections, exactly one ``<<DELIM`` / ``<<-DELIM`` (anything
    after it on that line is not part of the command's words), a body without
    command substitutions, and nothing but comments and blank lines afterwards.
    """
    try:
        tokens = lex(script, heredocs=True)
    except Unparsable:
        return None
    i = _skip_prelude(tokens)
    while i < len(tokens) and _is_assignment(tokens[i]):
        i += 1
    name = _at(tokens, i)
    if not isinstance(name, Word) or not _is_literal(name):
        return None
    if not _plain_name(name):
        return None
    words = [name.value]
    state = "args"  # then "dest" after a redirection, "after" after the here-document
    seen_heredoc = False
    i += 1
    while i < len(tokens) and not _is_op(tokens[i], "\n"):
        token = tokens[i]
        i += 1
        if isinstance(token, Word):
            if state != "args" or token.kind == "fd":
                continue
            if not _is_literal(token):
                return None
            if token.value == "-" and _heredoc_follows(tokens, i):
                continue  # tree-sitter drops a lone `-` right before `<<`
            words.append(token.value)
        elif isinstance(token, Heredoc):
            if seen_heredoc or not token.plain_body:
                return None
            seen_heredoc, state = True, "after"
        elif isinstance(token, Op) and (token.text in REDIRECTS or token.text == "<<<"):
            state = "dest" if state == "args" else state
        elif not (isinstance(token, Comment) and _is_op(_at(tokens, i), "\n")):
            return None
    if not seen_heredoc or not isinstance(_at(tokens, i + 1), BodyEnd):
        return None
    i += 2
    if _is_op(_at(tokens, i), ";"):
        i += 1
    if any(not (isinstance(t, Comment) or _is_op(t, "\n")) for t in tokens[i:]):
        return None
    return words


def _heredoc_follows(tokens: Sequence[Token], i: int) -> bool:
    """Whether only ``N>target`` redirections stand between ``tokens[i]`` and ``<<``."""
    while True:
        token = _at(tokens, i)
        if isinstance(token, Heredoc):
            return True
        if not (isinstance(token, Word) and token.kind == "fd"):
            return False
        i += 3  # descriptor, operator, target


def _spelling(word: Word) -> str:
    """The word's source text without line continuations, as bash reads it."""
    return word.text.replace("\\\n", "")


def _plain_name(name: Word) -> bool:
    text = _spelling(name)
    if name.value in RESERVED or name.value[:1] in ("[", "{"):
        return False
    return not _ASSIGNMENT.match(text) and not _BAD_NAME.match(text)


def _skip_prelude(tokens: Sequence[Token]) -> int:
    """Skip leading comments, blank lines and assignment-only statements."""
    i = 0
    while i < len(tokens):
        j = i
        while _is_assignment(_at(tokens, j)):
            j += 1
        token = _at(tokens, j)
        if isinstance(token, Comment) or _is_op(token, "\n") or (j > i and _is_op(token, ";")):
            i = j + 1
        else:
            return i
    return i


def _at(tokens: Sequence[Token], i: int) -> Token | None:
    return tokens[i] if i < len(tokens) else None


def _is_op(token: Token | None, text: str) -> bool:
    return isinstance(token, Op) and token.text == text


def _is_literal(token: Token) -> bool:
    if not isinstance(token, Word) or token.kind not in ("word", "number"):
        return False
    return _spelling(token) not in ("==", "=~")


def _is_assignment(token: Token | None) -> bool:
    return isinstance(token, Word) and bool(_ASSIGNMENT.match(_spelling(token)))


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
