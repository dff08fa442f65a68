"""Reading one response's stream, whatever the protocol: the decoder interface, the
batching of text deltas, the parse of a read's payloads, and stream-level failures.

The HTTP client (:mod:`agent_magics.models.http`) feeds a decoder the payloads of each
network read; playback of a recording (:mod:`agent_magics.models.replay`) feeds it the
recorded payloads. Both get the same events.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from agent_magics.models.base import ModelEvent, OutputTextDelta, StreamFailed
from agent_magics.models.retry import try_again_hint

NOT_RETRYABLE_FAILURES = frozenset(
    {
        "context_length_exceeded",
        "insufficient_quota",
        "usage_not_included",
        "invalid_prompt",
        "server_is_overloaded",
        "slow_down",
    }
)
DONE = "[DONE]"  # the Chat Completions end marker, kept as such in recordings
DONE_BYTES = DONE.encode()


class Decoder(Protocol):
    """Turns one response's stream payloads (parsed ``data:`` JSON) into model events.
    ``feed_all`` takes the payloads that arrived together (one network read)."""

    def feed_all(self, batch: list[dict[str, Any]]) -> list[ModelEvent]: ...

    def finish(self, done_marker: bool) -> list[ModelEvent]:
        """The events held back to the end; raises StreamFailed if the stream was cut."""
        ...


class DeltaBuffer:
    """Collects a batch's events; text deltas of one item that arrive together are
    handed on as one delta (the same text, far fewer events for a long fast stream)."""

    __slots__ = ("_item_id", "_parts", "events")

    def __init__(self) -> None:
        self.events: list[ModelEvent] = []
        self._item_id = ""
        self._parts: list[str] = []

    def text(self, item_id: str, delta: str) -> None:
        if item_id != self._item_id:
            self._flush()
            self._item_id = item_id
        self._parts.append(delta)

    def add(self, event: ModelEvent) -> None:
        self._flush()
        self.events.append(event)

    def take(self) -> list[ModelEvent]:
        self._flush()
        events, self.events = self.events, []
        return events

    def _flush(self) -> None:
        if self._parts:
            self.events.append(OutputTextDelta(self._item_id, "".join(self._parts)))
            self._parts = []


class BaseDecoder:
    """What the decoders share: a one-payload entry point and a delta buffer."""

    def __init__(self) -> None:
        self._buffer = DeltaBuffer()

    def feed(self, data: dict[str, Any]) -> list[ModelEvent]:
        return self.feed_all([data])

    def feed_all(self, batch: list[dict[str, Any]]) -> list[ModelEvent]:
        raise NotImplementedError


def stream_failure(code: str, message: str) -> StreamFailed:
    """A failure reported inside a stream, mapped by its code as Codex does."""
    if code in NOT_RETRYABLE_FAILURES:
        return StreamFailed(f"{message} ({code})", retryable=False)
    delay = try_again_hint(message) if code == "rate_limit_exceeded" else None
    return StreamFailed(message, retryable=True, delay_s=delay)


def replay_tape(decoder: Decoder, tape: list[Any]) -> list[ModelEvent]:
    """Decode a recorded stream (its payloads in order, maybe ending with ``[DONE]``)."""
    done = DONE in tape
    batch = [d for d in (tape[: tape.index(DONE)] if done else tape) if isinstance(d, dict)]
    return decoder.feed_all(batch) + decoder.finish(done)


def parse_batch(datas: list[bytes]) -> list[dict[str, Any]]:
    """The JSON objects among ``datas`` (one C-level parse for the lot when they are
    all valid JSON)."""
    try:
        values = json.loads(b"[" + b",".join(datas) + b"]")
    except ValueError:
        values = []
        for data in datas:
            try:
                values.append(json.loads(data))
            except ValueError:
                continue
    return [v for v in values if isinstance(v, dict)]
