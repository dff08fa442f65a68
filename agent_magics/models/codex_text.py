"""How Codex words a failed model request, for the places a model reads it.

A sub-agent whose request fails ends ``errored`` with a text its parent's model reads
(wait_agent's output, the ``<subagent_notification>``). Codex puts there the Display of
its error, so these texts are Codex's, byte for byte: for a 400 the body as the server
sent it, for a 500 or a 429 that outlived the retries a fixed sentence, for other
statuses ``unexpected status ...`` with the server's message and the URL, and for a
stream that failed ``stream disconnected before completion: <why>``. People never see
these: cards and the terminal keep our own sentences (:mod:`agent_magics.models.http`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any

STREAM_PREFIX = "stream disconnected before completion: "
BODY_MAX_BYTES = 1000  # of a body quoted in ``unexpected status``, as Codex cuts it
HIGH_DEMAND = "We\u2019re currently experiencing high demand, which may cause temporary errors."
AT_CAPACITY = "Selected model is at capacity. Please try a different model."
BAD_IMAGE = "The image data you provided does not represent a valid image"
CLOUDFLARE = (
    "Access blocked by Cloudflare. This usually happens when connecting from a restricted region"
)


def stream_text(reason: str) -> str:
    """A stream that broke off or reported a failure (Codex's ``Stream`` error)."""
    return STREAM_PREFIX + reason


def unreachable_text(url: str) -> str:
    """A request that never got an answer, after the retries."""
    return stream_text(f"error sending request for url ({url})")


def status_text(status: int, body: bytes, url: str, headers: Mapping[str, str]) -> str:
    """An HTTP error answer that was not (or no longer) retried."""
    text = body.decode("utf-8", "replace")
    data = _json(text)
    error = data.get("error") if isinstance(data, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    if status == 503 and code in ("server_is_overloaded", "slow_down"):
        return AT_CAPACITY
    if status == 400:
        return "Image poisoning" if BAD_IMAGE in text else text
    if status == 500:
        return HIGH_DEMAND
    request_id = headers.get("x-request-id") or headers.get("x-oai-request-id")
    cf_ray = headers.get("cf-ray")
    if status == 429:
        last = f"exceeded retry limit, last status: {_status(status)}"
        return last + _tail("request id", request_id or cf_ray)
    if status == 403 and "Cloudflare" in text and "blocked" in text:
        head = f"{CLOUDFLARE} (status {_status(status)})"
    else:
        head = f"unexpected status {_status(status)}: {_shown_body(text, error)}"
    return head + _tail("url", url) + _tail("cf-ray", cf_ray) + _tail("request id", request_id)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _status(status: int) -> str:
    """A status as Rust's ``http`` crate prints it: ``404 Not Found``."""
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return f"{status} <unknown status code>"


def _shown_body(text: str, error: Any) -> str:
    message = error.get("message") if isinstance(error, dict) else None
    if isinstance(message, str) and message.strip():
        return message.strip()
    trimmed = text.strip()
    if not trimmed:
        return "Unknown error"
    raw = trimmed.encode()
    if len(raw) <= BODY_MAX_BYTES:
        return trimmed
    return raw[:BODY_MAX_BYTES].decode("utf-8", "ignore") + "..."


def _tail(name: str, value: str | None) -> str:
    return f", {name}: {value}" if value else ""
