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
    return len(text) if text.isascii() else len(_encode(text))


def _encode(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def approx_token_count(text: str) -> int:
    """Tokens as Codex estimates them: ceil(UTF-8 bytes / 4)."""
    return tokens_for_bytes(utf8_len(text))


def tokens_for_bytes(n: int) -> int:
    """ceil(n / 4): the tokens Codex counts for ``n`` bytes."""
    return -(-n // APPROX_BYTES_PER_TOKEN)


def _is_continuation(data: bytes, i: int) -> bool:
    return 0 < i < len(data) and data[i] & 0xC0 == 0x80


def _split_bytes(data: bytes, prefix_bytes: int, suffix_bytes: int) -> tuple[int, int]:
    """(head end, tail start) in ``data``, both on character boundaries: the head ends
    at the last boundary within ``prefix_bytes``, the tail starts at the first boundary
    at or after ``len - suffix_bytes`` that is not inside the head."""
    head_end = min(max(prefix_bytes, 0), len(data))
    while _is_continuation(data, head_end):
        head_end -= 1
    tail_start = max(len(data) - max(suffix_bytes, 0), head_end)
    while _is_continuation(data, tail_start):
        tail_start += 1
    return head_end, tail_start


def split_string(text: str, prefix_bytes: int, suffix_bytes: int) -> tuple[int, str, str]:
    """Keep at most ``prefix_bytes`` of the head and ``suffix_bytes`` of the tail.

    Returns (characters removed, head, tail). Cuts fall on character boundaries: the head
    takes the characters that end within its budget, the tail those that start at or
    after ``len - suffix_bytes``. The cuts are found on the UTF-8 bytes, so the cost is
    one encoding of ``text`` (none for ASCII), not a walk over its characters.
    """
    if text.isascii():
        head_end = min(max(prefix_bytes, 0), len(text))
        tail_start = max(len(text) - max(suffix_bytes, 0), head_end)
        return tail_start - head_end, text[:head_end], text[tail_start:]
    data = _encode(text)
    head_end, tail_start = _split_bytes(data, prefix_bytes, suffix_bytes)
    head = data[:head_end].decode("utf-8", "surrogatepass")
    tail = data[tail_start:].decode("utf-8", "surrogatepass")
    return len(text) - len(head) - len(tail), head, tail


def _marker(policy: TruncationPolicy, removed_chars: int, removed_bytes: int) -> str:
    if policy.mode == "tokens":
        return f"…{tokens_for_bytes(removed_bytes)} tokens truncated…"
    return f"…{removed_chars} chars truncated…"


def truncate_text(text: str, policy: TruncationPolicy) -> str:
    """Head + marker + tail when ``text`` is over the policy's budget, else ``text``."""
    if not text:
        return ""
    budget = policy.byte_budget
    size = utf8_len(text)
    if size <= budget:
        return text
    left = budget // 2
    removed, head, tail = split_string(text, left, budget - left)
    return f"{head}{_marker(policy, removed, size - budget)}{tail}"


def line_count(text: str) -> int:
    """Lines as Rust's ``str::lines`` counts them (a final newline starts no new line)."""
    if not text:
        return 0
    n = text.count("\n")
    return n if text.endswith("\n") else n + 1


def formatted_truncate_text(text: str, policy: TruncationPolicy) -> str:
    """Like :func:`truncate_text`, with a ``Total output lines`` header when it cuts."""
    if utf8_len(text) <= policy.byte_budget:
        return text
    return f"Total output lines: {line_count(text)}\n\n{truncate_text(text, policy)}"
