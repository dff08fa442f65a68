"""The fast path for long runs of text deltas: which parts of a network read a learned
:class:`~agent_magics.models._template.Template` reads, and when a template is learned.

A read whose events all fit the template is read by it as a whole. A read that does not
fit is cut at the events that do not start like the template; runs of those that do are
tried in turn, and everything between them is parsed the usual way, together. Without a
template, the first few events of a read are parsed first and the template is learned
from them, so that the rest of the read can already take the fast path.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import repeat
from typing import Any, ClassVar, Protocol

from agent_magics.models._sse import SseParser
from agent_magics.models._template import Template, TextShape, learn_template

FAST_MIN_BYTES = 4096  # smaller reads parse fast enough the usual way
FAST_MAX_BYTES = 1 << 20  # larger ones (a huge event) too: templates are for small deltas
MIN_RUN = 8  # fewer text deltas in a row are read the usual way
MAX_LEARNS = 16  # per stream: a shape that keeps changing is not worth learning
LEARN_WITHIN = 16  # without a template, the events read first, to learn from
LEARN_FROM_LAST = 4  # events looked at, from the end of a part, for one to learn from


class TextDecoder(Protocol):
    """What the fast path needs of a decoder."""

    text_shape: ClassVar[TextShape | None]

    def plain_text(self, data: dict[str, Any]) -> str | None:
        """The output item ``data`` adds text to, if adding text is all it does."""
        ...


@dataclass(frozen=True)
class TextRun:
    """Text deltas of one item that arrived together, read by a template."""

    item_id: str
    text: str


class FastText:
    """One stream's fast path: cuts each network read into runs of text deltas that fit
    the learned template and parts to read the usual way, and learns the template from
    those parts."""

    def __init__(self, decoder: TextDecoder) -> None:
        self._decoder = decoder
        self._template: Template | None = None
        self._learns = 0
        self.runs = 0
        """How many runs of text were read by a template."""

    def parts(self, region: bytes) -> Iterator[bytes | TextRun]:
        """``region`` (whole events) as runs of text and parts (whole events) to parse,
        in order. The caller must have read each part before it asks for the next: the
        template is learned from what the decoder has read."""
        if not FAST_MIN_BYTES <= len(region) <= FAST_MAX_BYTES:
            yield region
            return
        if self._template is None and self._learns < MAX_LEARNS:
            cut = _after_events(region, LEARN_WITHIN)
            if cut < len(region):
                yield region[:cut]
                self.learn(region[:cut])
                region = region[cut:]
        template = self._template
        if template is None:
            yield region
            self.learn(region)
            return
        text = template.match(region)
        if text is not None:
            self.runs += 1
            yield TextRun(template.item_id, text)
            return
        yield from self._mixed(template, region)

    def _mixed(self, template: Template, region: bytes) -> Iterator[bytes | TextRun]:
        """A read where some events do not fit the template: runs of events that start
        like it are tried as a whole, everything between them is parsed together."""
        events = region[:-2].split(b"\n\n")
        fits = list(map(bytes.startswith, events, repeat(template.head)))
        parsed = start = 0  # events[parsed:start] are still to be parsed
        while start < len(events):
            try:
                start = fits.index(True, start)
            except ValueError:
                break
            try:
                stop = fits.index(False, start)
            except ValueError:
                stop = len(events)
            text = None
            if stop - start >= MIN_RUN:
                text = template.match(b"\n\n".join(events[start:stop]) + b"\n\n")
            if text is not None:
                if parsed < start:
                    yield from self._parse(events[parsed:start])
                self.runs += 1
                yield TextRun(template.item_id, text)
                parsed = stop
            start = stop
        if parsed < len(events):
            yield from self._parse(events[parsed:])

    def _parse(self, events: list[bytes]) -> Iterator[bytes]:
        part = b"\n\n".join(events) + b"\n\n"
        yield part
        if len(part) >= FAST_MIN_BYTES:  # maybe the text of a new item: learn it
            self.learn(part)

    def learn(self, part: bytes) -> None:
        """Called once the decoder has read ``part`` (whole events): the template of the
        last text delta near its end, if there is one."""
        shape = self._decoder.text_shape
        if shape is None or self._learns >= MAX_LEARNS:
            return
        self._learns += 1
        events = part[:-2].rsplit(b"\n\n", LEARN_FROM_LAST)
        for event in reversed(events[1:] if len(events) > LEARN_FROM_LAST else events):
            parser = SseParser()
            parsed = parser.feed(event + b"\n\n")
            if len(parsed) != 1:
                continue
            try:
                data = json.loads(parsed[0].data)
            except ValueError:
                continue
            item_id = self._decoder.plain_text(data) if isinstance(data, dict) else None
            if item_id is not None:
                self._template = learn_template(event, data, shape, item_id) or self._template
                return


def _after_events(region: bytes, count: int) -> int:
    """Where the first ``count`` events of ``region`` end (its length if sooner)."""
    at = 0
    for _ in range(count):
        found = region.find(b"\n\n", at)
        if found < 0:
            return len(region)
        at = found + 2
    return at
