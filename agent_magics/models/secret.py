"""Keeping secrets out of everything we write: errors, recordings, model output, tool
output, logs.

A stream may cut a secret across two deltas, so a long secret is found by its pieces
too: any run of :data:`MIN_PIECE` or more of its characters is replaced. A secret
shorter than :data:`MIN_KEY_FOR_PIECES` is matched whole only, so that short test keys
do not eat ordinary words.

What this holds: the secret's own text, and any :data:`MIN_PIECE` characters of it in a
row, wherever they are (so a secret split between two reads of a stream leaves at most
``MIN_PIECE - 1`` characters on either side of the cut). What it cannot hold: the
secret re-encoded (base64, hex, reversed, one character per line); no filter on text
can, which is why tools do not get the key in their environment in the first place.
"""

from __future__ import annotations

import json
import re
from typing import Any

REDACTED = "[redacted]"
MIN_PIECE = 12
MIN_KEY_FOR_PIECES = 24
BLOCK = MIN_PIECE // 2  # every MIN_PIECE characters of a secret hold one aligned block


class Scrubber:
    """Replaces each secret, and any long enough piece of one, with ``[redacted]``."""

    def __init__(self, *secrets: str | None) -> None:
        self.secrets = tuple(sorted({s for s in secrets if s}, key=lambda s: (-len(s), s)))
        # Each piece of a long secret -> the secret and where the piece ends in it.
        self._pieces: dict[str, tuple[str, int]] = {}
        # Any piece holds one of these blocks, so text without them needs no regex scan
        # (substring tests run at memory speed; the scan of many pieces does not).
        self._blocks: list[str] = []
        for secret in self.secrets:
            if len(secret) >= MIN_KEY_FOR_PIECES:
                for i in range(len(secret) - MIN_PIECE + 1):
                    self._pieces.setdefault(secret[i : i + MIN_PIECE], (secret, i + MIN_PIECE))
                self._blocks += [
                    secret[i : i + BLOCK] for i in range(0, len(secret) - BLOCK + 1, BLOCK)
                ]
        whole = [s for s in self.secrets if len(s) < MIN_KEY_FOR_PIECES]
        self._blocks += whole
        # Longest first, so that a whole short secret wins over a piece at one position.
        found = sorted([*self._pieces, *whole], key=lambda s: (-len(s), s))
        self._pattern = re.compile("|".join(map(re.escape, found))) if found else None

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def __call__(self, text: str) -> str:
        if self._pattern is None or not any(block in text for block in self._blocks):
            return text
        found = self._pattern.search(text)
        if found is None:
            return text
        out: list[str] = []
        pos = 0
        while found is not None:
            end = found.end()
            piece = self._pieces.get(found.group())
            if piece is not None:  # extend the match as far as the secret goes on
                secret, at = piece
                while end < len(text) and at < len(secret) and text[end] == secret[at]:
                    end, at = end + 1, at + 1
            out += [text[pos : found.start()], REDACTED]
            pos = end
            found = self._pattern.search(text, pos)
        out.append(text[pos:])
        return "".join(out)

    def data(self, value: Any) -> Any:
        """``value`` (JSON-like) with the secrets scrubbed from every string in it."""
        if self._pattern is None:
            return value
        text = json.dumps(value, ensure_ascii=False)
        clean = self(text)
        return value if clean == text else json.loads(clean)
