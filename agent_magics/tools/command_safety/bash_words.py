"""The words bash passes to the commands of a word-only script, where it splits the
script as tree-sitter-bash does.

Codex judges a script by tree-sitter's words (:mod:`agent_magics.tools.command_safety.bash`),
and those are the words the approval policy sees. Bash passes other words: it removes
backslashes (``find . -\\delete`` runs ``find . -delete``). :func:`bash_words` gives
them, so that a command is known-safe only when it is by both readings. Where bash
splits the script otherwise, it gives None: bash ends a command at a newline that
tree-sitter reads past (``ls`` newline ``\\rm -rf x``), does not split at ``\\v``,
``\\f``, ``\\r`` or an escaped blank, expands ``{a,b}`` into several words and a leading
glob into file names (which may look like options), and reads ``then`` or ``time`` as
reserved words. It looks only at the text of the tree's words and at the text between
them; ``tests/tools/command_safety/test_shell_differential.py`` holds it against real bash. Tilde
expansion changes a word's value, never where it ends nor whether it is an option, and
is left alone.
"""

from __future__ import annotations

import itertools
import re

from agent_magics.tools.command_safety.bash import Node, Tree, node_text

# Words that, unquoted in a command's first place, are bash syntax rather than a name.
RESERVED = frozenset(
    {"!", "[[", "]]", "{", "}", "case", "coproc", "do", "done", "elif", "else", "esac"}
    | {"fi", "for", "function", "if", "in", "select", "then", "time", "until", "while"}
)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_GLOB = re.compile(r"[*?\[]")
_BRACES = re.compile(r"\{.*\}", re.DOTALL)
_CONTINUATION = "\\\n"
_QUOTED = "_"  # stands for a quoted character in a word's pattern
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)
_ESCAPED = re.compile(r"\\[^\n]")
_NOT_BARE = re.compile(r"[\s\0\\]")
# What a backslash escapes inside double quotes (before anything else it stays); an
# escaped newline is dropped.
_DOUBLE_QUOTE_ESCAPE = re.compile(r'\\([$`"\\\n])')


def bash_words(tree: Tree, src: bytes) -> list[list[str]] | None:
    """The words bash passes to each command of a script that
    :func:`agent_magics.tools.command_safety.bash.word_only_commands` accepted, or None
    where bash would split the script into other commands or words."""
    commands = [n for n in _named(tree.root_node) if n.type == "command"]
    commands.sort(key=lambda node: node.start_byte)
    result: list[list[str]] = []
    end = 0
    for command in commands:
        words = _command_words(command, src)
        if words is None or not _is_separator(src[end : command.start_byte]):
            return None
        result.append(words)
        end = command.end_byte
    return result if _is_separator(src[end:]) else None


def _named(node: Node) -> list[Node]:
    found, stack = [], [node]
    while stack:
        current = stack.pop()
        found.append(current)
        stack.extend(current.named_children)
    return found


def _is_separator(gap: bytes) -> bool:
    """Text between commands: blanks, newlines and the operators tree-sitter read
    (their kinds were checked), with line continuations that bash drops. Refused when
    it is nothing but continuations, which bash may join into one operator, and when an
    operator starts a line, a syntax error for bash."""
    text = gap.decode("utf-8", errors="replace")
    rest = text.replace(_CONTINUATION, "")
    if text and not rest:
        return False
    line_break = rest.find("\n")
    if line_break >= 0 and any(c in "&|;" for c in rest[line_break:]):
        return False
    return all(c in " \t\n&|;" for c in rest)


def _command_words(command: Node, src: bytes) -> list[str] | None:
    nodes = command.named_children
    for before, after in itertools.pairwise(nodes):
        gap = src[before.end_byte : after.start_byte].decode("utf-8", errors="replace")
        rest = gap.replace(_CONTINUATION, "")
        if not rest or any(c not in " \t" for c in rest):
            return None  # joined by bash, or split by bash at a newline
    words: list[str] = []
    for node in nodes:
        pieces = node.named_children if node.type in ("command_name", "concatenation") else []
        read = _read_word(pieces or [node], src)
        if read is None:
            return None
        value, pattern = read
        if not words and (pattern in RESERVED or _ASSIGNMENT.match(pattern)):
            return None
        if not words and value.startswith("%"):
            return None  # a job for bash (`%1` is `fg %1`), not a program
        if pattern != "{}" and _BRACES.search(pattern):
            return None  # brace expansion may make several words of it
        glob = _GLOB.search(pattern)
        if glob and (glob.start() == 0 or value.startswith("-")):
            return None  # may expand to a file name that reads as an option
        words.append(value)
    return words


def _read_word(pieces: list[Node], src: bytes) -> tuple[str, str] | None:
    """The value bash gives a word, and its pattern: the value with every quoted or
    escaped character as ``_``, so only what bash may expand stays."""
    value: list[str] = []
    pattern: list[str] = []
    for piece in pieces:
        text = node_text(piece, src)
        if text is None:
            return None
        if piece.type in ("raw_string", "string"):
            inner = text[1:-1] if piece.type == "raw_string" else _double_quoted(text[1:-1])
            value.append(inner)
            pattern.append(_QUOTED * len(inner))
            continue
        bare = _unquoted(text)
        if bare is None:
            return None
        value.append(bare[0])
        pattern.append(bare[1])
    return "".join(value), "".join(pattern)


def _unquoted(text: str) -> tuple[str, str] | None:
    """Bare text as bash reads it (``\\x`` is ``x``, a line continuation is dropped)
    and its pattern; None at a blank, or an escaped blank other than a space, where
    tree-sitter and bash part."""
    parts = _ESCAPE.split(text)  # text, escaped character, text, ...
    if _NOT_BARE.search("".join(parts[0::2])):
        return None  # a blank, or a backslash ending the text
    if any(c not in " \n" and (c.isspace() or c == "\0") for c in set(parts[1::2])):
        return None
    value = "".join(parts).replace("\n", "")  # only continuations left a newline
    return value, _ESCAPED.sub(_QUOTED, text).replace(_CONTINUATION, "")


def _double_quoted(inner: str) -> str:
    """The content of ``"..."`` as bash reads it (no expansions: tree-sitter saw none)."""
    parts = _DOUBLE_QUOTE_ESCAPE.split(inner)
    parts[1::2] = ["" if c == "\n" else c for c in parts[1::2]]
    return "".join(parts)
