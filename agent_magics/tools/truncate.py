"""Output budgets: head + tail truncation with Codex's markers.

A policy is a byte budget (``Bytes(n)``) or a token budget (``Tokens(n)``, where a token
is taken as four bytes). Text over budget keeps its first half and its last half, cut on
character boundaries, with a marker between them naming how much was removed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

APPROX_BYTES_PER_TOKEN = 4
HISTORY_BUDGET_FACTOR = 1.2  # outputs are truncated again, a bit more loosely, in history


@dataclass(frozen=True)
class TruncationPolicy:
    """How much tool output the model may see: ``mode`` is ``bytes`` or ``tokens``."""

    mode: Literal["bytes", "tokens"]
    limit: int

    @classmethod
    def bytes(cls, n: int) -> TruncationPolicy:
        return cls("bytes", n)

    @classmethod
    def tokens(cls, n: int) -> TruncationPolicy:
        return cls("tokens", n)

    @property
    def byte_budget(self) -> int:
        return self.limit * APPROX_BYTES_PER_TOKEN if self.mode == "tokens" else self.limit

    def scaled(self, factor: float) -> TruncationPolicy:
        return TruncationPolicy(self.mode, math.ceil(self.limit * factor))


DEFAULT_POLICY = TruncationPolicy.bytes(10_000)


def utf8_len(text: str) -> int:
    """Length of ``text`` in UTF-8 bytes (a lone surrogate counts its three bytes)."""
    data = _utf8(text)
    return len(text) if data is None else len(data)


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def approx_token_count(text: str) -> int:
    """Tokens as Codex estimates them: ceil(UTF-8 bytes / 4)."""
    return tokens_for_bytes(utf8_len(text))


def tokens_for_bytes(n: int) -> int:
    """ceil(n / 4): the tokens Codex counts for ``n`` bytes."""
    return -(-n // APPROX_BYTES_PER_TOKEN)


def _utf8(text: str) -> bytes | None:
    """The UTF-8 bytes of ``text``, or None when it is ASCII (its characters are its bytes)."""
    return None if text.isascii() else _encode(text)


def _split(
    text: str, data: bytes | None, prefix_bytes: int, suffix_bytes: int
) -> tuple[int, str, str]:
    size = len(text) if data is None else len(data)
    head_end = min(max(prefix_bytes, 0), size)
    if data is None:
        tail_start = max(size - max(suffix_bytes, 0), head_end)
        return tail_start - head_end, text[:head_end], text[tail_start:]
    while 0 < head_end < size and data[head_end] & 0xC0 == 0x80:  # inside a character
        head_end -= 1
    tail_start = max(size - max(suffix_bytes, 0), head_end)
    while tail_start < size and data[tail_start] & 0xC0 == 0x80:
        tail_start += 1
    head = data[:head_end].decode("utf-8", "surrogatepass")
    tail = data[tail_start:].decode("utf-8", "surrogatepass")
    return len(text) - len(head) - len(tail), head, tail


def split_string(text: str, prefix_bytes: int, suffix_bytes: int) -> tuple[int, str, str]:
    """Keep at most ``prefix_bytes`` of the head and ``suffix_bytes`` of the tail.

    Returns (characters removed, head, tail). Cuts fall on character boundaries: the head
    takes the characters that end within its budget, the tail those that start at or
    after ``len - suffix_bytes`` and are not in the head. The cuts are found on the UTF-8
    bytes (one encoding of ``text``, none for ASCII), not by walking its characters.
    """
    return _split(text, _utf8(text), prefix_bytes, suffix_bytes)


def _marker(policy: TruncationPolicy, removed_chars: int, removed_bytes: int) -> str:
    if policy.mode == "tokens":
        return f"…{tokens_for_bytes(removed_bytes)} tokens truncated…"
    return f"…{removed_chars} chars truncated…"


def _pieces(text: str, data: bytes | None, policy: TruncationPolicy) -> tuple[str, ...]:
    budget = policy.byte_budget
    size = len(text) if data is None else len(data)
    if size <= budget:
        return (text,)
    left = budget // 2
    removed, head, tail = _split(text, data, left, budget - left)
    return head, _marker(policy, removed, size - budget), tail


def truncate_pieces(text: str, policy: TruncationPolicy) -> tuple[str, ...]:
    """``(text,)`` when it fits the policy's budget, else ``(head, marker, tail)``: the
    parts a compacted conversation sends as three text items, as Codex does."""
    return _pieces(text, _utf8(text), policy)


def truncate_text(text: str, policy: TruncationPolicy) -> str:
    """Head + marker + tail when ``text`` is over the policy's budget, else ``text``."""
    return "".join(_pieces(text, _utf8(text), policy)) if text else ""


def line_count(text: str) -> int:
    """Lines as Rust's ``str::lines`` counts them (a final newline starts no new line)."""
    if not text:
        return 0
    n = text.count("\n")
    return n if text.endswith("\n") else n + 1


def formatted_truncate_text(text: str, policy: TruncationPolicy) -> str:
    """Like :func:`truncate_text`, with a ``Total output lines`` header when it cuts."""
    data = _utf8(text)
    if (len(text) if data is None else len(data)) <= policy.byte_budget:
        return text
    cut = "".join(_pieces(text, data, policy))
    return f"Total output lines: {line_count(text)}\n\n{cut}"
