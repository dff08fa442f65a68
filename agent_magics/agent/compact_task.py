"""Asking the model server for a compacted conversation.

Any server (``local``): the whole history, no tools, and the summarising prompt as the
last user message; the answer's last message is the summary. OpenAI's own API
(``remote``): the ordinary request with a last ``compaction_trigger`` item, answered
by exactly one opaque ``compaction`` item that later requests send on. A summarising
request the server finds too long is sent again without the oldest item of the
history, until it fits (the prompt itself is never left out).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from agent_magics.agent.compact_history import COMPACTION_ITEM, summary_text
from agent_magics.agent.sampling import sample
from agent_magics.errors import ContextWindowFull, ModelError
from agent_magics.events import EventSink, RetryScheduled, Usage
from agent_magics.models.base import ModelClient, ModelRequest
from agent_magics.protocol.items import AnyItem, FunctionCallOutput, Message

REMOTE_TRIGGER = {"type": "compaction_trigger"}
RequestFor = Callable[[Sequence[AnyItem], bool, list[dict[str, Any]]], ModelRequest]
"""Builds a request: (history, whether tools are offered, raw items sent after it)."""
FillsWindow = Callable[[ModelRequest], bool] | None
"""Whether a request is about as long as the model's window (see :func:`.sampling.sample`)."""


@dataclass(frozen=True)
class Answer:
    """What the server gave: the summary (local) or the compaction item (remote)."""

    summary: str
    item: AnyItem | None
    trimmed: int
    usage: Usage


async def summarise(
    client: ModelClient,
    request_for: RequestFor,
    history: Sequence[AnyItem],
    prompt: str,
    emit: EventSink,
    max_retries: int,
    room: Callable[[list[AnyItem]], list[AnyItem]] = list,
    fills_window: FillsWindow = None,
) -> Answer:
    """The summary of ``history``, asked with ``prompt`` and no tools. ``room`` leaves
    out the oldest items the request would not have room for (see :func:`with_room`)."""

    async def ask(items: list[AnyItem]) -> tuple[list[AnyItem], Usage]:
        build = partial(request_for, [*items, Message.user(prompt)], False, [])
        return await sample(
            client, build, _retries_only(emit), max_retries, fills_window=fills_window
        )

    kept = room(list(history))
    out, usage, trimmed = await _fitting(kept, ask)
    trimmed += len(history) - len(kept)
    return Answer(summary_text(out), None, trimmed, usage)


async def compact_remotely(
    client: ModelClient,
    request_for: RequestFor,
    history: Sequence[AnyItem],
    emit: EventSink,
    max_retries: int,
    fills_window: FillsWindow = None,
) -> Answer:
    """The server's own compaction of ``history`` (OpenAI's ``compaction`` item)."""

    async def ask(items: list[AnyItem]) -> tuple[list[AnyItem], Usage]:
        build = partial(request_for, items, True, [dict(REMOTE_TRIGGER)])
        return await sample(
            client,
            build,
            _retries_only(emit),
            max_retries,
            must_speak=False,
            fills_window=fills_window,
        )

    out, usage, trimmed = await _fitting(list(history), ask)
    found = [i for i in out if i.type == COMPACTION_ITEM]
    if len(found) != 1:
        raise ModelError(
            "The model server's answer to a compaction held "
            f"{len(found)} compaction items among {len(out)}; it must hold exactly one."
        )
    return Answer("", found[0], trimmed, usage)


async def _fitting(
    items: list[AnyItem], ask: Callable[[list[AnyItem]], Awaitable[tuple[list[AnyItem], Usage]]]
) -> tuple[list[AnyItem], Usage, int]:
    """``ask(items)``, the oldest item left out each time the server finds it too long."""
    trimmed = 0
    while True:
        try:
            out, usage = await ask(items)
        except ContextWindowFull:
            if not items:
                raise
            items = _without_oldest(items)
            trimmed += 1
            continue
        return out, usage, trimmed


def with_room(budget: int, bytes_per_token: float) -> Callable[[list[AnyItem]], list[AnyItem]]:
    """Leaves out the oldest items until the rest take at most ``budget`` tokens (their
    JSON at ``bytes_per_token``): a summarising request in a small window must leave the
    model room to write the summary, so it is not sent only to overflow (some servers,
    llama-cpp-python's among them, say so by dropping the stream, not by a code)."""

    def fit(items: list[AnyItem]) -> list[AnyItem]:
        sizes = {id(item): len(json.dumps(item.wire())) for item in items}
        while items and sum(sizes[id(i)] for i in items) / bytes_per_token > budget:
            items = _without_oldest(items)
        return items

    return fit


def _without_oldest(items: list[AnyItem]) -> list[AnyItem]:
    """``items`` without the first, and without outputs whose call is gone with it."""
    rest = items[1:]
    calls = {getattr(i, "call_id", None) for i in rest if not _is_output(i)}
    return [i for i in rest if not _is_output(i) or getattr(i, "call_id", None) in calls]


def _is_output(item: AnyItem) -> bool:
    return isinstance(item, FunctionCallOutput) or item.type.endswith("_call_output")


def _retries_only(emit: EventSink) -> EventSink:
    """The summary is not the assistant's answer: only retries are told."""

    def sink(event: Any) -> None:
        if isinstance(event, RetryScheduled):
            emit(event)

    return sink
