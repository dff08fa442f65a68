"""The SSE parser's fast path (whole chunks at once) against its line-by-line path, with
the body cut at every byte."""

from __future__ import annotations

import pytest

from agent_magics.models._sse import SseParser

STREAMS = [
    pytest.param(b'event: a\ndata: {"x": 1}\n\nevent: b\ndata: {"y": 2}\n\n', id="responses"),
    pytest.param(b'data: {"x": 1}\n\ndata: [DONE]\n\n', id="chat"),
    pytest.param(b": keep-alive\n\ndata: 1\n\n: PROCESSING\ndata: 2\n\n", id="comments"),
    pytest.param(b"data: a\ndata: b\n\ndata: c\n\n", id="two-data-lines"),
    pytest.param(b"data: a\nid: 7\n\ndata: b\n\n", id="field-after-data"),
    pytest.param(b"event: ping\n\ndata: a\ndata: b\n\n", id="no-data-then-two"),
    pytest.param(b"data: a\r\n\r\ndata: b\r\n\r\n", id="crlf"),
    pytest.param(b"data:tight\n\n\n\ndata:  two spaces\n\n", id="spacing"),
    pytest.param(b"data: unterminated", id="last-event-without-blank-line"),
    pytest.param(b'data: {"t": "\xc3\xa9"}\n\n', id="utf8"),
]


def reference(body: bytes) -> list[bytes]:
    parser = SseParser()
    return [e.data.encode() for e in parser.feed(body) + parser.close()]


def fast(chunks: list[bytes]) -> list[bytes]:
    parser = SseParser()
    out: list[bytes] = []
    for chunk in chunks:
        out += parser.feed_data(chunk)
    return out + parser.close_data()


@pytest.mark.parametrize("body", STREAMS)
def test_fast_path_matches_the_line_parser_wherever_the_body_is_cut(body: bytes) -> None:
    expected = reference(body)
    assert fast([body]) == expected
    for cut in range(len(body) + 1):
        assert fast([body[:cut], body[cut:]]) == expected, cut
    assert fast([body[i : i + 1] for i in range(len(body))]) == expected


def test_reference_values() -> None:
    assert reference(b"data: a\ndata: b\n\ndata:c\n\n") == [b"a\nb", b"c"]
    assert reference(b": only a comment\n\n") == []


def test_regions_are_whole_events_until_a_carriage_return() -> None:
    parser = SseParser()
    assert parser.feed_region(b"data: a\n\nda") == b"data: a\n\n"
    assert parser.feed_region(b"ta: b\n") == b""
    assert parser.feed_region(b"\ndata: c\n\n") == b"data: b\n\ndata: c\n\n"
    assert parser.feed_region(b"data: d\r\n\r\n") is None  # not taken: read it so
    assert parser.feed_data(b"data: d\r\n\r\n") == [b"d"]
    assert parser.feed_region(b"data: e\n\n") is None  # line by line from then on
