"""Reading one bash word the way tree-sitter-bash splits it into nodes.

A word is made of adjacent pieces: bare text (backslash escapes kept as written),
``'...'``, ``"..."`` and expansions. :func:`read_word` reports the node kind the word
would get (``word``, ``number``, ``string``, ``raw_string``, ``concatenation``) or
``other`` when it holds an expansion, and raises :class:`Unparsable` on command
substitutions and unterminated quotes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Only ASCII whitespace separates words for tree-sitter-bash (U+00A0 is a word character).
BLANKS = frozenset(" \t\v\f\r")
WORD_END = BLANKS | set("\n;&|<>()")
SPECIAL = frozenset("{}[]")
_SPECIAL_SPLIT = re.compile(r"[{}\[\]]")
BRACE_RANGE = re.compile(r"\{\d+\.\.\d+\}")
_NUMBER = re.compile(r"-?(0x)?[0-9]+(#[0-9A-Za-z@_]+)?")


class Unparsable(Exception):
    """The script has a syntax error or a construct we do not model (e.g. ``$(...)``)."""


@dataclass(frozen=True)
class Word:
    """One shell word. ``kind`` is the tree-sitter node kind it would become."""

    value: str  # quotes removed, escapes kept
    kind: str  # word | number | string | raw_string | concatenation | fd | other
    text: str  # source spelling


class _WordReader:
    def __init__(self, src: str, pos: int) -> None:
        self.src = src
        self.pos = pos

    def peek(self, offset: int = 0) -> str:
        i = self.pos + offset
        return self.src[i] if i < len(self.src) else ""

    def word(self) -> Word:
        """Read one word made of adjacent pieces (bare text, quotes, expansions)."""
        src, start = self.src, self.pos
        kinds: list[str] = []
        value: list[str] = []
        special = False  # an unescaped { } [ ]: tree-sitter splits the word around it
        while self.pos < len(src):
            c = src[self.pos]
            if c in WORD_END:
                break
            if c == "\\":
                nxt = self.peek(1)
                if kinds and kinds[-1] != "bare" and nxt not in ("'", '"', "\\"):
                    if nxt != "$":
                        break  # tree-sitter starts a new word at `\x` after a quote
                    kinds.append("other")
                if nxt in ("", "\n") or (
                    nxt in BLANKS and (nxt != " " or src[self.pos - 1] in SPECIAL)
                ):
                    break  # the main loop reads it as a separator (or rejects it)
                self.bare(kinds, value, src[self.pos : self.pos + 2])
                self.pos += 2
            elif c == "'":
                end = src.find("'", self.pos + 1)
                if end < 0:
                    raise Unparsable("unterminated single quote")
                kinds.append("raw_string")
                value.append(src[self.pos + 1 : end])
                self.pos = end + 1
            elif c == '"':
                kind, content = self.double_quoted()
                kinds.append(kind)
                value.append(content)
            elif c == "$" or c == "`":
                self.dollar()
                kinds.append("other")
                value.append("")
            else:
                if c in SPECIAL:
                    special = True
                    after_escaped_blank = self.pos == start and src.endswith("\\ ", 0, start)
                    if c == "{" and BRACE_RANGE.match(src, self.pos) and not after_escaped_blank:
                        kinds.append("other")  # {1..3} is a brace expression
                self.bare(kinds, value, c)
                self.pos += 1
        text = src[start : self.pos]
        return Word("".join(value), self.word_kind(kinds, value, special), text)

    def word_kind(self, kinds: list[str], value: list[str], special: bool) -> str:
        if not kinds:
            raise Unparsable("empty word")
        head = _SPECIAL_SPLIT.split(value[0], maxsplit=1)[0] if kinds[0] == "bare" else ""
        test_op = head in ("==", "=~") and (len(kinds) > 1 or head != value[0])
        if test_op or "other" in kinds:
            return "other"  # expansions; `=="x"` (a test operator before a string)
        if len(kinds) > 1 or (special and len(value[0]) > 1):
            return "concatenation"
        if kinds[0] != "bare":
            return kinds[0]
        if not _NUMBER.fullmatch(value[0]):
            return "word"
        if value[0].isdigit() and self.peek() in ("<", ">"):
            return "fd"  # `2>file`: a file descriptor, not an argument
        return "number"

    @staticmethod
    def bare(kinds: list[str], value: list[str], text: str) -> None:
        if kinds and kinds[-1] == "bare":
            value[-1] += text
        else:
            kinds.append("bare")
            value.append(text)

    def double_quoted(self) -> tuple[str, str]:
        """Read ``"..."``; its kind is "string" only when the content is literal."""
        src = self.src
        i = self.pos + 1
        literal = True
        while True:
            if i >= len(src):
                raise Unparsable("unterminated double quote")
            c = src[i]
            if c == "\\":
                i += 2
                continue
            if c == '"':
                break
            if c == "`" or src.startswith("$(", i):
                raise Unparsable("command substitution")
            if c == "$":
                literal = False
            i += 1
        content = src[self.pos + 1 : i]
        self.pos = i + 1
        return ("string" if literal else "other"), content

    def dollar(self) -> None:
        """Skip an expansion (``$x``, ``${x}``, ``$'x'``, ``$"x"``, bare ``$``)."""
        src = self.src
        if src[self.pos] == "`" or src.startswith("$(", self.pos):
            raise Unparsable("command substitution")
        nxt = self.peek(1)
        if nxt == "{":
            depth, i = 0, self.pos + 1
            while i < len(src):
                if src[i] == "{":
                    depth += 1
                elif src[i] == "}":
                    depth -= 1
                    if depth == 0:
                        break
                elif src[i] == "`" or src.startswith("$(", i):
                    raise Unparsable("command substitution")
                i += 1
            else:
                raise Unparsable("unterminated ${")
            self.pos = i + 1
        elif nxt == "'":
            end = src.find("'", self.pos + 2)
            if end < 0:
                raise Unparsable("unterminated $'")
            self.pos = end + 1
        elif nxt == '"':
            self.pos += 1
            self.double_quoted()
        elif nxt and (nxt.isalnum() or nxt == "_"):
            self.pos += 1
            while self.peek() and (self.peek().isalnum() or self.peek() == "_"):
                self.pos += 1
        elif nxt and nxt in "@*#?$!-":
            self.pos += 2
        else:
            self.pos += 1


def read_word(src: str, pos: int) -> tuple[Word, int]:
    """The word starting at ``src[pos]`` and the position just after it."""
    reader = _WordReader(src, pos)
    return reader.word(), reader.pos
