"""Looking for secrets where they must not be: a secret counts as leaked when any run of
``PIECE`` of its characters is found, so a secret cut, wrapped or partly masked is still
caught."""

from __future__ import annotations

PIECE = 8  # no run of this many characters of a secret may get out


def pieces(secret: str, size: int = PIECE) -> list[str]:
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


def leaked(text: str, *secrets: str) -> list[str]:
    """The pieces of the secrets found in ``text``."""
    return [p for s in secrets for p in pieces(s) if p in text]
