"""Templates of text delta events: read a run of them without parsing each, checked
byte for byte.

A model streams an answer as thousands of events that differ only in their text and in
a counter or two. Once the slow path (SSE parse, ``json.loads``, decoder) has read one
such event, its bytes become a :class:`Template`: the constant bytes around its
variable values ("holes"). A run of events that are all that template with other values
in the holes is decoded from the holes alone, in a few passes over the bytes at C speed
(split, partition, join, compare) instead of a parse per event
(:mod:`agent_magics.models._fast_text` decides which runs).

Nothing is guessed: the read must equal the template rebuilt around the holes it was cut
into, byte for byte, and every hole must be a valid JSON value of its kind (the text a
string literal's body, a counter a non-negative integer). Such an event parses to the
learned event with other values in fields the decoder reads as text or ignores, so the
decoder would have done with it exactly what the fast path does.

The holes are placed by finding the keys in the learned event's bytes, and the template
is kept only if the event rebuilt with probe values in the holes parses to the learned
payload with those values in those fields.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from itertools import repeat
from operator import itemgetter
from typing import Any

from agent_magics.models._sse import SseParser


class Hole(Enum):
    TEXT = "text"  # the delta's text: a JSON string, handed on
    STRING = "string"  # a JSON string the decoder ignores (an obfuscation pad)
    COUNTER = "counter"  # a non-negative JSON integer the decoder ignores


@dataclass(frozen=True)
class TextShape:
    """Where a protocol's text delta keeps its text, and which of its top-level fields
    change from event to event while the decoder ignores them."""

    text_path: tuple[str | int, ...]
    ignored: dict[str, Hole]


_PROBES = {Hole.TEXT: b"probe text", Hole.STRING: b"probe pad", Hole.COUNTER: b"7654321"}
_SPECIAL = re.compile(rb'[\x00-\x1f"\\]')  # what a string body can hold only escaped
_BODIES = re.compile(  # string bodies, each checked whole, joined by NUL
    rb'(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*'
    rb'(?:\x00(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*)*'
)
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_COUNTER = re.compile(rb"[0-9]+")


class Template:
    """One learned event: ``head``, then holes separated by ``inner`` constants, then
    ``tail``; ``item_id`` is the output item its text belongs to."""

    def __init__(
        self, item_id: str, head: bytes, inner: Sequence[bytes], tail: bytes, holes: list[Hole]
    ) -> None:
        self.item_id = item_id
        self.head = head
        self.inner = tuple(inner)
        self.end = tail + b"\n\n"
        self.holes = holes
        self._joiner = self.end + head
        self._after_head = itemgetter(slice(len(head), None))

    def match(self, region: bytes) -> str | None:
        """The text of ``region`` (complete events, ending in a blank line) if every event
        in it is this template with valid holes; ``None`` otherwise."""
        pieces = region.split(self.end)
        if pieces.pop() or not pieces:
            return None
        rest: Sequence[bytes] = list(map(self._after_head, pieces))
        if self.head + self._joiner.join(rest) + self.end != region:
            return None  # some event does not start with the head (or is too short)
        columns: dict[int, Sequence[bytes]] = {}
        text_at = self.holes.index(Hole.TEXT)
        for at in range(text_at):  # the holes before the text, cut from the left
            if self.holes[at] is Hole.COUNTER:
                cut = _cut_counters(rest, self.inner[at])
            else:
                cut = _cut_left(rest, self.inner[at])
            if cut is None:
                return None
            columns[at], rest = cut
        for at in range(len(self.holes) - 1, text_at, -1):  # strings after it, from the right
            cut = _cut_right(rest, self.inner[at - 1])
            if cut is None:
                return None
            rest, columns[at] = cut
        columns[text_at] = rest
        text: str | None = None
        for at, kind in enumerate(self.holes):
            if kind is not Hole.COUNTER:  # counters were checked as they were cut
                value = decode_bodies(columns[at])
                if value is None:
                    return None
                if kind is Hole.TEXT:
                    text = value
        return text


def _cut_counters(
    pieces: Sequence[bytes], sep: bytes
) -> tuple[Sequence[bytes], Sequence[bytes]] | None:
    """Like :func:`_cut_left` for a counter: each piece must start with a non-negative
    integer (no leading zero, so the first digit is 1-9: a 0 takes the slow path)."""
    try:
        firsts = bytes(map(itemgetter(0), pieces))
    except IndexError:
        return None
    if firsts.translate(None, b"123456789"):
        return None  # a counter that is 0, has a leading zero, or is missing
    after = list(map(bytes.lstrip, pieces, repeat(b"0123456789")))
    rest = list(map(itemgetter(slice(len(sep), None)), after))
    if b"".join(after) != sep + sep.join(rest):
        return None
    return (), rest


def _cut_left(
    pieces: Sequence[bytes], sep: bytes
) -> tuple[Sequence[bytes], Sequence[bytes]] | None:
    """Each piece as (hole, rest) around ``sep``, found by its first byte (which the
    hole cannot hold), or ``None`` if some piece is not hole + sep + rest."""
    first, more = sep[:1], sep[1:]
    holes, seps, after = zip(*map(bytes.partition, pieces, repeat(first)), strict=True)
    if seps.count(first) != len(pieces):
        return None
    rest = list(map(itemgetter(slice(len(more), None)), after))
    if b"".join(after) != more + more.join(rest):
        return None
    return holes, rest


def _cut_right(
    pieces: Sequence[bytes], sep: bytes
) -> tuple[Sequence[bytes], Sequence[bytes]] | None:
    """Each piece as (rest, hole) around ``sep``, found by its last byte (which the
    hole cannot hold), or ``None`` if some piece is not rest + sep + hole."""
    last, more = sep[-1:], sep[:-1]
    before, seps, holes = zip(*map(bytes.rpartition, pieces, repeat(last)), strict=True)
    if seps.count(last) != len(pieces):
        return None
    rest = list(map(itemgetter(slice(None, -len(more) or None)), before))
    if b"".join(before) != more.join(rest) + more:
        return None
    return rest, holes


def decode_bodies(bodies: Sequence[bytes]) -> str | None:
    """The concatenated values of JSON string literals given by their bodies (the bytes
    between the quotes), or ``None`` if one of them is not a valid body."""
    joined = b"".join(bodies)
    if _SPECIAL.search(joined) is None:
        if joined.isascii():
            return joined.decode("ascii")
        try:  # each on its own: a character cut across two events is invalid in both
            return "".join(map(bytes.decode, bodies))
        except UnicodeDecodeError:
            return None
    if _BODIES.fullmatch(b"\x00".join(bodies)) is None:
        return None
    try:
        values = json.loads(b'["' + b'","'.join(bodies) + b'"]')
    except ValueError:  # bad UTF-8
        return None
    return "".join(values)


def learn_template(
    event: bytes, data: dict[str, Any], shape: TextShape, item_id: str
) -> Template | None:
    """A template from one event's bytes (its lines, without the blank line after) and
    its parsed payload, or ``None`` when the holes cannot be placed beyond doubt."""
    spans: list[tuple[int, int, Hole]] = []
    last = shape.text_path[-1]
    if not isinstance(last, str):
        return None
    fields: list[tuple[str, Hole]] = [(last, Hole.TEXT)]
    fields += [(key, kind) for key, kind in shape.ignored.items() if _fits(data.get(key), kind)]
    for key, kind in fields:
        span = _value_span(event, key, kind)
        if span is None:
            return None
        spans.append((*span, kind))
    spans.sort()
    cuts = [0] + [p for start, end, _ in spans for p in (start, end)] + [len(event)]
    constants = [event[cuts[i] : cuts[i + 1]] for i in range(0, len(cuts), 2)]
    inner = constants[1:-1]
    if not all(inner) or any(b"\n\n" in c for c in constants):
        return None  # holes that touch or overlap; an event that is two
    holes = [kind for _, _, kind in spans]
    if Hole.COUNTER in holes[holes.index(Hole.TEXT) :]:
        return None  # counters are cut from the left only
    template = Template(item_id, constants[0], inner, constants[-1], holes)
    expected = _expected_probe(data, shape, fields)
    if expected is None or _parse_probe(template) != expected:
        return None
    return template


def _fits(value: Any, kind: Hole) -> bool:
    if kind is Hole.COUNTER:
        return isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return isinstance(value, str)


def _value_span(event: bytes, key: str, kind: Hole) -> tuple[int, int] | None:
    """Where the value of ``key`` lies (without a string's quotes); the key must occur
    exactly once."""
    marker = re.compile(re.escape(json.dumps(key).encode()) + rb"[ \t]*:[ \t]*")
    found = list(marker.finditer(event))
    if len(found) != 1:
        return None
    at = found[0].end()
    value = (_COUNTER if kind is Hole.COUNTER else _STRING).match(event, at)
    if value is None:
        return None
    return (at, value.end()) if kind is Hole.COUNTER else (at + 1, value.end() - 1)


def _parse_probe(template: Template) -> Any:
    """The payload of the template's event with probe values in its holes."""
    parts = [template.head]
    for kind, sep in zip(template.holes, [*template.inner, template.end], strict=True):
        parts += [_PROBES[kind], sep]
    parser = SseParser()
    events = parser.feed(b"".join(parts)) + parser.close()
    if len(events) != 1:
        return None
    try:
        return json.loads(events[0].data)
    except ValueError:
        return None


def _expected_probe(
    data: dict[str, Any], shape: TextShape, fields: Iterable[tuple[str, Hole]]
) -> Any:
    """``data`` with the probe values where the holes are."""
    expected = json.loads(json.dumps(data))
    node = expected
    try:
        for step in shape.text_path[:-1]:
            node = node[step]
    except (KeyError, IndexError, TypeError):
        return None
    node[shape.text_path[-1]] = _PROBES[Hole.TEXT].decode()
    for key, kind in fields:
        if kind is not Hole.TEXT:
            probe = _PROBES[kind]
            expected[key] = int(probe) if kind is Hole.COUNTER else probe.decode()
    return expected
