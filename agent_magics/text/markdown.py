"""Markdown pieces that hold any text safely: a fence or an inline span no backtick run
inside the text can close. Used by the cell's transcript and by exports."""

from __future__ import annotations

import re

_TICKS = re.compile(r"`+")


def fence(text: str, lang: str = "") -> str:
    """A fenced code block that no backtick run inside ``text`` can close."""
    longest = max((len(m) for m in _TICKS.findall(text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}"


def inline_code(text: str) -> str:
    """An inline code span around ``text``, whatever backticks it holds."""
    longest = max((len(m) for m in _TICKS.findall(text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"
