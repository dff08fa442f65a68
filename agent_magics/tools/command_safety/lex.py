"""A small lexer for the subset of bash that Codex's command-safety rules look at.

Codex feeds ``bash -lc`` scripts to tree-sitter-bash and then keeps only scripts whose
syntax tree holds nothing but plain commands. This module reaches those accept /
reject decisions by hand, with one rule first: a script is only read as plain commands
when bash would split it into the same commands and words. The lexer turns a script into
words (each with the value bash gives it), operators, comments and here-documents,
flagging anything that would become an expansion or a substitution, and
:mod:`agent_magics.tools.command_safety.parse` judges the token stream. Where tree-sitter and bash
read the text differently, or we are unsure, the lexer raises :class:`Unparsable`, so the
script is not known-safe. It reads each character a bounded number of times.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_magics.tools.command_safety.words import (
    BLANKS,
    SPECIAL,
    WORD_END,
    Unparsable,
    Word,
    read_word,
)

_OPERATORS = (
    "<<<", "<<-", "&>>", ";;&", "&&", "||", "|&", ";;", ";&", "&>", "<<", "<&-", ">&-",
    "<&", ">&", ">>", ">|", "<(", ">(", "&", "|", ";", "<", ">", "(", ")",
)  # fmt: skip
# Longer scripts are not read at all (so never known-safe): reading is linear, but a
# script is read several times per call on the event loop, and no read-only command
# needs this much text.
MAX_SCRIPT_CHARS = 100_000
_OPERATOR_CHARS = frozenset("&|;<>()")
REDIRECTS = frozenset({"&>>", "&>", "<&-", ">&-", "<&", ">&", ">>", ">|", "<", ">"})


@dataclass(frozen=True)
class Op:
    text: str  # an operator, a redirection, or "\n"
    start: int


@dataclass(frozen=True)
class Comment:
    start: int


@dataclass(frozen=True)
class Heredoc:
    """``<<DELIM`` / ``<<-DELIM``; ``plain_body`` is False when its body expands."""

    start: int
    plain_body: bool = True


@dataclass(frozen=True)
class BodyEnd:
    """Marks the end of the here-document bodies that followed a newline."""

    start: int


Token = Word | Op | Comment | Heredoc | BodyEnd


class _Lexer:
    def __init__(self, src: str, heredocs: bool) -> None:
        self.src = src
        self.pos = 0
        self.heredocs = heredocs
        self.pending: list[tuple[str, bool, int]] = []  # (delimiter, quoted, token index)
        self.tokens: list[Token] = []
        self.special_run: int | None = None  # token index of a lone { } [ ]

    def peek(self, offset: int = 0) -> str:
        i = self.pos + offset
        return self.src[i] if i < len(self.src) else ""

    def run(self) -> list[Token]:
        src = self.src
        while self.pos < len(src):
            c = src[self.pos]
            if c in BLANKS:
                self.pos += 1
            elif c == "\\" and self.peek(1) == "\n":
                # bash drops a line continuation; one that would join two operators
                # (`&\<newline>&`) is refused rather than modelled.
                after_op = self.pos > 0 and src[self.pos - 1] in _OPERATOR_CHARS
                if after_op and self.peek(2) in _OPERATOR_CHARS:
                    raise Unparsable("a line continuation inside an operator")
                self.pos += 2
            elif c == "\n":
                self.newline()
            elif c == "#":
                self.tokens.append(Comment(self.pos))
                end = src.find("\n", self.pos)
                self.pos = len(src) if end < 0 else end
            elif c in _OPERATOR_CHARS:
                self.operator()
            else:
                self.add_word()
        if self.pending:
            raise Unparsable("here-document without its body")
        return self.tokens

    def newline(self) -> None:
        self.tokens.append(Op("\n", self.pos))
        self.pos += 1
        if self.pending:
            self.read_bodies()

    def add_word(self) -> None:
        """Append the next word. tree-sitter reads a lone ``{ } [ ]`` followed by blanks
        and more of them as one word; bash does not, so that is refused."""
        run = self.special_run
        if run is not None and run == len(self.tokens) - 1 and self.src[self.pos] in SPECIAL:
            raise Unparsable("a run of lone braces or brackets")
        word = self.word()
        self.tokens.append(word)
        lone = len(word.text) == 1 and word.text in SPECIAL
        self.special_run = len(self.tokens) - 1 if lone else None

    def word(self) -> Word:
        word, self.pos = read_word(self.src, self.pos)
        return word

    def operator(self) -> None:
        start = self.pos
        op = next(o for o in _OPERATORS if self.src.startswith(o, start))
        if op in ("<(", ">("):
            raise Unparsable("process substitution")
        self.pos += len(op)
        if op in ("<<", "<<-"):
            if not self.heredocs:
                raise Unparsable("here-document")
            self.heredoc(start)
            return
        self.tokens.append(Op(op, start))

    def heredoc(self, start: int) -> None:
        while self.peek() in BLANKS and self.peek() != "":
            self.pos += 1
        if self.peek() in ("", "\n") or self.peek() in WORD_END:
            raise Unparsable("here-document without a delimiter")
        word = self.word()
        raw = word.text
        if self.peek() == "\\":
            raise Unparsable("backslash right after a here-document delimiter")
        if word.kind in ("string", "raw_string"):
            delim, quoted = word.value, True
        elif word.kind == "word" and raw.startswith("\\") and "\\" not in raw[1:]:
            delim, quoted = raw[1:], True
        elif word.kind in ("word", "number") and "\\" not in raw:
            delim, quoted = raw, False
        else:
            raise Unparsable("here-document delimiter we do not model")
        self.pending.append((delim, quoted, len(self.tokens)))
        self.tokens.append(Heredoc(start))

    def read_bodies(self) -> None:
        """Consume the bodies of the pending here-documents (after a newline)."""
        for delim, quoted, index in self.pending:
            body_start = self.pos
            while True:
                if self.pos >= len(self.src):
                    raise Unparsable("unterminated here-document")
                end = self.src.find("\n", self.pos)
                line = self.src[self.pos : len(self.src) if end < 0 else end]
                stripped = line.lstrip(" \t")
                if stripped.startswith(delim):
                    body = self.src[body_start : self.pos]
                    self.pos += len(line) - len(stripped) + len(delim)
                    break
                self.pos = len(self.src) if end < 0 else end + 1
            token = self.tokens[index]
            if not quoted and not _plain_body(body) and isinstance(token, Heredoc):
                self.tokens[index] = Heredoc(token.start, plain_body=False)
        self.tokens.append(BodyEnd(self.pos))
        self.pending = []


def _plain_body(body: str) -> bool:
    """Whether an unquoted here-document body has no command substitution in it
    (and none of the ``$`` spellings tree-sitter fails on)."""
    if "$(" in body or "\\$" in body:
        return False
    return all(body[i + 1 : i + 2] not in ("", "\n", "'") for i, c in enumerate(body) if c == "$")


def lex(script: str, *, heredocs: bool = False) -> list[Token]:
    """Tokens of ``script``; raises :class:`Unparsable` on anything outside our subset."""
    if len(script) > MAX_SCRIPT_CHARS:
        raise Unparsable("script too long to read")
    return _Lexer(script, heredocs).run()
