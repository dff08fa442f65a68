"""Codex's command heuristics: which commands run without asking and which are
dangerous (:mod:`.rules`), read through a small bash lexer (:mod:`.lex`, :mod:`.words`,
:mod:`.parse`); and whether a command that only reads could still run something the
model wrote (:mod:`.paths`)."""
