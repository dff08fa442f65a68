"""Codex's reading of ``bash -lc`` scripts, on the tree-sitter-bash grammar Codex uses.

:func:`parse_script` parses a script with tree-sitter-bash; then, as in Codex's
``bash.rs``:

* :func:`word_only_commands` accepts a tree made only of commands of plain words (words,
  numbers, double-quoted strings without expansions, single-quoted strings and their
  concatenations) joined by ``&&``, ``||``, ``;``, ``|`` and newlines, and gives each
  command's words as tree-sitter spells them: the quotes of a string are stripped, its
  content (backslashes too) kept as written;
* :func:`heredoc_command` gives the literal words of the single command of a script that
  has a here-document (``python3 <<'PY' ... PY``).

Those words are not always the ones bash passes (bash removes backslashes, splits on
fewer characters, expands braces and globs):
:mod:`agent_magics.tools.command_safety.bash_words` tells when they are.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import cache

import tree_sitter
import tree_sitter_bash

# Named node kinds and unnamed tokens a word-only script may hold.
_ALLOWED_KINDS = frozenset(
    {"program", "list", "pipeline", "command", "command_name", "word", "string"}
    | {"string_content", "raw_string", "number", "concatenation"}
)
_ALLOWED_TOKENS = frozenset({"&&", "||", ";", "|", '"', "'"})
# What may stand beside the command of a here-document without changing its words.
_HEREDOC_ATTACHMENTS = frozenset(
    {"variable_assignment", "comment", "heredoc_body", "simple_heredoc_body"}
    | {"heredoc_redirect", "herestring_redirect", "file_redirect", "redirected_statement"}
)

Node = tree_sitter.Node
Tree = tree_sitter.Tree

_local = threading.local()


@cache
def _language() -> tree_sitter.Language:
    return tree_sitter.Language(tree_sitter_bash.language())


def _parser() -> tree_sitter.Parser:
    """This thread's parser: a parser is not safe to share between threads, and making
    one costs about as much as parsing a short script."""
    parser: tree_sitter.Parser | None = getattr(_local, "parser", None)
    if parser is None:
        parser = _local.parser = tree_sitter.Parser(_language())
    return parser


def parse_script(script: str) -> tuple[Tree, bytes] | None:
    """The syntax tree of ``script`` and its UTF-8 bytes (None if it has no such bytes)."""
    try:
        src = script.encode("utf-8")
    except UnicodeEncodeError:
        return None
    return _parser().parse(src), src


def node_text(node: Node, src: bytes) -> str | None:
    try:
        return src[node.start_byte : node.end_byte].decode("utf-8")
    except UnicodeDecodeError:
        return None


def _walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.children)


def word_only_commands(tree: Tree, src: bytes) -> list[list[str]] | None:
    """Each command's words when the script is only plain commands joined by ``&&``,
    ``||``, ``;``, ``|`` and newlines; None when it holds anything else."""
    root = tree.root_node
    if root.has_error:
        return None
    commands: list[Node] = []
    for node in _walk(root):
        kind = node.type
        if node.is_named:
            if kind not in _ALLOWED_KINDS:
                return None
            if kind == "command":
                commands.append(node)
        elif kind not in _ALLOWED_TOKENS and kind.strip():
            return None
    commands.sort(key=lambda node: node.start_byte)
    words = [_plain_command_words(node, src) for node in commands]
    return None if any(w is None for w in words) else [w for w in words if w is not None]


def _plain_command_words(command: Node, src: bytes) -> list[str] | None:
    words: list[str] = []
    for child in command.named_children:
        kind = child.type
        if kind == "command_name":
            name = child.named_children[0] if child.named_children else None
            text = node_text(name, src) if name is not None and name.type == "word" else None
        elif kind in ("word", "number"):
            text = node_text(child, src)
        elif kind in ("string", "raw_string"):
            text = _quoted_text(child, src)
        elif kind == "concatenation":
            parts = [_part_text(part, src) for part in child.named_children]
            text = "".join(p for p in parts if p is not None) if None not in parts else None
            text = text or None  # an empty concatenation is refused
        else:
            text = None
        if text is None:
            return None
        words.append(text)
    return words


def _part_text(part: Node, src: bytes) -> str | None:
    if part.type in ("word", "number"):
        return node_text(part, src)
    if part.type in ("string", "raw_string"):
        return _quoted_text(part, src)
    return None


def _quoted_text(node: Node, src: bytes) -> str | None:
    """A string's text without its quotes: double quotes only around literal content."""
    if node.type == "string" and any(p.type != "string_content" for p in node.named_children):
        return None
    text = node_text(node, src)
    quote = '"' if node.type == "string" else "'"
    if text is None or len(text) < 2 or text[0] != quote or text[-1] != quote:
        return None
    return text[1:-1]


def heredoc_command(tree: Tree, src: bytes) -> list[str] | None:
    """The literal words of the one command of a script with a here-document (its
    redirections, assignments and comments left out), or None."""
    root = tree.root_node
    if root.has_error or not any(n.type == "heredoc_redirect" for n in _walk_named(root)):
        return None
    commands = [n for n in _walk_named(root) if n.type == "command"]
    if len(commands) != 1:
        return None
    words: list[str] = []
    for child in commands[0].named_children:
        if child.type == "command_name":
            name = child.named_children[0] if child.named_children else None
            if name is None or not _is_literal(name):
                return None
            text = node_text(name, src)
        elif child.type in ("word", "number"):
            text = node_text(child, src) if _is_literal(child) else None
        elif child.type in _HEREDOC_ATTACHMENTS:
            continue
        else:
            return None
        if text is None:
            return None
        words.append(text)
    return words or None


def _walk_named(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(current.named_children)


def _is_literal(node: Node) -> bool:
    return node.type in ("word", "number") and not node.named_children
