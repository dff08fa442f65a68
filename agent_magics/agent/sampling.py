"""One model response: the stream read into protocol items, its events told on the way.

A retryable stream failure sends the request again (``stream_max_retries`` times, after
the server's delay or a backoff); anything else ends the turn with one sentence. An
answer with neither a message, a tool call nor a web search is a failure too: a turn
could neither end on it nor go on from it.
"""

from __future__ import annotations

from collections.abc import Callable

from agent_magics.clock import current as current_clock
from agent_magics.errors import ConnectionFailed, ModelError
from agent_magics.events import (
    AssistantMessage,
    EventSink,
    ReasoningSummary,
    RetryScheduled,
    TextDelta,
    Usage,
    WebSearched,
)
from agent_magics.models.base import (
    Completed,
    ItemDone,
    ModelClient,
    ModelRequest,
    OutputTextDelta,
    StreamFailed,
)
from agent_magics.models.codex_text import stream_text
from agent_magics.models.overflow import OVERFLOW_CODE, window_full
from agent_magics.models.retry import backoff
from agent_magics.protocol.items import (
    AnyItem,
    CustomToolCall,
    FunctionCall,
    LocalShellCall,
    MalformedItem,
    Message,
    Reasoning,
    server_item,
)
from agent_magics.protocol.web_search import WEB_SEARCH_CALL, card_fields

EMPTY_ANSWER = "the model server sent an answer with no message and no tool call"
SILENT_OVERFLOW = (
    "it closed the stream without a word, twice, and the request is long enough for the "
    "model's window to be full"
)


async def sample(
    client: ModelClient,
    request: Callable[[], ModelRequest],
    emit: EventSink,
    max_retries: int,
    *,
    must_speak: bool = True,
    fills_window: Callable[[ModelRequest], bool] | None = None,
) -> tuple[list[AnyItem], Usage]:
    """One model response, the request re-built and re-sent after retryable failures.
    Raises :class:`ContextWindowFull` when the server says the request is too long
    for the model's window, and when it closed the stream without sending anything a
    second time for a request ``fills_window`` says may not fit (a server that says
    nothing else: llama-cpp-python's; a first silent close may be a dropped connection,
    so it is retried). ``must_speak``: an answer with neither a message nor a tool
    call is a failure (not for a compaction, answered by a ``compaction`` item)."""
    retries = 0
    while True:
        sent, heard = request(), _Heard()
        try:
            return await _sample_once(client, sent, emit, must_speak, heard)
        except StreamFailed as exc:
            if exc.code == OVERFLOW_CODE:
                raise window_full(exc.message) from None
            silent = exc.retryable and not heard.events and retries > 0
            if silent and fills_window is not None and fills_window(sent):
                raise window_full(SILENT_OVERFLOW) from None
            if not exc.retryable:  # the same server would send it again: not worth a retry
                raise ModelError(
                    f"The model's answer failed: {exc.message}.",
                    codex_text=stream_text(exc.message),
                ) from None
            if retries >= max_retries:
                raise ConnectionFailed(
                    f"The model's answer failed: {exc.message}"
                    + (f" (after {retries} retries)." if retries else "."),
                    codex_text=stream_text(exc.message),
                ) from None
            retries += 1
            delay = exc.delay_s if exc.delay_s is not None else backoff(retries)
            emit(RetryScheduled(retries, delay, exc.message))
            await current_clock().sleep(delay)


class _Heard:
    """How many events a response's stream gave before it ended."""

    events = 0


async def _sample_once(
    client: ModelClient, request: ModelRequest, emit: EventSink, must_speak: bool, heard: _Heard
) -> tuple[list[AnyItem], Usage]:
    items: list[AnyItem] = []
    usage = Usage()
    async for event in client.stream(request):
        heard.events += 1
        if isinstance(event, OutputTextDelta):
            emit(TextDelta(event.item_id, event.delta))
        elif isinstance(event, ItemDone):
            try:
                item = server_item(event.item)
            except MalformedItem as exc:
                raise StreamFailed(f"the model server sent {exc}", retryable=False) from None
            items.append(item)
            if isinstance(item, Message) and item.role == "assistant":
                emit(AssistantMessage(item.text))
            elif isinstance(item, Reasoning) and item.summary_text:
                emit(ReasoningSummary(item.summary_text))
            elif item.type == WEB_SEARCH_CALL:
                emit(WebSearched(*card_fields(event.item, len(items))))
        elif isinstance(event, Completed):
            usage = event.usage
    if must_speak and not any(_speaks(item) for item in items):
        raise StreamFailed(EMPTY_ANSWER, retryable=False)
    return items, usage


def _speaks(item: AnyItem) -> bool:
    """Whether ``item`` is something a turn can end on or go on from: a search the
    server ran is one (its card says what was done), as in Codex, where a response
    without a tool call ends the turn."""
    return (
        isinstance(item, FunctionCall | CustomToolCall | LocalShellCall)
        or (isinstance(item, Message) and item.role == "assistant")
        or item.type == WEB_SEARCH_CALL
    )
