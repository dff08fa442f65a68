"""The fast path for runs of text deltas (``models/_fast_text.py``, ``_template.py``)
against the usual parse: a stream read through :class:`StreamReader`, cut into network
reads every which way, gives the events the decoder gives for one payload at a time
(text deltas of one item that follow each other joined). The fast path is shown to run
where it should, and each event it must not read is tried."""

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
from agent_magics.models._template import Template, decode_bodies, learn_template
from agent_magics.models.base import ItemAdded, ModelEvent, ModelRequest, OutputTextDelta
from agent_magics.models.chat import ChatClient, ChatDecoder
from agent_magics.models.responses import ResponsesDecoder
from agent_magics.models.stream import DONE, Decoder, StreamReader
from agent_magics.testing import PayloadServer, ScriptedResponsesServer, message, response_events
from tests.chat_fault_server import chat_chunks, chunk

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
        yield pytest.param("responses", sse(responses(text)), True, id=f"responses-{name}")
        yield pytest.param("chat", sse(chat(text)), True, id=f"chat-{name}")
        raw = {"compact": True, "ascii_only": False}
        yield pytest.param("responses", sse(responses(text), **raw), True, id=f"r-raw-{name}")
        yield pytest.param("chat", sse(chat(text), **raw), True, id=f"chat-raw-{name}")
    text = TEXTS["escapes"] + TEXTS["unicode"]
    openai = {"compact": True, "ascii_only": False}
    yield pytest.param(
        "responses", sse(every(responses(text), 1, obfuscated), **openai), True, id="r-openai"
    )
    yield pytest.param(
        "chat", sse(every(chat(text), 1, obfuscated), **openai), True, id="chat-openai"
    )
    yield pytest.param(
        "chat", sse(every(every(chat(text), 1, with_role), 1, usage_null)), True, id="chat-ollama"
    )
    for name, change in [
        ("reordered", reordered),
        ("extra-field", with_logprobs),
        ("two-data-lines", two_data_lines),
        ("not-json", broken_counter),
    ]:
        for protocol, events in [("responses", responses(text)), ("chat", chat(text))]:
            body = sse(every(events, 29, change))  # fast or not: the same events
            yield pytest.param(protocol, body, None, id=f"{protocol}-{name}")
    for protocol, events in [("responses", responses(text)), ("chat", chat(text))]:
        body = sse(every(events, 3, reordered))  # runs too short for the template
        yield pytest.param(protocol, body, None, id=f"{protocol}-every-third-reordered")
    yield pytest.param("responses", sse(comments(responses(text), 40)), True, id="r-comments")
    yield pytest.param("chat", sse(comments(chat(text), 40)), True, id="chat-comments")
    for protocol, events in [("responses", responses(text)), ("chat", chat(text))]:
        body = sse(events, newline="\r\n")
        yield pytest.param(protocol, body, False, id=f"{protocol}-crlf")
    two = responses(text, item_id="msg_a")[:-1] + responses(text[::-1], item_id="msg_b")[1:]
    yield pytest.param("responses", sse(two), True, id="r-two-messages")
    reasoning = [*chat_chunks([message(text)], reasoning="hmm " * 500)]
    yield pytest.param("chat", sse([*reasoning, DONE]), True, id="chat-reasoning")


STREAMS = list(stream_cases())


def decoder_for(protocol: str) -> Decoder:
    return ResponsesDecoder() if protocol == "responses" else ChatDecoder()


# -- reading ------------------------------------------------------------------------------


def one_by_one(decoder: Decoder, body: bytes) -> list[ModelEvent]:
    """The reference: each payload parsed and decoded on its own."""
    parser = SseParser()
    events: list[ModelEvent] = []
    for sse_event in parser.feed(body) + parser.close():
        if sse_event.data == DONE:
            return events + decoder.finish(True)
        try:
            data = json.loads(sse_event.data)
        except ValueError:
            continue
        if isinstance(data, dict):
            events += decoder.feed_all([data])
    return events + decoder.finish(False)


def by_reads(decoder: Decoder, reads: list[bytes]) -> tuple[list[ModelEvent], int]:
    """The events a :class:`StreamReader` gives for ``reads``, and its fast runs."""
    reader = StreamReader(decoder)
    events: list[ModelEvent] = []
    for read in reads:
        events += reader.read(read) or []
        if reader.done:
            break
    events += reader.end()
    return events, reader.fast.runs if reader.fast else 0


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
@pytest.mark.parametrize(("protocol", "body", "fast"), STREAMS)
def test_reads_give_the_events_of_one_payload_at_a_time(
    protocol: str, body: bytes, fast: bool | None, reads: str
) -> None:
    expected = normal(one_by_one(decoder_for(protocol), body))
    events, runs = by_reads(decoder_for(protocol), READS[reads](body))
    assert normal(events) == expected
    if reads in ("whole", "64k") and fast is not None:
        assert (runs > 0) == fast


# -- templates ----------------------------------------------------------------------------


def event_bytes(event: dict[str, Any], **encoding: Any) -> bytes:
    return sse([event], **encoding)[:-2]


RESPONSES_DELTA = responses("abcdef", item_id="msg_1")[2]
CHAT_DELTA = chat("abcdef")[1]
assert isinstance(RESPONSES_DELTA, dict) and isinstance(CHAT_DELTA, dict)


def template(event: dict[str, Any], protocol: str, **encoding: Any) -> Template | None:
    decoder = decoder_for(protocol)
    shape = decoder.text_shape
    assert shape is not None
    return learn_template(event_bytes(event, **encoding), event, shape, "msg_1")


@pytest.mark.parametrize(
    ("event", "protocol", "encoding", "holes"),
    [
        pytest.param(RESPONSES_DELTA, "responses", {}, ["COUNTER", "TEXT"], id="responses"),
        pytest.param(
            obfuscated(RESPONSES_DELTA),
            "responses",
            {"compact": True},
            ["COUNTER", "TEXT", "STRING"],
            id="responses-openai",
        ),
        pytest.param(CHAT_DELTA, "chat", {}, ["TEXT"], id="chat"),
        pytest.param(
            obfuscated(CHAT_DELTA), "chat", {"compact": True}, ["TEXT", "STRING"], id="chat-openai"
        ),
    ],
)
def test_holes_are_found(
    event: dict[str, Any], protocol: str, encoding: dict[str, Any], holes: list[str]
) -> None:
    learned = template(event, protocol, **encoding)
    assert learned is not None
    assert [h.name for h in learned.holes] == holes


@pytest.mark.parametrize(
    ("event", "protocol"),
    [
        pytest.param({**RESPONSES_DELTA, "note": {"delta": "x"}}, "responses", id="text-key-twice"),
        pytest.param(
            {k: v for k, v in reversed(RESPONSES_DELTA.items())},
            "responses",
            id="counter-after-text",
        ),
        pytest.param(
            chunk([{**CHAT_DELTA["choices"][0], "logprobs": {"content": []}}]),
            "chat",
            id="content-key-twice",
        ),
    ],
)
def test_no_template_where_a_hole_is_in_doubt(event: dict[str, Any], protocol: str) -> None:
    assert template(event, protocol) is None


def test_no_template_where_the_key_found_is_not_the_field() -> None:
    """``"delta":`` appears once in the bytes, inside another key; the real key is
    written with an escape. Only the probe parse can tell."""
    raw = (
        b'data: {"type": "response.output_text.delta", "sequence_number": 3, '
        b'"item_id": "msg_1", "x\\"delta": "y", "d\\u0065lta": "abc"}'
    )
    data = json.loads(raw[6:])
    assert data["delta"] == "abc"
    shape = ResponsesDecoder.text_shape
    assert shape is not None
    assert learn_template(raw, data, shape, "msg_1") is None


def delta_run(texts: list[str]) -> list[dict[str, Any]]:
    return [{**RESPONSES_DELTA, "sequence_number": 10 + i, "delta": t} for i, t in enumerate(texts)]


def test_a_run_fits_and_gives_its_text() -> None:
    learned = template(RESPONSES_DELTA, "responses")
    assert learned is not None
    texts = ["a", 'b"q"', "c\\", "\n", "é😀", "\x00", "", "z"]
    assert learned.match(sse(delta_run(texts))) == "".join(texts)
    raw = sse(delta_run(texts), ascii_only=False)
    assert learned.match(raw) == "".join(texts)


def replace_in_third(old: bytes, new: bytes) -> Callable[[bytes], bytes]:
    """A change to the third event of a region."""

    def change(region: bytes) -> bytes:
        events = region.split(b"\n\n")
        assert old in events[2], old
        events[2] = events[2].replace(old, new, 1)
        return b"\n\n".join(events)

    return change


def cut_character(region: bytes) -> bytes:
    """An é cut in two: its first byte the third event's text, the second the fourth's."""
    first = replace_in_third(b'"delta": "c"', b'"delta": "\xc3"')(region)
    return first.replace(b'"delta": "d"', b'"delta": "\xa9"')


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(replace_in_third(b'"item_id": "msg_1"', b'"item_id": "msg_2"'), id="item"),
        pytest.param(replace_in_third(b'"sequence_number": 12', b'"sequence_number": 012'), id="0"),
        pytest.param(replace_in_third(b'"sequence_number": 12', b'"sequence_number": 0'), id="z"),
        pytest.param(replace_in_third(b'"sequence_number": 12', b'"sequence_number": -1'), id="-"),
        pytest.param(replace_in_third(b'"delta": "c"', b'"delta": "c" '), id="space"),
        pytest.param(replace_in_third(b'"delta": "c"', b'"delta": "c"c"'), id="quote"),
        pytest.param(replace_in_third(b'"delta": "c"', b'"delta": "c","c"'), id="two-strings"),
        pytest.param(replace_in_third(b'"delta": "c"', b'"delta": "c\\"'), id="open-escape"),
        pytest.param(replace_in_third(b'"delta": "c"', b'"delta": "\\x41"'), id="bad-escape"),
        pytest.param(replace_in_third(b'"delta": "c"', b'"delta": "\\u12"'), id="short-u"),
        pytest.param(replace_in_third(b'"delta": "c"', b'"delta": "\tc"'), id="raw-tab"),
        pytest.param(replace_in_third(b'"delta": "c"', b'"delta": "\xff"'), id="bad-utf8"),
        pytest.param(replace_in_third(b'"delta": "c"', b'"delta": 3'), id="number"),
        pytest.param(replace_in_third(b'"logprobs": []', b'"logprobs": [1]'), id="logprobs"),
        pytest.param(replace_in_third(b'"delta": "c"', b'"delta": "c", "x": 1'), id="extra"),
        pytest.param(replace_in_third(b"data: ", b"data:"), id="data-colon"),
        pytest.param(replace_in_third(b"event: ", b": note\nevent: "), id="comment"),
        pytest.param(cut_character, id="cut-utf8"),
        pytest.param(lambda region: region + b"\n\n", id="blank-line"),
        pytest.param(lambda region: region[:-1], id="no-blank-line"),
    ],
)
def test_an_event_that_does_not_fit_spoils_the_run(change: Callable[[bytes], bytes]) -> None:
    learned = template(RESPONSES_DELTA, "responses")
    assert learned is not None
    region = sse(delta_run(list("abcdefghij")))
    assert learned.match(region) == "abcdefghij"
    assert learned.match(change(region)) is None


def openai_run(texts: list[str]) -> bytes:
    runs = enumerate(delta_run(texts))
    events = [{**delta, "obfuscation": "pad" + "x" * (i % 3)} for i, delta in runs]
    return sse(events, compact=True, ascii_only=False)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        pytest.param(b'"logprobs":[]', b'"logprobs":[0]', id="between-text-and-pad"),
        pytest.param(b'"logprobs":[]', b'"logprobs":0', id="shorter-between"),
        pytest.param(b'"obfuscation":"padxx"', b'"obfuscation":"p\\"dxx"', id="quote-in-pad"),
        pytest.param(b'"obfuscation":"padxx"', b'"obfuscation":7', id="number-pad"),
        pytest.param(b'"delta":"c"', b'"delta":"c"}', id="brace-before-pad"),
    ],
)
def test_an_openai_event_that_does_not_fit_spoils_the_run(old: bytes, new: bytes) -> None:
    """The pad after the text is cut from the right."""
    learned = template(obfuscated(RESPONSES_DELTA), "responses", compact=True)
    assert learned is not None
    region = openai_run(list("abcdefghij"))
    assert learned.match(region) == "abcdefghij"
    assert learned.match(replace_in_third(old, new)(region)) is None


def test_quotes_in_the_text_before_the_pad() -> None:
    learned = template(obfuscated(RESPONSES_DELTA), "responses", compact=True)
    assert learned is not None
    texts = ['"', 'a"b', "\\", '\\"', "c"] * 3
    assert learned.match(openai_run(texts)) == "".join(texts)


@pytest.mark.parametrize(
    "bodies",
    [
        [b"plain", b"", b"text"],
        [b'a\\"b', b"\\\\", b"\\/\\b\\f\\n\\r\\t"],
        [b"\\u00e9\\u00E9", b"\\ud83d\\ude00", b"\\ud83d", b"\\ude00"],
        ["é😀".encode(), "✓".encode()],
        ["é".encode(), b"\\n"],
    ],
)
def test_string_bodies_decode_as_json_does(bodies: list[bytes]) -> None:
    expected = "".join(json.loads(b'"' + body + b'"') for body in bodies)
    assert decode_bodies(bodies) == expected


@pytest.mark.parametrize(
    "bodies",
    [
        [b'a"b'],
        [b'a","b'],
        [b"a\\"],
        [b"\\x"],
        [b"\\u12g4"],
        [b"a\tb"],
        [b"\xff"],
        [b"\xc3", b"\xa9"],
    ],
)
def test_invalid_string_bodies_are_refused(bodies: list[bytes]) -> None:
    assert decode_bodies(bodies) is None


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
