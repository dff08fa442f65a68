"""What every HTTP model client shares: POST a JSON body, read an SSE stream, retry.

Layer-one retries live here: 5xx, 408, 409, 429 and transport errors are re-sent with
Codex's backoff (or the server's ``Retry-After``); 400/401/403/404 become one sentence
saying which setting to fix. A stream that drops, stays idle or reports a failure is
raised as :class:`StreamFailed` for the session to re-send the turn; so is an answer
whose head is not complete within the idle timeout (a timeout, which Codex retries).
Answers are asked for uncompressed; one compressed anyway is inflated within bounds
(:mod:`agent_magics.models.encoding`), and one that cannot be is not retried. Each
protocol supplies the request body and a :class:`Decoder` for its stream. The API key
travels only in the request header and is cut out of every message built from server
text.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import Any, ClassVar, Protocol

import httpx

from agent_magics.clock import current as current_clock
from agent_magics.errors import ConnectionFailed, ModelError
from agent_magics.models.base import (
    ItemAdded,
    ItemDone,
    ModelEvent,
    ModelRequest,
    OutputTextDelta,
    ReasoningDelta,
    StreamFailed,
)
from agent_magics.models.codex_text import status_text, unreachable_text
from agent_magics.models.encoding import _DecodingError
from agent_magics.models.encoding import body as decoded_body
from agent_magics.models.overflow import says_too_long, window_full
from agent_magics.models.pool import _HeadTimeout, post
from agent_magics.models.retry import MAX_SERVER_DELAY_S, backoff, retry_after
from agent_magics.models.secret import Scrubber
from agent_magics.models.stream import Decoder, StreamReader

RETRY_STATUSES = frozenset({408, 409, 429})
DRAIN_S = 0.1  # how long the end of a body is awaited after [DONE] (as the openai package)
DRAIN_MAX_BYTES = 1 << 16
MAX_ERROR_BODY_BYTES = 1 << 16  # of an error answer, read for its message; the rest is not
ERROR_DETAIL_CHARS = 1000  # of the server's words, quoted in the sentence
RetryHook = Callable[[int, float, str], None]


def auth_headers(api_key: str | None) -> dict[str, str]:
    """The headers every request to the model server carries: answers uncompressed, and
    the key as a bearer token (none without a key). Only requests to the configured
    server get them: callers build their URLs from its base URL, and httpx follows no
    redirect."""
    headers = {"accept-encoding": "identity"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return headers


class Recorder(Protocol):
    def add(self, body: dict[str, Any], tape: list[Any]) -> None: ...


class SseClient:
    """Posts through the process's shared client (:mod:`agent_magics.models.pool`);
    subclasses say where to POST and how to read."""

    endpoint: ClassVar[str] = ""
    provider: ClassVar[str] = ""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        request_max_retries: int = 4,
        stream_idle_timeout_s: float = 300.0,
        on_retry: RetryHook | None = None,
        recorder: Recorder | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.redact = Scrubber(api_key)
        self.request_max_retries = request_max_retries
        self.stream_idle_timeout_s = stream_idle_timeout_s
        self.on_retry = on_retry
        self.recorder = recorder

    # -- what a protocol supplies ------------------------------------------------------

    def body(self, request: ModelRequest) -> dict[str, Any]:
        raise NotImplementedError

    def decoder(self, request: ModelRequest) -> Decoder:
        raise NotImplementedError

    # -- shared ------------------------------------------------------------------------

    async def aclose(self) -> None:
        """Nothing to close: the shared client outlives a session (the loop closes it)."""

    def _headers(self) -> dict[str, str]:
        return {
            "content-type": "application/json",
            "accept": "text/event-stream",
            **auth_headers(self._api_key),
        }

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        url = f"{self.base_url}/{self.endpoint}"
        body = self.body(request)
        payload = json.dumps(body).encode()
        attempt = 0
        while True:
            attempt += 1
            try:
                async with post(
                    url,
                    content=payload,
                    headers=self._headers(),
                    idle_timeout_s=self.stream_idle_timeout_s,
                ) as response:
                    if response.status_code >= 400:
                        delay = self._retry_delay(response, attempt)
                        if delay is None:
                            raise self._status_error(response, request, await _head(response))
                        await self._sleep(attempt, delay, f"HTTP {response.status_code}")
                        continue
                    tape: list[Any] | None = [] if self.recorder else None
                    async for event in self._decode(response, self.decoder(request), tape):
                        yield event
                    if self.recorder is not None and tape is not None:
                        self.recorder.add(body, tape)
                    return
            except _HeadTimeout as exc:
                raise StreamFailed(f"the model server sent {exc.detail}", retryable=True) from None
            except httpx.ReadTimeout:
                raise StreamFailed("idle timeout waiting for SSE", retryable=True) from None
            except httpx.TransportError as exc:
                kind = type(exc).__name__  # its text may quote a header: the key's, say
                if attempt > self.request_max_retries:
                    raise ConnectionFailed(
                        self.redact(self._unreachable(kind)),
                        codex_text=self.redact(unreachable_text(url)),
                    ) from None
                await self._sleep(attempt, backoff(attempt), kind)

    def _unreachable(self, kind: str) -> str:
        return (
            f"Could not reach the model server at {self.base_url} "
            f"({kind}); check --base-url and that the server runs."
        )

    async def _sleep(self, attempt: int, delay: float, reason: str) -> None:
        if self.on_retry:
            self.on_retry(attempt, delay, reason)
        await current_clock().sleep(delay)

    def _retry_delay(self, response: httpx.Response, attempt: int) -> float | None:
        status = response.status_code
        if attempt > self.request_max_retries:
            return None
        if status < 500 and status not in RETRY_STATUSES:
            return None
        hinted = retry_after(response.headers)
        if hinted is not None:
            return hinted if hinted <= MAX_SERVER_DELAY_S else None
        return backoff(attempt)

    def _status_error(
        self, response: httpx.Response, request: ModelRequest, body: bytes
    ) -> Exception:
        """Our sentence for people, Codex's text (:mod:`.codex_text`) for a model."""
        status = response.status_code
        detail = error_message(body, response.reason_phrase)
        url = f"{self.base_url}/{self.endpoint}"
        codex = self.redact(status_text(status, body, url, response.headers))
        if status == 401:
            text = (
                "The model server rejected the API key (HTTP 401); "
                "set OPENAI_API_KEY to a valid key."
            )
        elif status == 403:
            text = "The model server refused access (HTTP 403); check the API key's permissions."
        elif status == 404:
            text = (
                f"The model server has no model {request.model!r} or no /{self.endpoint} "
                f"endpoint (HTTP 404); check --model and --base-url."
            )
        elif says_too_long(status, body):
            return window_full(self.redact(detail))
        elif status in (400, 422):
            text = f"The model server rejected the request (HTTP {status}): {detail}"
        elif status == 429 or status >= 500:
            what = "rate limit" if status == 429 else "server error"
            text = f"The model server kept answering with a {what} (HTTP {status}): {detail}"
            return ConnectionFailed(self.redact(text), codex_text=codex)
        else:
            text = f"The model server answered HTTP {status}: {detail}"
        return ModelError(self.redact(text), codex_text=codex)

    async def _decode(
        self, response: httpx.Response, decoder: Decoder, tape: list[Any] | None
    ) -> AsyncIterator[ModelEvent]:
        """Events of one stream, read by :class:`StreamReader`. The idle timer, as in
        Codex, runs from the moment we wait for the next event."""
        loop = asyncio.get_running_loop()
        reader = StreamReader(decoder, tape)
        chunks = decoded_body(response).__aiter__()
        deadline = loop.time() + self.stream_idle_timeout_s
        while not reader.done:
            try:
                async with asyncio.timeout_at(deadline):
                    chunk = await chunks.__anext__()
            except StopAsyncIteration:
                break
            except (TimeoutError, httpx.ReadTimeout):
                raise StreamFailed("idle timeout waiting for SSE", retryable=True) from None
            except _DecodingError as exc:
                raise StreamFailed(self.redact(exc.detail), retryable=False) from None
            except httpx.TransportError:
                raise StreamFailed(
                    "stream disconnected before completion", retryable=True
                ) from None
            with self._redacted_failures():
                events = reader.read(chunk)
            if events is None:
                continue
            for event in events:
                yield self._scrubbed(event) if self.redact else event
            deadline = loop.time() + self.stream_idle_timeout_s
        with self._redacted_failures():
            events = reader.end()
        for event in events:
            yield self._scrubbed(event) if self.redact else event
        if reader.done:
            await _drain(chunks)

    def _scrubbed(self, event: ModelEvent) -> ModelEvent:
        """The model's words never carry the key on (into history, outputs, files).

        Tool calls are left exactly as the model sent them: changing their arguments
        would change what runs."""
        if isinstance(event, OutputTextDelta | ReasoningDelta):
            clean = self.redact(event.delta)
            return event if clean == event.delta else type(event)(event.item_id, clean)
        if isinstance(event, ItemDone | ItemAdded) and event.item.get("type") in TEXT_ITEMS:
            return type(event)(self.redact.data(event.item))
        return event

    @contextmanager
    def _redacted_failures(self) -> Iterator[None]:
        try:
            yield
        except StreamFailed as exc:
            message = self.redact(exc.message)
            raise StreamFailed(
                message, retryable=exc.retryable, delay_s=exc.delay_s, code=exc.code
            ) from None


TEXT_ITEMS = frozenset({"message", "reasoning"})


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read what follows ``[DONE]``, normally just the end of the body, so that the
    HTTP/1.1 connection goes back to the pool, as the ``openai`` package does; a body
    that does not end within :data:`DRAIN_S`, or goes on, is closed instead."""
    received = 0
    try:
        async with asyncio.timeout(DRAIN_S):
            async for chunk in chunks:
                received += len(chunk)
                if received > DRAIN_MAX_BYTES:
                    return
    except (TimeoutError, _DecodingError, httpx.TransportError):
        return


async def _head(response: httpx.Response) -> bytes:
    """The first :data:`MAX_ERROR_BODY_BYTES` of an error body; the rest is not read
    (the connection is closed instead of drained), nor what cannot be inflated."""
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in decoded_body(response):
            parts.append(chunk)
            size += len(chunk)
            if size >= MAX_ERROR_BODY_BYTES:
                break
    except _DecodingError:
        pass
    return b"".join(parts)[:MAX_ERROR_BODY_BYTES]


def error_message(body: bytes, reason: str) -> str:
    """What an error body says: its ``error.message``, or the start of its text."""
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return text[:ERROR_DETAIL_CHARS] or reason
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict) and err.get("message"):
        return str(err["message"])[:ERROR_DETAIL_CHARS]
    if isinstance(err, str):
        return err[:ERROR_DETAIL_CHARS]
    return text[:ERROR_DETAIL_CHARS]
