"""Reading a stream a network read at a time (:class:`StreamReader`: the payloads of a
read parsed together, text deltas of one item in a read joined): cut into reads every
which way, a stream gives the events the decoder gives for one payload at a time."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest

from agent_magics import Session, SessionConfig
from agent_magics.events import AssistantMessage, Event, TextDelta
from agent_magics.models._sse import SseParser
from agent_magics.models.base import ItemAdded, ModelEvent, ModelRequest, OutputTextDelta
from agent_magics.models.chat import ChatClient, ChatDecoder
from agent_magics.models.responses import ResponsesDecoder
from agent_magics.models.stream import DONE, Decoder, StreamReader
from agent_magics.testing import PayloadServer, ScriptedResponsesServer, message, response_events
from tests.helpers.chat_fault_server import chat_chunks

TEXTS = {
    "ascii": "The quick brown fox jumps over the lazy dog. " * 40,
    "escapes": 'a "quote", a back\\slash, a tab\tand\nnew\r\nlines, a / slash ' * 30,
    "unicode": "héllo wörld, ✓ done 😀 — ünïcödé 𝄞 " * 40,
    "controls": "bell\x07 nul\x00 esc\x1b del\x7f " * 60,
}
Events = list[dict[str, Any] | str]


# -- streams -----------------------------------------------------------------------------


def sse(
    events: Events,
    *,
    compact: bool = False,
    ascii_only: bool = True,
    newline: str = "\n",
    event_lines: bool = True,
) -> bytes:
    """An SSE body; a string is sent as its data (``[DONE]``) or, starting with a colon,
    as a line of its own (a comment)."""
    separators = (",", ":") if compact else (", ", ": ")
    out = []
    for event in events:
        if isinstance(event, str):
            out.append((event if event.startswith(":") else f"data: {event}") + newline * 2)
            continue
        data = json.dumps(event, separators=separators, ensure_ascii=ascii_only)
        lines = [f"event: {event['type']}"] if event_lines and "type" in event else []
        out.append(newline.join([*lines, f"data: {data}"]) + newline * 2)
    return "".join(out).encode()


def responses(text: str, size: int = 3, item_id: str = "msg_1") -> Events:
    return list(response_events([message(text, item_id)], chunk=size))


def chat(text: str, size: int = 3) -> Events:
    return [*chat_chunks([message(text)], size=size), DONE]


def is_text_delta(event: dict[str, Any] | str) -> bool:
    if isinstance(event, str):
        return False
    return event.get("type") == "response.output_text.delta" or bool(
        event.get("choices") and event["choices"][0]["delta"].get("content")
    )


def every(
    events: Events, step: int, change: Callable[[dict[str, Any]], dict[str, Any] | str]
) -> Events:
    """``events`` with every ``step``-th text delta changed."""
    out: Events = []
    seen = 0
    for event in events:
        if is_text_delta(event):
            seen += 1
            if seen % step == 0:
                assert isinstance(event, dict)
                event = change(event)
        out.append(event)
    return out


def obfuscated(event: dict[str, Any]) -> dict[str, Any]:
    """As OpenAI pads each delta: a random string of random length, last."""
    pad = "".join(random.choice("abcXYZ0189") for _ in range(random.randint(1, 12)))
    return {**event, "obfuscation": pad}


def reordered(event: dict[str, Any]) -> dict[str, Any]:
    return dict(reversed(list(event.items())))


def with_logprobs(event: dict[str, Any]) -> dict[str, Any]:
    if "type" in event:
        return {**event, "logprobs": [{"token": "x", "logprob": -0.5}]}
    choice = {**event["choices"][0], "logprobs": {"content": [{"token": "x"}]}}
    return {**event, "choices": [choice]}


def two_data_lines(event: dict[str, Any]) -> str:
    """The payload split over two ``data:`` lines (joined with a newline: still JSON)."""
    data = json.dumps(event)
    cut = data.index(", ") + 1
    return f"{data[:cut]}\ndata: {data[cut + 1 :]}"


def broken_counter(event: dict[str, Any]) -> str:
    """Not JSON (a number with a leading zero): both paths drop the payload."""
    if "type" in event:
        return json.dumps(event).replace('"sequence_number": ', '"sequence_number": 0')
    return json.dumps(event).replace('"created": ', '"created": 0')


def with_role(event: dict[str, Any]) -> dict[str, Any]:
    """As Ollama sends every fragment: the role beside the content."""
    choice = event["choices"][0]
    return {**event, "choices": [{**choice, "delta": {"role": "assistant", **choice["delta"]}}]}


def usage_null(event: dict[str, Any]) -> dict[str, Any]:
    return {**event, "usage": None}


def comments(events: Events, step: int) -> Events:
    out: Events = []
    for index, event in enumerate(events):
        if index % step == 0:
            out.append(": keep-alive")
        out.append(event)
    return out


def stream_cases() -> Iterator[Any]:
    random.seed(7)
    for name, text in TEXTS.items():
        yield pytest.param("responses", sse(responses(text)), id=f"responses-{name}")
        yield pytest.param("chat", sse(chat(text)), id=f"chat-{name}")
        raw = {"compact": True, "ascii_only": False}
        yield pytest.param("responses", sse(responses(text), **raw), id=f"r-raw-{name}")
        yield pytest.param("chat", sse(chat(text), **raw), id=f"chat-raw-{name}")
    text = TEXTS["escapes"] + TEXTS["unicode"]
    openai = {"compact": True, "ascii_only": False}
    yield pytest.param(
        "responses", sse(every(responses(text), 1, obfuscated), **openai), id="r-openai"
    )
    yield pytest.param("chat", sse(every(chat(text), 1, obfuscated), **openai), id="chat-openai")
    yield pytest.param(
        "chat", sse(every(every(chat(text), 1, with_role), 1, usage_null)), id="chat-ollama"
    )
    for name, change in [
        ("reordered", reordered),
        ("extra-field", with_logprobs),
        ("two-data-lines", two_data_lines),
        ("not-json", broken_counter),
    ]:
        for protocol, events in [("responses", responses(text)), ("chat", chat(text))]:
            body = sse(every(events, 29, change))
            yield pytest.param(protocol, body, id=f"{protocol}-{name}")
    yield pytest.param("responses", sse(comments(responses(text), 40)), id="r-comments")
    yield pytest.param("chat", sse(comments(chat(text), 40)), id="chat-comments")
    for protocol, events in [("responses", responses(text)), ("chat", chat(text))]:
        body = sse(events, newline="\r\n")
        yield pytest.param(protocol, body, id=f"{protocol}-crlf")
    two = responses(text, item_id="msg_a")[:-1] + responses(text[::-1], item_id="msg_b")[1:]
    yield pytest.param("responses", sse(two), id="r-two-messages")
    reasoning = [*chat_chunks([message(text)], reasoning="hmm " * 500)]
    yield pytest.param("chat", sse([*reasoning, DONE]), id="chat-reasoning")


STREAMS = list(stream_cases())


def decoder_for(protocol: str) -> Decoder:
    return ResponsesDecoder() if protocol == "responses" else ChatDecoder()


# -- reading ------------------------------------------------------------------------------


def one_by_one(decoder: Decoder, body: bytes) -> list[ModelEvent]:
    """The reference: each payload parsed and decoded on its own."""
    parser = SseParser()
    events: list[ModelEvent] = []
    for payload in parser.feed(body) + parser.close():
        if payload == DONE.encode():
            return events + decoder.finish(True)
        try:
            data = json.loads(payload)
        except ValueError:
            continue
        if isinstance(data, dict):
            events += decoder.feed_all([data])
    return events + decoder.finish(False)


def by_reads(decoder: Decoder, reads: list[bytes]) -> list[ModelEvent]:
    """The events a :class:`StreamReader` gives for ``reads``."""
    reader = StreamReader(decoder)
    events: list[ModelEvent] = []
    for read in reads:
        events += reader.read(read) or []
        if reader.done:
            break
    events += reader.end()
    return events


def cut(body: bytes, sizes: Iterator[int]) -> list[bytes]:
    ends = [0]
    while ends[-1] < len(body):
        ends.append(min(len(body), ends[-1] + next(sizes)))
    return [body[a:b] for a, b in pairwise(ends)]


def repeat_size(size: int) -> Iterator[int]:
    while True:
        yield size


def random_sizes(seed: int) -> Iterator[int]:
    rng = random.Random(seed)
    while True:
        yield rng.choice([1, 7, 300, 4099, 9000, 20000, 70000])


READS: dict[str, Callable[[bytes], list[bytes]]] = {
    "whole": lambda body: [body],
    "64k": lambda body: cut(body, repeat_size(65536)),
    "4099": lambda body: cut(body, repeat_size(4099)),
    "997": lambda body: cut(body, repeat_size(997)),
    "random": lambda body: cut(body, random_sizes(len(body))),
}


def normal(events: list[ModelEvent]) -> list[Any]:
    """Text deltas of one item that follow each other joined, and the ids the chat
    decoder makes up named by order of appearance."""
    names: dict[str, str] = {}

    def name(item_id: str) -> str:
        return names.setdefault(item_id, f"item{len(names)}")

    out: list[Any] = []
    for event in events:
        if isinstance(event, OutputTextDelta):
            key = name(event.item_id)
            if out and out[-1][:2] == ("text", key):
                out[-1] = ("text", key, out[-1][2] + event.delta)
            else:
                out.append(("text", key, event.delta))
        elif isinstance(event, ItemAdded) and "id" in event.item:
            out.append(("added", {**event.item, "id": name(event.item["id"])}))
        else:
            out.append(event)
    return out


@pytest.mark.parametrize("reads", list(READS))
@pytest.mark.parametrize(("protocol", "body"), STREAMS)
def test_reads_give_the_events_of_one_payload_at_a_time(
    protocol: str, body: bytes, reads: str
) -> None:
    expected = normal(one_by_one(decoder_for(protocol), body))
    assert normal(by_reads(decoder_for(protocol), READS[reads](body))) == expected


# -- through the clients ---------------------------------------------------------------------


async def test_session_turn_reads_a_long_answer(tmp_path: Path) -> None:
    text = "".join(TEXTS.values())
    with ScriptedResponsesServer([[message(text * 4)]]) as server:
        config = SessionConfig(model="m", base_url=server.base_url, api_key="sk-test", cwd=tmp_path)
        session = Session(config)
        events: list[Event] = []
        session.subscribe(events.append)
        try:
            result = await session.run_turn("hi")
        finally:
            await session.aclose()
    assert result.final_text == text * 4
    assert "".join(e.delta for e in events if isinstance(e, TextDelta)) == text * 4
    assert [e.text for e in events if isinstance(e, AssistantMessage)] == [text * 4]


async def test_chat_connection_is_used_again_after_done() -> None:
    server = PayloadServer(sse(chat("hello " * 2000)))
    client = ChatClient(server.base_url, "sk-test")
    request = ModelRequest(model="m", instructions="", input=[], tools=[])
    try:
        for _ in range(3):
            events = [e async for e in client.stream(request)]
            text = "".join(e.delta for e in events if isinstance(e, OutputTextDelta))
            assert text == "hello " * 2000
    finally:
        await client.aclose()
        server.close()
    assert server.connections == 1
