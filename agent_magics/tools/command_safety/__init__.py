"""Codex's command heuristics: which commands run without asking and which are
dangerous (:mod:`.rules`), read through tree-sitter-bash as Codex reads them
(:mod:`.bash`, :mod:`.parse`), with the scripts bash would run with other words left
out of known-safe (:mod:`.bash_words`); and whether a command that only reads could
still run something the model wrote (:mod:`.paths`)."""
