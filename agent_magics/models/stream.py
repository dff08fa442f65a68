"""Reading one response's stream, whatever the protocol: the decoder interface, the
batching of text deltas, the parse of a read's payloads, and stream-level failures.

The HTTP client (:mod:`agent_magics.models.http`) feeds a decoder the payloads of each
network read; playback of a recording (:mod:`agent_magics.models.replay`) feeds it the
recorded payloads. Both get the same events.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from agent_magics.models._sse import SseParser
from agent_magics.models.base import ModelEvent, OutputTextDelta, StreamFailed
from agent_magics.models.retry import try_again_hint
from agent_magics.protocol.items import MAX_ITEM_DEPTH, nested_deeper_than

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
MAX_EVENT_DEPTH = 2 * MAX_ITEM_DEPTH
"""How deeply a stream payload may nest; a deeper one ends the stream (Python could not
write it back, record it or scrub it)."""
TOO_DEEP = f"the model server sent an event nested deeper than {MAX_EVENT_DEPTH} levels"
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


class StreamReader:
    """One response's body, read a network read at a time: SSE framing, then the
    payloads of each read parsed together and decoded (and kept in ``tape`` when
    recording)."""

    def __init__(self, decoder: Decoder, tape: list[Any] | None = None) -> None:
        self._decoder = decoder
        self._tape = tape
        self._parser = SseParser()
        self.done = False
        """``[DONE]`` was read: what follows is not."""

    def read(self, chunk: bytes) -> list[ModelEvent] | None:
        """The events of one read; ``None`` if no payload was complete in it."""
        return self._read(self._parser.feed(chunk))

    def end(self) -> list[ModelEvent]:
        """The last events, once the body has ended (or ``[DONE]`` was read); raises
        StreamFailed if the stream was cut."""
        events = None if self.done else self._read(self._parser.close())
        return (events or []) + self._decoder.finish(self.done)

    def _read(self, datas: list[bytes]) -> list[ModelEvent] | None:
        if not datas:
            return None
        if DONE_BYTES in datas:
            datas, self.done = datas[: datas.index(DONE_BYTES)], True
        batch = parse_batch(datas)
        if self._tape is not None:
            self._tape.extend(batch)
            if self.done:
                self._tape.append(DONE)
        return self._decoder.feed_all(batch)


def stream_failure(code: str, message: str) -> StreamFailed:
    """A failure reported inside a stream, mapped by its code as Codex does."""
    if code in NOT_RETRYABLE_FAILURES:
        return StreamFailed(f"{message} ({code})", retryable=False, code=code)
    delay = try_again_hint(message) if code == "rate_limit_exceeded" else None
    return StreamFailed(message, retryable=True, delay_s=delay, code=code or None)


def json_object(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one: a field of an odd shape in
    a server's event is read as absent."""
    return value if isinstance(value, dict) else {}


def token_count(value: Any) -> int:
    """A token count from the server: a positive integer, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def replay_tape(decoder: Decoder, tape: list[Any]) -> list[ModelEvent]:
    """Decode a recorded stream (its payloads in order, maybe ending with ``[DONE]``)."""
    done = DONE in tape
    batch = [d for d in (tape[: tape.index(DONE)] if done else tape) if isinstance(d, dict)]
    return decoder.feed_all(batch) + decoder.finish(done)


def parse_batch(datas: list[bytes]) -> list[dict[str, Any]]:
    """The JSON objects among ``datas`` (one C-level parse for the lot when they are
    all valid JSON). Invalid UTF-8 is read with replacement characters, so a message
    is kept, not dropped; text that is not JSON is skipped, as Codex skips it; JSON
    nested deeper than :data:`MAX_EVENT_DEPTH` ends the stream (:data:`TOO_DEEP`); only
    payloads with that many brackets are walked to know."""
    try:
        values = json.loads(b"[" + b",".join(datas) + b"]")
    except (ValueError, RecursionError):
        values = []
        for data in datas:
            try:
                values.append(json.loads(data.decode("utf-8", "replace")))
            except ValueError:
                continue
            except RecursionError:
                raise StreamFailed(TOO_DEEP, retryable=False) from None
    if any(d.count(b"[") + d.count(b"{") > MAX_EVENT_DEPTH for d in datas) and any(
        nested_deeper_than(v, MAX_EVENT_DEPTH) for v in values
    ):
        raise StreamFailed(TOO_DEEP, retryable=False)
    return [v for v in values if isinstance(v, dict)]
