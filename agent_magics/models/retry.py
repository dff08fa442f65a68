"""Retry timing shared by the model clients: Codex's backoff and the servers' hints."""

from __future__ import annotations

import email.utils
import random
import re
import time
from collections.abc import Mapping

BASE_DELAY_S = 0.2
MAX_SERVER_DELAY_S = 120.0  # a longer Retry-After means: give up, as the official SDKs do


def backoff(attempt: int) -> float:
    """Delay before retry ``attempt`` (1-based): 200 ms doubling, ±10 % jitter."""
    return float(BASE_DELAY_S * (2 ** (attempt - 1)) * random.uniform(0.9, 1.1))


def retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms`` or ``Retry-After``)."""
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return float(ms) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(parsed.timestamp() - time.time(), 0.0) if parsed else None


_TRY_AGAIN = re.compile(r"try again in\s*(\d+(?:\.\d+)?)\s*(ms|s|seconds?)\b", re.I)


def try_again_hint(message: str) -> float | None:
    """The delay in a ``rate_limit_exceeded`` message such as "try again in 1.5s"."""
    m = _TRY_AGAIN.search(message)
    if not m:
        return None
    value = float(m.group(1))
    return value / 1000 if m.group(2).lower() == "ms" else value
