"""Keeping the API key out of everything we write: errors, recordings, model output.

A stream may cut the key across two deltas, so a long key is found by its pieces too:
any run of :data:`MIN_PIECE` or more of its characters is replaced. A key shorter than
:data:`MIN_KEY_FOR_PIECES` is matched whole only, so that short test keys do not eat
ordinary words.
"""

from __future__ import annotations

import json
import re
from typing import Any

REDACTED = "[redacted]"
MIN_PIECE = 12
MIN_KEY_FOR_PIECES = 24


class Scrubber:
    """Replaces the secret, and any long enough piece of it, with ``[redacted]``."""

    def __init__(self, secret: str | None) -> None:
        self.secret = secret or ""
        self._pieces: re.Pattern[str] | None = None
        if len(self.secret) >= MIN_KEY_FOR_PIECES:
            count = len(self.secret) - MIN_PIECE + 1
            pieces = sorted({self.secret[i : i + MIN_PIECE] for i in range(count)})
            self._pieces = re.compile("|".join(re.escape(p) for p in pieces))

    def __bool__(self) -> bool:
        return bool(self.secret)

    def __call__(self, text: str) -> str:
        if not self.secret:
            return text
        if self._pieces is None:
            return text.replace(self.secret, REDACTED)
        found = self._pieces.search(text)
        if found is None:
            return text
        out: list[str] = []
        pos = 0
        while found is not None:
            start, end = found.start(), found.end()
            at = self.secret.find(found.group()) + MIN_PIECE
            while end < len(text) and at < len(self.secret) and text[end] == self.secret[at]:
                end, at = end + 1, at + 1
            out += [text[pos:start], REDACTED]
            pos = end
            found = self._pieces.search(text, pos)
        out.append(text[pos:])
        return "".join(out)

    def data(self, value: Any) -> Any:
        """``value`` (JSON-like) with the secret scrubbed from every string in it."""
        if not self.secret:
            return value
        text = json.dumps(value, ensure_ascii=False)
        clean = self(text)
        return value if clean == text else json.loads(clean)
