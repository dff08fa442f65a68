"""Reading one bash word: where it ends, the value bash passes to the command, and the
tree-sitter-bash node kind Codex's rules see.

A word is made of adjacent pieces: bare text, ``'...'``, ``"..."`` and expansions.
:func:`read_word` gives the word's value as bash builds it (quotes and escapes removed,
line continuations dropped) and the node kind it would get (``word``, ``number``,
``string``, ``raw_string``, ``concatenation``), or ``other`` when it holds an expansion.
Where bash and tree-sitter would split the text differently, or where bash would turn
the word into several words or into an option (brace expansion, a glob with no literal
prefix), it raises :class:`Unparsable`: such a script is never read as plain commands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Only space and tab separate words in bash; U+00A0 and friends are word characters.
BLANKS = frozenset(" \t")
WORD_END = BLANKS | set("\n;&|<>()")
SPECIAL = frozenset("{}[]")
GLOB = frozenset("*?[")
# Word characters for bash that tree-sitter-bash (or another shell) reads as blanks.
UNSURE = frozenset("\v\f\r\0")
_SPECIAL_SPLIT = re.compile(r"[{}\[\]]")
BRACE_RANGE = re.compile(r"\{\d+\.\.\d+\}")
_NUMBER = re.compile(r"-?(0x)?[0-9]+(#[0-9A-Za-z@_]+)?")
_DOUBLE_QUOTE_ESCAPES = frozenset('\\"$`')
_PLAIN_RUN = re.compile(r"[A-Za-z0-9_./,:=+%@^~-]+")  # characters with no meaning to bash


class Unparsable(Exception):
    """The script has a syntax error or a construct we do not model (e.g. ``$(...)``)."""


@dataclass(frozen=True)
class Word:
    """One shell word. ``kind`` is the tree-sitter node kind it would become."""

    value: str  # the argument bash passes: quotes, escapes and line continuations removed
    kind: str  # word | number | string | raw_string | concatenation | fd | other
    text: str  # source spelling


def is_unsure(c: str) -> bool:
    """A character that shells disagree about: a word character for bash, a blank for
    tree-sitter (``\\v \\f \\r``), or Unicode white space."""
    return c in UNSURE or (not c.isascii() and c.isspace())


class _WordReader:
    def __init__(self, src: str, pos: int) -> None:
        self.src = src
        self.pos = pos
        self.kinds: list[str] = []
        self.raw: list[str] = []  # per piece: its spelling without the quotes
        self.cooked: list[str] = []  # per piece: the characters bash keeps
        self.bare_raw: list[str] = []  # the bare piece being read, in slices
        self.bare_cooked: list[str] = []
        self.glob_at: int | None = None  # value length before the first unquoted glob
        self.brace_open = False

    def peek(self, offset: int = 0) -> str:
        i = self.pos + offset
        return self.src[i] if i < len(self.src) else ""

    def word(self) -> Word:
        """Read one word made of adjacent pieces (bare text, quotes, expansions)."""
        src, start = self.src, self.pos
        special = False  # an unescaped { } [ ]: tree-sitter splits the word around it
        while self.pos < len(src):
            c = src[self.pos]
            if c in WORD_END:
                break
            if c == "\\":
                self.escape(start)
            elif c == "'":
                end = src.find("'", self.pos + 1)
                if end < 0:
                    raise Unparsable("unterminated single quote")
                self.piece("raw_string", src[self.pos + 1 : end], src[self.pos + 1 : end])
                self.pos = end + 1
            elif c == '"':
                self.double_quoted()
            elif c == "$" or c == "`":
                self.dollar()
                self.piece("other", "", "")
            elif run := _PLAIN_RUN.match(src, self.pos):
                self.bare(run.group(), run.group())
                self.pos = run.end()
            else:
                if is_unsure(c):
                    raise Unparsable("a character shells do not agree on")
                if c in SPECIAL:
                    special = True
                    if c == "{" and BRACE_RANGE.match(src, self.pos):
                        self.flush()
                        self.kinds.append("other")  # {1..3} is a brace expression
                        self.raw.append("")
                        self.cooked.append("")
                    self.brace(c, lone=self.pos == start + 1 and src[start] == "{")
                if c in GLOB and self.glob_at is None:
                    self.glob_at = self.value_length()
                self.bare(c, c)
                self.pos += 1
        self.flush()
        text = src[start : self.pos]
        value = "".join(self.cooked)
        if self.glob_at is not None and (self.glob_at == 0 or value.startswith("-")):
            raise Unparsable("a glob that may expand to an option")
        return Word(value, self.word_kind(special), text)

    def escape(self, start: int) -> None:
        """A backslash outside quotes: a line continuation, or an escaped character."""
        src = self.src
        nxt = self.peek(1)
        if nxt == "\n":
            self.pos += 2  # bash drops a line continuation, even inside a word
            return
        if nxt == "":
            raise Unparsable("backslash at the end of the script")
        if nxt in BLANKS and (nxt == "\t" or self.pos == start or src[self.pos - 1] in SPECIAL):
            raise Unparsable("an escaped blank that tree-sitter reads as a separator")
        if is_unsure(nxt):
            raise Unparsable("an escaped character shells do not agree on")
        if self.kinds and self.kinds[-1] != "bare" and not self.bare_raw:
            if nxt not in ("'", '"', "\\", "$"):
                raise Unparsable("tree-sitter starts a new word at an escape after a quote")
            if nxt == "$":
                self.kinds.append("other")
                self.raw.append("")
                self.cooked.append("")
        self.bare(src[self.pos : self.pos + 2], nxt)
        self.pos += 2

    def brace(self, c: str, lone: bool) -> None:
        """Refuse what bash could brace-expand into several words: an unquoted ``{``
        later closed by an unquoted ``}`` in the same word (a lone ``{}`` is literal)."""
        if c == "{":
            self.brace_open = True
        elif c == "}" and self.brace_open and not lone:
            raise Unparsable("brace expansion")

    def value_length(self) -> int:
        return sum(map(len, self.cooked)) + sum(map(len, self.bare_cooked))

    def bare(self, raw: str, cooked: str) -> None:
        self.bare_raw.append(raw)
        self.bare_cooked.append(cooked)

    def flush(self) -> None:
        if self.bare_raw:
            self.kinds.append("bare")
            self.raw.append("".join(self.bare_raw))
            self.cooked.append("".join(self.bare_cooked))
            self.bare_raw, self.bare_cooked = [], []

    def piece(self, kind: str, raw: str, cooked: str) -> None:
        self.flush()
        self.kinds.append(kind)
        self.raw.append(raw)
        self.cooked.append(cooked)

    def word_kind(self, special: bool) -> str:
        kinds, raw = self.kinds, self.raw
        if not kinds:
            raise Unparsable("empty word")
        head = _SPECIAL_SPLIT.split(raw[0], maxsplit=1)[0] if kinds[0] == "bare" else ""
        test_op = head in ("==", "=~") and (len(kinds) > 1 or head != raw[0])
        if test_op or "other" in kinds:
            return "other"  # expansions; `=="x"` (a test operator before a string)
        if len(kinds) > 1 or (special and len(raw[0]) > 1):
            return "concatenation"
        if kinds[0] != "bare":
            return kinds[0]
        if not _NUMBER.fullmatch(raw[0]):
            return "word"
        if raw[0].isdigit() and self.peek() in ("<", ">"):
            return "fd"  # `2>file`: a file descriptor, not an argument
        return "number"

    def double_quoted(self) -> None:
        """Read ``"..."``; its kind is "string" only when the content is literal."""
        src = self.src
        i = self.pos + 1
        literal = True
        cooked: list[str] = []
        mark = i  # start of the text not yet copied to ``cooked``
        while True:
            if i >= len(src):
                raise Unparsable("unterminated double quote")
            c = src[i]
            if c == "\\":
                nxt = src[i + 1 : i + 2]
                if nxt == "\n" or nxt in _DOUBLE_QUOTE_ESCAPES:
                    cooked.append(src[mark:i])
                    mark = i + (2 if nxt == "\n" else 1)  # keep the escaped character
                i += 2
                continue
            if c == '"':
                break
            if c == "`" or src.startswith("$(", i):
                raise Unparsable("command substitution")
            if c == "$":
                literal = False
            i += 1
        cooked.append(src[mark:i])
        self.piece("string" if literal else "other", src[self.pos + 1 : i], "".join(cooked))
        self.pos = i + 1

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
            self.kinds.pop()
            self.raw.pop()
            self.cooked.pop()
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
