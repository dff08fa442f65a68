"""Raw stream bytes no model server should send (a nesting past any recursion limit, one
event larger than the reader keeps, output items passed untouched), for the tests of a
session and of ``agent-magics exec`` against such a server."""

from __future__ import annotations

from typing import Any

from agent_magics.models._sse import MAX_EVENT_BYTES
from agent_magics.testing import encode_sse

DEEP = 5000  # far past Python's recursion limit


def responses_raw(items: list[Any], extra: list[dict[str, Any]] | None = None) -> bytes:
    """A Responses stream whose ``output_item.done`` events carry ``items`` untouched."""
    response = {"id": "resp_raw", "object": "response", "status": "completed", "output": []}
    events = [{"type": "response.created", "response": response}, *(extra or [])]
    events += [{"type": "response.output_item.done", "item": item} for item in items]
    events.append({"type": "response.completed", "response": response})
    return encode_sse(iter(events))


def deep_event(protocol: str) -> bytes:
    """One event of ``protocol`` (``chat`` or ``responses``) nested ``DEEP`` levels."""
    nested = "[" * DEEP + "]" * DEEP
    if protocol == "chat":
        return f'data: {{"choices": [{{"index": 0, "delta": {{"x": {nested}}}}}]}}\n\n'.encode()
    return f'data: {{"type": "response.in_progress", "x": {nested}}}\n\n'.encode()


def oversize_event(protocol: str) -> bytes:
    """One text delta of ``protocol`` a MiB larger than an event may be."""
    text = b"x" * (MAX_EVENT_BYTES + (1 << 20))
    if protocol == "chat":
        return b'data: {"choices": [{"index": 0, "delta": {"content": "' + text + b'"}}]}\n\n'
    return b'data: {"type": "response.output_text.delta", "delta": "' + text + b'"}\n\n'
