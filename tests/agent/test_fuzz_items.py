"""Fuzz tests: no item, argument text or stream a server sends raises anything but the
errors meant for it (``MalformedItem``, ``ArgumentError``, ``StreamFailed``).

The suite runs a few hundred examples of each; set ``FUZZ_EXAMPLES`` for a longer
campaign.
"""

from __future__ import annotations

import json
import os
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agent_magics.errors import ArgumentError
from agent_magics.models.base import Completed, ItemDone, OutputTextDelta, StreamFailed
from agent_magics.models.chat import ChatDecoder
from agent_magics.models.responses import ResponsesDecoder
from agent_magics.models.stream import Decoder, StreamReader
from agent_magics.protocol.items import MalformedItem, server_item
from agent_magics.tools.args import decode_args
from agent_magics.tools.handlers.plan import UpdatePlanArgs
from agent_magics.tools.handlers.read_file import ReadFileArgs
from agent_magics.tools.router import tool_call_from_item

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "300"))
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

ITEM_TYPES = [
    "message",
    "reasoning",
    "function_call",
    "custom_tool_call",
    "function_call_output",
    "custom_tool_call_output",
    "web_search_call",
]
FIELDS = ["type", "role", "content", "name", "arguments", "input", "call_id", "id", "summary"]
EVENT_TYPES = [
    "response.created",
    "response.output_item.added",
    "response.output_item.done",
    "response.output_text.delta",
    "response.function_call_arguments.delta",
    "response.reasoning_summary_text.delta",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
]

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=30,
)


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = [value]
    return value


deep_values = st.integers(min_value=100, max_value=400).map(nested)
field_values = json_values | deep_values | st.sampled_from(ITEM_TYPES)
items = st.dictionaries(st.sampled_from(FIELDS), field_values, max_size=7) | json_values


@FUZZ
@given(items)
def test_server_item_raises_only_malformed_item(data: Any) -> None:
    try:
        item = server_item(data)
    except MalformedItem:
        return
    wire = item.wire()  # what goes back to the server must be writable
    json.dumps(wire)
    call = tool_call_from_item(wire)
    if call is not None:
        assert call.call_id and isinstance(call.raw_input, str)


json_texts = json_values.map(json.dumps)
bracket_soup = st.text(alphabet='[]{}",:0123456789 \\ae', max_size=400)
deep_texts = st.integers(min_value=100, max_value=3000).map(lambda n: "[" * n + "]" * (n // 2))
argument_texts = st.text(max_size=200) | json_texts | bracket_soup | deep_texts
MODELS: list[type[BaseModel]] = [ReadFileArgs, UpdatePlanArgs]


@FUZZ
@given(argument_texts, st.sampled_from(MODELS))
def test_decode_args_raises_only_argument_error(raw: str, model: type[BaseModel]) -> None:
    try:
        decode_args(model, raw)
    except ArgumentError as exc:
        assert exc.message.startswith("failed to parse function arguments: ")


def payload(kind: str, fields: dict[str, Any]) -> bytes:
    return json.dumps({"type": kind, **fields}).encode()


responses_payloads = st.builds(
    payload, st.sampled_from(EVENT_TYPES), st.dictionaries(st.sampled_from(
        ["item", "delta", "item_id", "response", "code", "message"]), field_values, max_size=3)
)  # fmt: skip


def objects(keys: list[str], values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Objects with some of the keys a reader looks at, of any value."""
    return st.fixed_dictionaries({}, optional=dict.fromkeys(keys, values))


def shaped(keys: list[str], values: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Mostly such objects; sometimes a value of another shape where one was expected."""
    return st.one_of(objects(keys, values), objects(keys, values), values)


functions = shaped(["name", "arguments"], field_values)
fragments = shaped(["index", "id", "type", "function", "name", "arguments"], functions)
deltas = shaped(
    ["content", "role", "reasoning", "reasoning_content", "tool_calls", "function_call"],
    st.lists(fragments, max_size=3) | fragments,
)
choices = shaped(["index", "delta", "finish_reason"], deltas | st.just(0) | st.just("stop"))
chunks = objects(
    ["id", "choices", "usage", "error", "object"],
    st.lists(choices, max_size=2) | choices | scalars,
)
chat_payloads = chunks.map(lambda v: json.dumps(v).encode())
garbage = st.binary(max_size=60)


def sse(payloads: list[bytes]) -> bytes:
    return b"".join(b"data: " + p + b"\n\n" for p in payloads)


def read_all(decoder: Decoder, body: bytes, cuts: list[int]) -> list[Any]:
    """Every event of ``body`` read in pieces cut at ``cuts``; ``StreamFailed`` ends it."""
    reader = StreamReader(decoder)
    events: list[Any] = []
    try:
        at = 0
        for cut in [*sorted({c % (len(body) + 1) for c in cuts}), len(body)]:
            events += reader.read(body[at:cut]) or []
            at = cut
            if reader.done:
                break
        events += reader.end()
    except StreamFailed as exc:
        events.append(exc.message)
    for event in events:
        if isinstance(event, ItemDone):
            assert isinstance(event.item, dict)
    return events


cut_points = st.lists(st.integers(min_value=0, max_value=10_000), max_size=8)


@FUZZ
@given(st.lists(responses_payloads | garbage, max_size=8), cut_points)
def test_responses_stream_raises_only_stream_failed(payloads: list[bytes], cuts: list[int]) -> None:
    read_all(ResponsesDecoder(), sse(payloads), cuts)


@FUZZ
@given(st.lists(chat_payloads | garbage, max_size=8), cut_points)
def test_chat_stream_raises_only_stream_failed(payloads: list[bytes], cuts: list[int]) -> None:
    read_all(ChatDecoder(frozenset({"apply_patch"})), sse(payloads), cuts)


@FUZZ
@given(st.binary(max_size=600), cut_points)
def test_raw_bytes_raise_only_stream_failed(body: bytes, cuts: list[int]) -> None:
    read_all(ResponsesDecoder(), body, cuts)
    read_all(ChatDecoder(), body, cuts)


texts = st.text(alphabet=st.characters(codec="utf-8"), max_size=40)


@FUZZ
@given(st.lists(texts, min_size=1, max_size=12), cut_points, st.booleans())
def test_events_are_the_same_however_the_body_is_cut(
    deltas: list[str], cuts: list[int], crlf: bool
) -> None:
    """The parser's bookkeeping across reads (held chunks, a blank line split over two
    reads) changes nothing about what is read."""
    events = [{"type": "response.output_text.delta", "item_id": "m", "delta": d} for d in deltas]
    events.append({"type": "response.completed", "response": {"id": "r"}})
    body = sse([json.dumps(e).encode() for e in events])
    if crlf:
        body = body.replace(b"\n", b"\r\n")
    whole = merged(read_all(ResponsesDecoder(), body, []))
    assert merged(read_all(ResponsesDecoder(), body, cuts)) == whole
    assert whole == ["".join(deltas), Completed("r")]


def merged(events: list[Any]) -> list[Any]:
    """The events with the text deltas of a run joined (reads batch them differently)."""
    out: list[Any] = [""]
    for event in events:
        if isinstance(event, OutputTextDelta) and isinstance(out[-1], str):
            out[-1] += event.delta
        else:
            out.append(event)
    return out
