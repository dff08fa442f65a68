"""Running code in a person's IPython shell with its outputs kept for the model.

:func:`run_cell` gives the code IPython's cell semantics (magics, the last expression's
value, top-level ``await``) without numbering it: the execution count and the history
(``In``/``Out``/``_``) stay the person's. :func:`captured` swaps the shell's outlets for
the duration -- ``sys.stdout``/``sys.stderr``, the display publisher, the display hook and
the traceback printer -- so nothing lands in the person's cell output area (and
``input()`` fails at once instead of waiting for a keyboard nobody watches); every output
is appended, in the order it happened, to one list of entries:

* ``{"stream": "stdout" | "stderr", "text": str}``
* ``{"data": mimebundle, "metadata": dict, "result": bool}`` (``result``: the value of
  the last expression, as ``Out[n]`` would have shown it)

Figures of matplotlib's inline backend are flushed by the ``post_execute`` event, which
:func:`run_cell` triggers while the capture is still in place.

A display publisher made for a shell registers callbacks in ``shell.events`` (IPython 9:
``pre_execute`` and ``post_execute``) that IPython never removes. The capture removes
whatever its publisher and hook registered when it ends: left there, each call's
publisher, and every output it captured, would live as long as the kernel, and one more
pair of callbacks would run with every later cell.
"""

from __future__ import annotations

import builtins
import io
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from IPython.core.displayhook import CapturingDisplayHook
from IPython.core.displaypub import CapturingDisplayPublisher
from IPython.core.interactiveshell import ExecutionResult

Entry = dict[str, Any]

NO_INPUT = "input() is not available here: the code runs for the agent, with no keyboard"


class _Stream(io.TextIOBase):
    """A text stream whose writes become entries (consecutive writes are joined)."""

    def __init__(self, name: str, entries: list[Entry]) -> None:
        super().__init__()
        self.name = name
        self.entries = entries

    encoding = "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        if text:
            last = self.entries[-1] if self.entries else None
            if last is not None and last.get("stream") == self.name:
                last["text"] += text
            else:
                self.entries.append({"stream": self.name, "text": text})
        return len(text)


class _Hook(CapturingDisplayHook):
    """The display hook of the captured run: the value goes to the entries, not ``Out``."""

    is_active = False
    exec_result: ExecutionResult | None = None

    def __call__(self, result: Any = None) -> None:
        if result is None:
            return
        data, metadata = self.shell.display_formatter.format(result)
        self.outputs.append({"data": data, "metadata": metadata, "result": True})


@contextmanager
def captured(shell: Any, entries: list[Entry] | None = None) -> Iterator[list[Entry]]:
    """Send the shell's outputs to a list of entries (``entries``, else a new one) while
    the block runs."""
    entries = [] if entries is None else entries
    publisher: Any = CapturingDisplayPublisher(shell=shell)  # type: ignore[no-untyped-call]
    publisher.outputs = entries
    hook = _Hook(shell, entries)  # type: ignore[no-untyped-call]
    saved = (sys.stdout, sys.stderr, sys.displayhook)
    saved_input = builtins.input
    saved_pub, saved_hook = shell.display_pub, shell.displayhook
    own_printer = "_showtraceback" in vars(shell)
    saved_printer = vars(shell).get("_showtraceback")
    trap = shell.display_trap
    saved_trap_hook = trap.hook
    try:
        sys.stdout, sys.stderr = _Stream("stdout", entries), _Stream("stderr", entries)
        shell.display_pub, shell.displayhook = publisher, hook
        trap.hook = hook
        sys.displayhook = hook  # also when the trap is already set (a cell awaits the turn)
        # The error is formatted from the exception itself (see outputs.py); the shell's
        # own printer would send it to the person's cell.
        shell._showtraceback = _ignore_traceback
        builtins.input = _no_input
        yield entries
    finally:
        sys.stdout, sys.stderr, sys.displayhook = saved
        builtins.input = saved_input
        shell.display_pub, shell.displayhook = saved_pub, saved_hook
        trap.hook = saved_trap_hook
        if own_printer:
            shell._showtraceback = saved_printer
        else:
            del shell._showtraceback
        _unregister(shell.events, (publisher, hook))


def _unregister(events: Any, owners: tuple[object, ...]) -> None:
    """Remove every callback in ``events`` that is a method of one of ``owners``."""
    for callbacks in events.callbacks.values():
        callbacks[:] = [
            fn for fn in callbacks if not any(getattr(fn, "__self__", None) is o for o in owners)
        ]


def _ignore_traceback(etype: Any, evalue: Any, stb: Any) -> None:
    return None


def _no_input(prompt: object = "") -> str:
    raise EOFError(NO_INPUT)


async def run_cell(shell: Any, code: str, store_history: bool = False) -> ExecutionResult:
    """Run ``code`` as a cell that is not numbered or stored in the history (with
    ``store_history``: numbered and stored, as a cell of the notebook run by the agent).

    Awaited on the running loop (the turn's task): the synchronous parts run right here,
    a top-level ``await`` in the code suspends on this same loop. ``pre_execute`` and
    ``pre_run_cell`` fire inside ``run_cell_async``; ``post_execute`` (figures are
    flushed there) and ``post_run_cell`` fire here, as ``InteractiveShell.run_cell`` and
    ipykernel fire them. The events' ``ExecutionInfo`` has the ``store_history`` given.
    """
    preprocessing_exc = None
    try:
        transformed = shell.transform_cell(code)
    except Exception:
        transformed = code
        preprocessing_exc = sys.exc_info()
    result: ExecutionResult | None = None
    try:
        result = await shell.run_cell_async(
            code,
            store_history=store_history,
            silent=False,
            transformed_cell=transformed,
            preprocessing_exc_tuple=preprocessing_exc,
        )
    finally:
        shell.events.trigger("post_execute")
        if result is not None:
            shell.events.trigger("post_run_cell", result)
    return result
