"""Headless runs (nbclient, papermill, nbconvert --execute): a static transcript.

Nobody can click in such runs, and the kernel is shut down after the last cell, so the
turn runs to completion inside its cell and the output is plain markdown, kept in the
saved notebook and readable on GitHub without widget state. A run is headless when the
request that runs the cell has ``allow_stdin`` false, as nbclient sends it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from agent_magics.events import Event, TextDelta, ToolOutputDelta
from agent_magics.jupyter.ui.throttle import MIN_INTERVAL_S, Scheduler, Throttle
from agent_magics.text.inert import terminal_safe
from agent_magics.transcript.markdown import transcript_markdown
from agent_magics.transcript.model import NoticeBlock, Transcript
from agent_magics.transcript.static_html import TranscriptDocument, settle


def request_allows_stdin(shell: Any) -> bool | None:
    """``allow_stdin`` of the request running now; ``None`` outside a kernel."""
    kernel = getattr(shell, "kernel", None)
    if kernel is None:
        return None
    parent: Any = None
    get_parent = getattr(kernel, "get_parent", None)
    if callable(get_parent):
        try:
            parent = get_parent("shell")
        except TypeError:
            parent = get_parent()
    if not parent:
        parent = getattr(shell, "parent_header", None)
    content = parent.get("content") if isinstance(parent, dict) else None
    if not isinstance(content, dict) or "allow_stdin" not in content:
        return None
    return bool(content["allow_stdin"])


class Markdown:
    """A display object with a markdown body and the same text, terminal-safe, as plain
    fallback."""

    def __init__(self, text: str) -> None:
        self.text = text

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        # Terminal IPython prints text/plain: the model's escape sequences must not act there.
        return {"text/markdown": self.text, "text/plain": terminal_safe(self.text)}


class StaticTranscript:
    """An event sink that keeps one markdown display up to date, ~10 updates a second."""

    def __init__(
        self,
        show: Callable[[Markdown], Any],
        schedule: Scheduler,
        *,
        policy_note: str | None = None,
        show_after: Callable[[Any], Any] | None = None,
        interval: float = MIN_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.state = Transcript(policy_note=policy_note)
        self.show_after = show_after  # None: figures stay in the transcript's HTML
        self._finished = False
        self._handle = show(Markdown(self.markdown()))
        self.throttle = Throttle(self._flush, schedule, interval, clock)

    def markdown(self) -> str:
        return transcript_markdown(self.state, self.show_after is not None)

    def __call__(self, event: Event) -> None:
        self.state.apply(event)
        if isinstance(event, (TextDelta, ToolOutputDelta)):
            self.throttle.poke()
        else:
            self.throttle.now()

    def note(self, text: str) -> None:
        self.state.blocks.append(NoticeBlock("info", text))
        self.throttle.now()

    def mark_queued(self) -> None:
        """The turn waits for the previous one to end."""
        self.state.status = "queued"
        self.throttle.now()

    def fail(self, message: str) -> None:
        self.state.fail(message)
        self.throttle.now()

    def finish(self) -> None:
        """The turn is over: the display becomes the static transcript, HTML beside the
        markdown, as an interactive cell's does."""
        settle(self.state)
        self.throttle.cancel()
        self._finished = True
        if self._handle is None:
            return
        document = TranscriptDocument(self.state, self.show_after is not None)
        self._handle.update(document)
        if self.show_after is not None:
            for output in document.after:  # a card's figures below it, then the rest
                self.show_after(output)

    def _flush(self) -> None:
        if self._handle is not None and not self._finished:
            self._handle.update(Markdown(self.markdown()))
