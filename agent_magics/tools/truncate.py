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


def approx_token_count(text: str) -> int:
    """Tokens as Codex estimates them: ceil(UTF-8 bytes / 4)."""
    return math.ceil(len(text.encode("utf-8")) / APPROX_BYTES_PER_TOKEN)


def split_string(text: str, prefix_bytes: int, suffix_bytes: int) -> tuple[int, str, str]:
    """Keep at most ``prefix_bytes`` of the head and ``suffix_bytes`` of the tail.

    Returns (characters removed, head, tail). Cuts fall on character boundaries: the head
    takes the characters that end within its budget, the tail those that start at or
    after ``len - suffix_bytes``.
    """
    if not text:
        return 0, "", ""
    data_len = len(text.encode("utf-8"))
    tail_start = max(data_len - suffix_bytes, 0)
    head_end_char = 0
    tail_start_char = len(text)
    pos = 0
    for i, ch in enumerate(text):
        size = len(ch.encode("utf-8"))
        if pos + size <= prefix_bytes:
            head_end_char = i + 1
        if pos >= tail_start and tail_start_char == len(text):
            tail_start_char = i
        pos += size
    tail_start_char = max(tail_start_char, head_end_char)
    removed = tail_start_char - head_end_char
    return removed, text[:head_end_char], text[tail_start_char:]


def _marker(policy: TruncationPolicy, removed_chars: int, removed_bytes: int) -> str:
    if policy.mode == "tokens":
        return f"…{math.ceil(removed_bytes / APPROX_BYTES_PER_TOKEN)} tokens truncated…"
    return f"…{removed_chars} chars truncated…"


def truncate_text(text: str, policy: TruncationPolicy) -> str:
    """Head + marker + tail when ``text`` is over the policy's budget, else ``text``."""
    if not text:
        return ""
    budget = policy.byte_budget
    size = len(text.encode("utf-8"))
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
    if len(text.encode("utf-8")) <= policy.byte_budget:
        return text
    return f"Total output lines: {line_count(text)}\n\n{truncate_text(text, policy)}"
