"""Reading back what :func:`agent_magics.text.visible.visible` wrote out: the approval
tests check that the text a person approved, read back, is the text that ran."""

from __future__ import annotations

import re

ESCAPED = re.compile(r"\\x([0-9a-f]{2})|<U\+([0-9A-F]{4,6})>")


def read_back(shown: str) -> str:
    """The text :func:`visible` was given: every escape it wrote, read back."""
    return ESCAPED.sub(lambda m: chr(int(m.group(1) or m.group(2), 16)), shown)
