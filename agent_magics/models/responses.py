"""A streaming client for ``POST {base_url}/responses`` (the OpenAI Responses API).

Layer-one retries live here: 5xx, 408, 409, 429 and transport errors are re-sent with
Codex's backoff (or the server's ``Retry-After``); 400/401/403/404 become one sentence
saying which setting to fix. Stream-level failures are raised as :class:`StreamFailed`
for the session to retry the turn. The API key travels only in the request header.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx

from agent_magics.errors import ConnectionFailed, ModelError
from agent_magics.events import Usage
from agent_magics.models._sse import iter_sse
from agent_magics.models.base import (
    Completed,
    ItemAdded,
    ItemDone,
    ModelEvent,
    ModelRequest,
    OutputTextDelta,
    ReasoningDelta,
    StreamFailed,
    ToolInputDelta,
)
from agent_magics.models.retry import MAX_SERVER_DELAY_S, backoff, retry_after, try_again_hint

RETRY_STATUSES = frozenset({408, 409, 429})
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

RetryHook = Callable[[int, float, str], None]


class ResponsesClient:
    """Speaks the Responses API over one pooled ``httpx.AsyncClient``."""

    def __init__(
        self,
        base_url: str,
        api_key: str | None,
        *,
        request_max_retries: int = 4,
        stream_idle_timeout_s: float = 300.0,
        http: httpx.AsyncClient | None = None,
        on_retry: RetryHook | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.request_max_retries = request_max_retries
        self.stream_idle_timeout_s = stream_idle_timeout_s
        self._http = http or httpx.AsyncClient(
            timeout=httpx.Timeout(connect=10.0, read=stream_idle_timeout_s, write=30.0, pool=30.0)
        )
        self.on_retry = on_retry

    async def aclose(self) -> None:
        await self._http.aclose()

    def _headers(self) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept": "text/event-stream"}
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        return headers

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The JSON body, fields in the order Codex writes them."""
        body: dict[str, Any] = {"model": request.model}
        if request.instructions:
            body["instructions"] = request.instructions
        body["input"] = request.input
        body["tools"] = request.tools
        body["tool_choice"] = request.tool_choice
        body["parallel_tool_calls"] = request.parallel_tool_calls
        body["reasoning"] = request.reasoning
        body["store"] = False
        body["stream"] = True
        body["include"] = ["reasoning.encrypted_content"] if request.reasoning else []
        if request.prompt_cache_key:
            body["prompt_cache_key"] = request.prompt_cache_key
        return body

    def redact(self, text: str) -> str:
        return text.replace(self._api_key, "[redacted]") if self._api_key else text

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        url = f"{self.base_url}/responses"
        payload = json.dumps(self.body(request)).encode()
        attempt = 0
        while True:
            attempt += 1
            try:
                async with self._http.stream(
                    "POST", url, content=payload, headers=self._headers()
                ) as response:
                    if response.status_code >= 400:
                        await response.aread()
                        delay = self._retry_delay(response, attempt)
                        if delay is None:
                            raise self._status_error(response, request)
                        await self._sleep(attempt, delay, f"HTTP {response.status_code}")
                        continue
                    async for event in self._events(response):
                        yield event
                    return
            except httpx.TransportError as exc:
                if isinstance(exc, httpx.ReadTimeout):
                    raise StreamFailed("idle timeout waiting for SSE", retryable=True) from None
                if attempt > self.request_max_retries:
                    raise ConnectionFailed(
                        f"Could not reach the model server at {self.base_url} "
                        f"({type(exc).__name__}); check --base-url and that the server runs."
                    ) from None
                await self._sleep(attempt, backoff(attempt), type(exc).__name__)

    async def _sleep(self, attempt: int, delay: float, reason: str) -> None:
        if self.on_retry:
            self.on_retry(attempt, delay, reason)
        await asyncio.sleep(delay)

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

    def _status_error(self, response: httpx.Response, request: ModelRequest) -> Exception:
        status = response.status_code
        detail = _error_message(response)
        if status == 401:
            text = (
                "The model server rejected the API key (HTTP 401); "
                "set OPENAI_API_KEY to a valid key."
            )
        elif status == 403:
            text = "The model server refused access (HTTP 403); check the API key's permissions."
        elif status == 404:
            text = (
                f"The model server has no model {request.model!r} or no /responses endpoint "
                f"(HTTP 404); check --model and --base-url."
            )
        elif status in (400, 422):
            text = f"The model server rejected the request (HTTP {status}): {detail}"
        elif status == 429 or status >= 500:
            what = "rate limit" if status == 429 else "server error"
            text = f"The model server kept answering with a {what} (HTTP {status}): {detail}"
            return ConnectionFailed(self.redact(text))
        else:
            text = f"The model server answered HTTP {status}: {detail}"
        return ModelError(self.redact(text))

    async def _events(self, response: httpx.Response) -> AsyncIterator[ModelEvent]:
        completed: Completed | None = None
        lines = response.aiter_lines()
        sse = iter_sse(lines).__aiter__()
        while True:
            try:
                async with asyncio.timeout(self.stream_idle_timeout_s):
                    sse_event = await sse.__anext__()
            except StopAsyncIteration:
                break
            except TimeoutError:
                raise StreamFailed("idle timeout waiting for SSE", retryable=True) from None
            except httpx.TransportError:
                raise StreamFailed(
                    "stream disconnected before completion", retryable=True
                ) from None
            try:
                data = json.loads(sse_event.data)
            except json.JSONDecodeError:
                continue
            event = self._map(data)
            if isinstance(event, Completed):
                completed = event
            elif event is not None:
                yield event
        if completed is None:
            raise StreamFailed("stream closed before response.completed", retryable=True)
        yield completed

    def _map(self, data: dict[str, Any]) -> ModelEvent | None:
        kind = data.get("type", "")
        if kind == "response.output_item.done":
            return ItemDone(data.get("item") or {})
        if kind == "response.output_item.added":
            return ItemAdded(data.get("item") or {})
        if kind == "response.output_text.delta":
            return OutputTextDelta(str(data.get("item_id", "")), str(data.get("delta", "")))
        if kind in (
            "response.function_call_arguments.delta",
            "response.custom_tool_call_input.delta",
        ):
            return ToolInputDelta(str(data.get("item_id", "")), str(data.get("delta", "")))
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return ReasoningDelta(str(data.get("item_id", "")), str(data.get("delta", "")))
        if kind == "response.completed":
            resp = data.get("response") or {}
            return Completed(str(resp.get("id", "")), parse_usage(resp.get("usage")))
        if kind == "response.incomplete":
            reason = ((data.get("response") or {}).get("incomplete_details") or {}).get("reason")
            raise StreamFailed(f"Incomplete response returned, reason: {reason}", retryable=True)
        if kind in ("response.failed", "error"):
            raise self._failure(data)
        return None

    def _failure(self, data: dict[str, Any]) -> StreamFailed:
        err = (data.get("response") or {}).get("error") or data
        code = str(err.get("code") or "")
        message = self.redact(str(err.get("message") or "response.failed"))
        if code in NOT_RETRYABLE_FAILURES:
            return StreamFailed(f"{message} ({code})", retryable=False)
        delay = try_again_hint(message) if code == "rate_limit_exceeded" else None
        return StreamFailed(message, retryable=True, delay_s=delay)


def parse_usage(raw: Any) -> Usage:
    if not isinstance(raw, dict):
        return Usage()
    inp = raw.get("input_tokens_details") or {}
    out = raw.get("output_tokens_details") or {}
    return Usage(
        input_tokens=int(raw.get("input_tokens") or 0),
        cached_input_tokens=int(inp.get("cached_tokens") or 0),
        output_tokens=int(raw.get("output_tokens") or 0),
        reasoning_output_tokens=int(out.get("reasoning_tokens") or 0),
        total_tokens=int(raw.get("total_tokens") or 0),
    )


def _error_message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError):
        return response.text[:300] or response.reason_phrase
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict) and err.get("message"):
        return str(err["message"])
    if isinstance(err, str):
        return err
    return response.text[:300]
