"""The SSE parser: the data of each event, whole or with the body cut at every byte."""

from __future__ import annotations

import pytest

from agent_magics.models._sse import SseParser

STREAMS = [
    pytest.param(
        b'event: a\ndata: {"x": 1}\n\nevent: b\ndata: {"y": 2}\n\n',
        [b'{"x": 1}', b'{"y": 2}'],
        id="responses",
    ),
    pytest.param(b'data: {"x": 1}\n\ndata: [DONE]\n\n', [b'{"x": 1}', b"[DONE]"], id="chat"),
    pytest.param(
        b": keep-alive\n\ndata: 1\n\n: PROCESSING\ndata: 2\n\n", [b"1", b"2"], id="comments"
    ),
    pytest.param(b"data: a\ndata: b\n\ndata: c\n\n", [b"a\nb", b"c"], id="two-data-lines"),
    pytest.param(b"data: a\nid: 7\n\ndata: b\n\n", [b"a", b"b"], id="field-after-data"),
    pytest.param(b"event: ping\n\ndata: a\ndata: b\n\n", [b"a\nb"], id="no-data-then-two"),
    pytest.param(b"data: a\r\n\r\ndata: b\r\n\r\n", [b"a", b"b"], id="crlf"),
    pytest.param(b"data: a\rb\n\n", [b"a\rb"], id="lone-cr-is-no-line-end"),
    pytest.param(
        b"data:tight\n\n\n\ndata:  two spaces\n\n", [b"tight", b" two spaces"], id="spacing"
    ),
    pytest.param(b"data\n\ndata: x\n\n", [b"", b"x"], id="data-without-colon"),
    pytest.param(b"data: unterminated", [b"unterminated"], id="last-event-without-blank-line"),
    pytest.param(b"data: last\r", [b"last"], id="last-line-ends-with-cr"),
    pytest.param(b'data: {"t": "\xc3\xa9"}\n\n', [b'{"t": "\xc3\xa9"}'], id="utf8"),
]


def parse(chunks: list[bytes]) -> list[bytes]:
    parser = SseParser()
    out: list[bytes] = []
    for chunk in chunks:
        out += parser.feed(chunk)
    return out + parser.close()


@pytest.mark.parametrize(("body", "expected"), STREAMS)
def test_events_are_the_same_wherever_the_body_is_cut(body: bytes, expected: list[bytes]) -> None:
    assert parse([body]) == expected
    for cut in range(len(body) + 1):
        assert parse([body[:cut], body[cut:]]) == expected, cut
    assert parse([body[i : i + 1] for i in range(len(body))]) == expected


def test_only_a_comment_gives_nothing() -> None:
    assert parse([b": only a comment\n\n"]) == []
    assert parse([b""]) == []
