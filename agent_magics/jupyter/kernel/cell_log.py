"""The cells a person ran since the agent's last turn: their sources, what they printed,
their values and their errors, each kept within a budget.

What is recorded, through IPython's events and ipykernel's message hooks:

* ``pre_run_cell`` / ``post_run_cell``: the source, the execution count, the value the
  cell showed (its ``text/plain`` form), the error (type, message, last frames). Only the
  person's cells count: those kept in the history (``store_history``), and not the
  ``%%agent`` / ``%agent`` cells (their prompts are already in the conversation).
* ``stream`` messages (print, stderr, warnings, a subprocess's output): ipykernel sends
  them from its IOPub thread, and its output streams keep their hooks per thread, so the
  hook is registered on that thread; a hook on the main thread never fires.
* ``display_data`` messages, through the display publisher's hook (main thread): text
  as text, an image as one line such as ``[image/png output]``.

A message belongs to the cell whose request it answers (its parent ``msg_id``), so what
a cell prints after it ended (a thread, the last flush) still lands in it. The cells
that ran before the log was registered come from IPython's history instead
(:mod:`.earlier_cells`). Memory is
bounded: each cell keeps a head and a tail of its output (:class:`Clip`), at most
:data:`MAX_CELLS` cells are kept, the older ones are only counted.
"""

from __future__ import annotations

import re
import sys
import threading
import traceback
from collections import OrderedDict, deque
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import IPython

from agent_magics.text.inert import terminal_safe

MAX_CELLS = 20
"""Cells kept for the next turn; older ones are only counted."""
OUTPUT_HEAD_CHARS = 1_500
OUTPUT_TAIL_CHARS = 1_500
"""Characters of a cell's output kept from its start and from its end."""
SOURCE_HEAD_CHARS = 3_000
SOURCE_TAIL_CHARS = 1_000
"""Characters of a cell's source kept from its start and from its end."""
ERROR_HEAD_CHARS = 1_000
ERROR_TAIL_CHARS = 1_500
"""Characters of a cell's error (traceback and message) kept from its start and end."""
MAX_TRACEBACK_FRAMES = 4
"""Frames of an error's traceback kept (the innermost ones)."""
MAX_CELL_IDS = 1000
MAX_RAN_CHARS = 200_000
"""Cell ids whose last source is remembered, and the characters kept of each
(:meth:`CellLog.sources_of`): a teacher's policy may withhold a cell whose unsaved
source ran."""
HOOK_TIMEOUT_S = 5.0
"""How long registering a hook on ipykernel's IOPub thread may take."""
AGENT_CELL = re.compile(r"\s*%%?agent(\s|$)")
IMAGE_PREFIX = "image/"
TEXT_TYPES = ("text/plain", "text/markdown")
_IPYTHON_DIR = str(Path(IPython.__file__).parent)


def cut_marker(chars: int) -> str:
    return f"…{chars} chars truncated…"


class Clip:
    """Text kept within a budget as it arrives: the first ``head`` characters and the
    last ``tail`` ones, and how many fell between them."""

    def __init__(self, head: int, tail: int) -> None:
        self.head_budget, self.tail_budget = head, tail
        self.head = ""
        self.tail = ""
        self.cut = 0

    def add(self, text: str) -> None:
        room = self.head_budget - len(self.head)
        if room > 0:
            self.head += text[:room]
            text = text[room:]
        if not text:
            return
        if len(text) >= self.tail_budget:
            self.cut += len(self.tail) + len(text) - self.tail_budget
            self.tail = text[len(text) - self.tail_budget :]
            return
        joined = self.tail + text
        over = len(joined) - self.tail_budget
        if over > 0:
            self.cut += over
            joined = joined[over:]
        self.tail = joined

    def __bool__(self) -> bool:
        return bool(self.head)

    def text(self) -> str:
        middle = f"\n{cut_marker(self.cut)}\n" if self.cut else ""
        return f"{self.head}{middle}{self.tail}"


def clip(text: str, head: int, tail: int) -> Clip:
    kept = Clip(head, tail)
    kept.add(text)
    return kept


@dataclass
class CellRecord:
    """One cell the person ran; ``finished`` once ``post_run_cell`` was seen."""

    source: Clip
    execution_count: int | None = None
    msg_id: str | None = None
    cell_id: str | None = None
    """The notebook cell's id, when the front end sends it (JupyterLab does, nbclient not)."""
    output: Clip = field(default_factory=lambda: Clip(OUTPUT_HEAD_CHARS, OUTPUT_TAIL_CHARS))
    error: Clip | None = None
    finished: bool = False


def error_text(exc: BaseException) -> str:
    """The exception's type and message after its innermost frames, without the frames
    of IPython that ran the cell."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_IPYTHON_DIR):
        tb = tb.tb_next
    limit = -MAX_TRACEBACK_FRAMES
    try:
        lines = traceback.TracebackException(type(exc), exc, tb, limit=limit).format()
        return terminal_safe("".join(lines)).rstrip("\n")
    except Exception:  # a broken __str__ of the exception: name its type at least
        return type(exc).__name__


def display_text(data: dict[str, Any]) -> str:
    """One display output as text: an image as one line, else its text form."""
    for mime in data:
        if mime.startswith(IMAGE_PREFIX):
            return f"[{mime} output]\n"
    for mime in TEXT_TYPES:
        value = data.get(mime)
        if isinstance(value, str):
            return value if value.endswith("\n") else value + "\n"
    kinds = ", ".join(data) or "empty"
    return f"[{kinds} output]\n"


def _on_io_thread(stream: Any, call: Callable[[], Any]) -> None:
    """Run ``call`` on the thread that flushes ``stream`` (ipykernel's IOPub thread),
    waiting for it; on this thread when that one is not running."""
    pub = getattr(stream, "pub_thread", None)
    thread = getattr(pub, "thread", None)
    if pub is None or thread is None or not thread.is_alive():
        call()
        return
    done = threading.Event()

    def run() -> None:
        try:
            call()
        finally:
            done.set()

    pub.schedule(run)
    done.wait(HOOK_TIMEOUT_S)


class CellLog:
    """The cells of ``shell`` that ran since the last :meth:`take`, oldest first."""

    def __init__(self, shell: Any, max_cells: int = MAX_CELLS) -> None:
        self.shell = shell
        self.max_cells = max_cells
        self._lock = threading.Lock()
        self._cells: deque[CellRecord] = deque()
        self._by_msg: dict[str, CellRecord] = {}
        self._dropped = 0
        self._running: dict[int, CellRecord] = {}  # by id of the cell's ExecutionInfo
        self._streams: list[Any] = []
        self._publisher: Any = None
        self._ran: OrderedDict[str, str] = OrderedDict()  # by cell id, kept past take()

    # -- hooks -------------------------------------------------------------------------

    def register(self) -> None:
        """Listen to the shell's cells and to what they print and display."""
        if self.shell is None:
            return
        self.shell.events.register("pre_run_cell", self.pre_run_cell)
        self.shell.events.register("post_run_cell", self.post_run_cell)
        for stream in (sys.stdout, sys.stderr):
            if hasattr(stream, "register_hook") and hasattr(stream, "pub_thread"):
                _on_io_thread(stream, partial(stream.register_hook, self.on_message))
                self._streams.append(stream)
        publisher: Any = getattr(self.shell, "display_pub", None)
        if hasattr(publisher, "register_hook"):
            publisher.register_hook(self.on_message)
            self._publisher = publisher

    def unregister(self) -> None:
        if self.shell is None:
            return
        for name, callback in (
            ("pre_run_cell", self.pre_run_cell),
            ("post_run_cell", self.post_run_cell),
        ):
            if callback in self.shell.events.callbacks[name]:
                self.shell.events.unregister(name, callback)
        for stream in self._streams:
            _on_io_thread(stream, partial(stream.unregister_hook, self.on_message))
        self._streams.clear()
        if self._publisher is not None:
            self._publisher.unregister_hook(self.on_message)
            self._publisher = None

    def add_earlier(self, records: list[CellRecord], dropped: int) -> None:
        """Put first the cells that ran before the log listened (before ``%load_ext``),
        read back from IPython's history (:mod:`.earlier_cells`), and count ``dropped``
        older ones."""
        with self._lock:
            self._cells.extendleft(reversed(records))
            self._dropped += dropped
            while len(self._cells) > self.max_cells:
                self._by_msg.pop(self._cells.popleft().msg_id or "", None)
                self._dropped += 1

    def pre_run_cell(self, info: Any) -> None:
        raw = str(getattr(info, "raw_cell", "") or "")
        if not getattr(info, "store_history", False) or AGENT_CELL.match(raw):
            return  # code a tool runs, or a nested cell: the cell around it goes on
        header = getattr(getattr(self.shell, "display_pub", None), "parent_header", None)
        msg_id = header.get("msg_id") if isinstance(header, dict) else None
        record = CellRecord(clip(raw, SOURCE_HEAD_CHARS, SOURCE_TAIL_CHARS), msg_id=msg_id)
        record.execution_count = getattr(self.shell, "execution_count", None)
        cell_id = getattr(info, "cell_id", None)
        record.cell_id = cell_id if isinstance(cell_id, str) and cell_id else None
        with self._lock:
            if record.cell_id is not None:
                self._ran[record.cell_id] = raw[:MAX_RAN_CHARS]
                self._ran.move_to_end(record.cell_id)
                while len(self._ran) > MAX_CELL_IDS:
                    self._ran.popitem(last=False)
            self._cells.append(record)
            if msg_id:
                self._by_msg[msg_id] = record
            while len(self._cells) > self.max_cells:
                old = self._cells.popleft()
                self._by_msg.pop(old.msg_id or "", None)
                self._running = {k: v for k, v in self._running.items() if v is not old}
                self._dropped += 1
            self._running[id(info)] = record

    def post_run_cell(self, result: Any) -> None:
        with self._lock:
            record = self._running.pop(id(getattr(result, "info", None)), None)
        if record is None:
            return
        for stream in self._streams:
            stream.flush()  # what the cell printed lands before its value
        error = getattr(result, "error_before_exec", None) or getattr(result, "error_in_exec", None)
        value = getattr(result, "result", None)
        shown = self.plain(value) if value is not None and error is None else None
        with self._lock:
            record.execution_count = getattr(result, "execution_count", record.execution_count)
            if shown is not None:
                record.output.add(shown if shown.endswith("\n") else shown + "\n")
            if isinstance(error, BaseException):
                record.error = clip(error_text(error), ERROR_HEAD_CHARS, ERROR_TAIL_CHARS)
            record.finished = True

    def plain(self, value: Any) -> str | None:
        """``value`` as a cell shows it (the shell's ``text/plain`` form)."""
        formatter = getattr(getattr(self.shell, "display_formatter", None), "formatters", {})
        plain = formatter.get("text/plain") if isinstance(formatter, dict) else None
        try:
            return str(plain(value)) if plain is not None else repr(value)
        except Exception as exc:  # the person's __repr__ failed; the cell showed that
            return f"[its repr failed: {type(exc).__name__}]"

    def on_message(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The hook of ipykernel's streams and display publisher: note a message's
        text against its cell, and pass the message on unchanged."""
        try:
            kind = msg.get("msg_type")
            if kind not in ("stream", "display_data"):
                return msg
            parent = msg.get("parent_header") or {}
            content = msg.get("content") or {}
            with self._lock:
                record = self._by_msg.get(parent.get("msg_id") or "")
                if record is None:
                    return msg
                if kind == "stream":
                    record.output.add(str(content.get("text", "")))
                else:
                    record.output.add(display_text(content.get("data") or {}))
        except Exception:  # a hook must never lose the person's output
            pass
        return msg

    # -- reading -----------------------------------------------------------------------

    def take(self) -> tuple[list[CellRecord], int]:
        """The finished cells (oldest first) and how many older ones were dropped; they
        are forgotten here, so the next turn does not get them again. A cell still
        running stays for the next turn."""
        with self._lock:
            done = [c for c in self._cells if c.finished]
            dropped, self._dropped = self._dropped, 0
            self._cells = deque(c for c in self._cells if not c.finished)
            for record in done:
                self._by_msg.pop(record.msg_id or "", None)
        return done, dropped

    def sources_of(self, ids: Collection[str]) -> list[str]:
        """The source each cell of ``ids`` last ran (of the cells the front end named
        since the log listened), though the cell is long taken: a frame of that code in
        a later cell's traceback is still that cell's."""
        with self._lock:
            return [source for cell_id, source in self._ran.items() if cell_id in ids]

    def peek(self) -> tuple[list[CellRecord], int]:
        """What :meth:`take` would return, leaving it in place."""
        with self._lock:
            return [c for c in self._cells if c.finished], self._dropped
