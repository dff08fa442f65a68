"""One compaction of a session's conversation, from the request to the event: when
(:mod:`.compact_trigger`), what is kept (:mod:`.compact_history`), the request
(:mod:`.compact_task`).

The session's history is replaced by the compacted one, the context's size is
estimated again, and a :class:`ContextCompacted` event says what happened: a
session file records it as the history from then on, a cell shows a card, ``exec`` a
line. ``words`` (a person's ``%agent compact WORDS``) are added to the prompt.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from agent_magics.agent.compact_history import (
    SUMMARIZATION_PROMPT,
    compacted_history,
    message_budget,
    person_messages,
    summary_message,
)
from agent_magics.agent.compact_task import compact_remotely, summarise, with_room
from agent_magics.agent.compact_trigger import estimate_tokens
from agent_magics.agent.turn_messages import opening_messages
from agent_magics.config import SessionConfig
from agent_magics.events import ContextCompacted
from agent_magics.protocol.items import AnyItem, Message

if TYPE_CHECKING:
    from agent_magics.agent.session_parts import TurnSession

OPENAI_HOSTS = frozenset({"api.openai.com"})
SUMMARY_ROOM = 4096
KEEP_WORDS = "\n\nThe person asks that the summary keep this in particular:\n{words}"


def remote(config: SessionConfig) -> bool:
    """Whether the server compacts itself: OpenAI's own Responses API, unless the
    ``remote_compaction`` setting says otherwise."""
    if config.remote_compaction is not None:
        return config.remote_compaction and config.provider in ("auto", "responses")
    host = urlsplit(config.base_url).hostname or ""
    return config.provider in ("auto", "responses") and host in OPENAI_HOSTS


def prompt_for(config: SessionConfig, words: str = "") -> str:
    prompt = config.compact_prompt if config.compact_prompt is not None else SUMMARIZATION_PROMPT
    return prompt + KEEP_WORDS.format(words=words.strip()) if words.strip() else prompt


def _room(session: TurnSession, prompt: str) -> Callable[[list[AnyItem]], list[AnyItem]]:
    """In a known window, the summarising request leaves the model a quarter of it (at
    most :data:`SUMMARY_ROOM` tokens) to write the summary in."""
    window = session.context.window
    if not window:
        return list
    request = session.request_for([Message.user(prompt)], False, [])
    fixed = estimate_tokens(request.instructions, request.input, session.context.bytes_per_token)
    budget = window - min(window // 4, SUMMARY_ROOM) - fixed
    return with_room(max(budget, 0), session.context.bytes_per_token)


async def compact(
    session: TurnSession, trigger: str, phase: str, words: str = ""
) -> ContextCompacted:
    """Compact ``session``'s conversation now; raises what the request raised
    (:class:`ContextWindowFull` when even its newest item does not fit), leaving the
    history as it was."""
    config, history = session.config, list(session.history)
    before = session.context.tokens
    retries = config.stream_max_retries
    if remote(config):
        answer = await compact_remotely(
            session.client,
            session.request_for,
            history,
            session.services.emit,
            retries,
            session.fills_window,
        )
    else:
        prompt = prompt_for(config, words)
        emit, room = session.services.emit, _room(session, prompt)
        answer = await summarise(
            session.client,
            session.request_for,
            history,
            prompt,
            emit,
            retries,
            room,
            session.fills_window,
        )
    last = answer.item if answer.item is not None else summary_message(answer.summary)
    opening = opening_messages(session.turn_context())
    budget = message_budget(session.context.window)
    session.history[:] = compacted_history(history, opening, last, budget)
    request = session.request_for(session.history, True, [])
    session.context.record(
        estimate_tokens(request.instructions, request.input, session.context.bytes_per_token)
    )
    kept = tuple(person_messages(session.history))
    event = ContextCompacted(
        trigger,
        phase,
        before,
        session.context.tokens,
        answer.summary,
        kept,
        answer.trimmed,
        session.context.window,
    )
    session.services.emit(event)
    return event
