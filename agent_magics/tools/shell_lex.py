"""A small lexer for the subset of bash that Codex's command-safety rules look at.

Codex feeds ``bash -lc`` scripts to tree-sitter-bash and then keeps only scripts whose
syntax tree holds nothing but plain commands. This module reaches the same accept /
reject decisions by hand: the lexer turns a script into words, operators, comments and
here-documents, flagging anything that would become an expansion or a substitution,
and :mod:`agent_magics.tools.shell_parse` judges the token stream. Words keep their source
spelling (backslash escapes are not removed, quotes are), as tree-sitter's node text
does. Anything the lexer cannot read raises :class:`Unparsable`.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_magics.tools.shell_words import (
    BLANKS,
    BRACE_RANGE,
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
        self.special_run: tuple[int, int] | None = None  # (start, token index)

    def peek(self, offset: int = 0) -> str:
        i = self.pos + offset
        return self.src[i] if i < len(self.src) else ""

    def run(self) -> list[Token]:
        src = self.src
        while self.pos < len(src):
            c, nxt = src[self.pos], self.peek(1)
            if c in BLANKS:
                self.pos += 1
            elif c == "\\" and (nxt in BLANKS or nxt == "\n"):
                # An escaped blank or a line continuation separates words.
                self.pos += 3 if src.startswith("\r\n", self.pos + 1) else 2
                if nxt == "\r" and src[self.pos - 1] != "\n":
                    raise Unparsable("stray backslash")
                rest = src[self.pos :].strip(" \t\v\f\r")
                if not rest or (not self.tokens and not rest.strip("\n")):
                    raise Unparsable("backslash at the end of the script")
            elif c == "\\" and nxt == "":
                raise Unparsable("backslash at the end of the script")
            elif c == "\n":
                self.newline()
            elif c == "#":
                self.tokens.append(Comment(self.pos))
                end = src.find("\n", self.pos)
                self.pos = len(src) if end < 0 else end
            elif c in "&|;<>()":
                self.operator()
            else:
                self.add_word()
        if self.pending:
            raise Unparsable("here-document without its body")
        return self.tokens

    def newline(self) -> None:
        src, start = self.src, self.pos
        end = start
        while end < len(src) and src[end] == "\n":
            end += 1
        after = src[end + 1 : end + 2]
        joins = bool(self.tokens) and isinstance(self.tokens[-1], Word) and not self.pending
        if joins and src[end : end + 2] == "\\\n":
            self.pos = end  # newlines then a line continuation: the command goes on
            return
        if src[end : end + 1] == "\\" and after not in ("", "\n") and after not in BLANKS and joins:
            # tree-sitter quirk: newlines right before a word that starts with a
            # backslash escape do not end the command; they start that word.
            self.pos = end
            word = self.word()
            self.tokens.append(Word(src[start:end] + word.value, word.kind, src[start : self.pos]))
            return
        self.tokens.append(Op("\n", start))
        self.pos += 1
        if self.pending:
            self.read_bodies()

    def add_word(self) -> None:
        """Append the next word. A lone ``{ } [ ]`` starts a run that swallows the
        blanks and the ``{ } [ ]`` characters after it, as tree-sitter does."""
        src, start = self.src, self.pos
        run = self.special_run
        if run is not None and run[1] == len(self.tokens) - 1 and src[start] in SPECIAL:
            while self.pos < len(src) and src[self.pos] in SPECIAL:
                if BRACE_RANGE.match(src, self.pos):
                    break
                self.pos += 1
            if self.pos > start:
                text = src[run[0] : self.pos]
                self.tokens[-1] = Word(text, "word", text)
                if self.pos >= len(src) or src[self.pos] in WORD_END or src[self.pos] == "\\":
                    return
                start = self.pos
        word = self.word()
        self.tokens.append(word)
        lone = len(word.text) == 1 and word.text in SPECIAL
        self.special_run = (start, len(self.tokens) - 1) if lone else None

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
    return _Lexer(script, heredocs).run()
