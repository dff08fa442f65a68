"""``run_python``: run code in the person's kernel, in their namespace, and see its outputs.

The code runs as an IPython cell (magics, the last expression's value, ``display()``,
top-level ``await``) that is neither numbered nor stored: ``In``, ``Out`` and ``_`` stay
the person's. Names it binds are there for the next cell and the next call. Its outputs
go to the model (text, figures as images; :mod:`.outputs`), never to the person's cell
output area; the card shows them.

Why ``run_cell_async`` awaited here rather than ``run_cell``: the turn is a task on the
kernel's running loop, and ``run_cell`` would hand code with a top-level ``await`` to
``loop.run_until_complete`` on that same running loop, which fails; awaiting
``run_cell_async`` runs synchronous code exactly as ``run_cell`` does and lets an
``await`` in the code suspend on the loop. Either way the main thread is busy while the
code runs, so widget clicks (Abort turn included) wait until it ends: the stop button
(SIGINT) and ``timeout_ms`` are what interrupt it (:mod:`.interrupt`).

Approval
(:func:`~agent_magics.tools.approval.requirement.kernel_approval_requirement`, asked by
:func:`~agent_magics.tools.runtimes.kernel_code.asked_in_kernel`): it
changes the person's state and is not sandboxed (it is their own kernel), so it asks unless the
policy is ``never``; under the ``read-only`` sandbox it never runs without a person's
yes (``never`` refuses it). "Approve for session" covers every later run_python call of
the session, except under ``read-only``, where it covers only the same code again.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from IPython.core import compilerop, interactiveshell
from pydantic import BaseModel

from agent_magics.errors import RespondToModel, TurnAborted
from agent_magics.jupyter.kernel import interrupt
from agent_magics.jupyter.kernel.capture import Entry, captured, run_cell
from agent_magics.jupyter.kernel.interrupt import Interruptible
from agent_magics.jupyter.kernel.outputs import (
    Images,
    answer_content,
    entries_text,
    names_summary,
    namespace_ids,
    short_traceback,
)
from agent_magics.tools.args import decode_call
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.notebook.masking import OutputMask
from agent_magics.tools.runtimes.kernel_code import asked_in_kernel
from agent_magics.tools.spec import FunctionSpec, ToolSpec, number, obj, string

DEFAULT_TIMEOUT_MS = 60_000
MAX_TIMEOUT_MS = 600_000
SESSION_KEY = ("run_python",)  # "Approve for session" covers the tool (read-only: the code)

DESCRIPTION = (
    "Run Python code in the user's live Jupyter kernel, in their namespace: it sees the "
    "variables their cells made, and names it binds stay for their next cells and your next "
    "calls. It runs like a notebook cell (magics, the last expression's value is shown, "
    "display() works, figures come back as images). It runs in the user's own kernel, "
    "outside the sandbox, and blocks the kernel while it runs: keep it short, and do not "
    "use it for shell commands."
)
CODE = "The Python code to run, as the text of one notebook cell."
TIMEOUT = (
    f"Interrupt the code (KeyboardInterrupt) after this many milliseconds "
    f"(default {DEFAULT_TIMEOUT_MS}, at most {MAX_TIMEOUT_MS})."
)
REJECTED = "The user did not allow this code to run; nothing ran and no variable changed."
EMPTY_CODE = "code is empty: give the Python code to run"
BAD_TIMEOUT = f"timeout_ms must be between 1 and {MAX_TIMEOUT_MS}"
NOT_IN_KERNEL = "run_python is not available: this session has no IPython shell"

# Frames of the shell's and our own machinery, left out of tracebacks.
HIDDEN_FILES = (interactiveshell.__file__, compilerop.__file__, interrupt.__file__)


class RunPythonArgs(BaseModel):
    code: str
    timeout_ms: float | None = None


class RunPythonHandler:
    """Runs code in ``shell`` (the kernel's InteractiveShell)."""

    name = "run_python"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = False

    def __init__(self, shell: Any, mask: Callable[[], OutputMask | None] = lambda: None) -> None:
        self.shell = shell
        self.mask = mask  # the teacher's withheld answers, masked in what the model reads

    def spec(self, config: ToolsConfig) -> ToolSpec:
        props = {"code": string(CODE), "timeout_ms": number(TIMEOUT)}
        return FunctionSpec(self.name, DESCRIPTION, obj(props, ["code"]))

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        args = decode_call(RunPythonArgs, inv)
        if not args.code.strip():
            raise RespondToModel(EMPTY_CODE)
        timeout_ms = DEFAULT_TIMEOUT_MS if args.timeout_ms is None else args.timeout_ms
        if not 1 <= timeout_ms <= MAX_TIMEOUT_MS:
            raise RespondToModel(BAD_TIMEOUT)
        if self.shell is None:
            raise RespondToModel(NOT_IN_KERNEL)
        turn = inv.turn

        async def run() -> ToolOutput:
            return await self.run(args.code, timeout_ms, turn.supports_images)

        return await asked_in_kernel(inv, self.name, args.code, SESSION_KEY, REJECTED, run)

    async def run(self, code: str, timeout_ms: float, supports_images: bool) -> ToolOutput:
        """Run ``code`` and answer with its outputs; a person's interrupt ends the turn."""
        ran = await run_code(self.shell, code, timeout_ms)
        return ran.answer(self.shell, supports_images, self.mask())


@dataclass
class Ran:
    """What running code in the shell gave: its outputs' entries (:mod:`.capture`), the
    error that ended it, whether the timeout interrupted it, and how long it took."""

    entries: list[Entry]
    error: BaseException | None
    timed_out: bool
    timeout_ms: float
    elapsed: float
    names_before: dict[str, int]

    def status(self) -> str:
        took = f"{self.elapsed:.2f} s"
        if self.timed_out:
            return (
                f"Interrupted: still running after the timeout of {self.timeout_ms:g} ms ({took})."
            )
        if self.error is not None:
            return f"Failed with {type(self.error).__name__} after {took}."
        return f"Ran in {took}."

    def answer(
        self, shell: Any, supports_images: bool, mask: OutputMask | None, head: str = ""
    ) -> ToolOutput:
        """The model's answer: the status (after ``head``), the outputs' text and images
        within their budgets, the error's short traceback and the names bound."""
        images = Images(supports_images)
        body = entries_text(self.entries, images)
        if mask is not None:  # the policy as it reads now, the code may have changed it
            body = mask(body)
        tail = []
        if self.error is not None:
            tail.append("Error:\n" + short_traceback(self.error, HIDDEN_FILES, mask))
        names = names_summary(self.names_before, namespace_ids(shell.user_ns))
        if names:
            tail.append(names)
        status = f"{head}\n{self.status()}" if head else self.status()
        content = answer_content(status, body, "\n".join(tail), images)
        return ToolOutput(content, success=self.error is None)


async def run_code(
    shell: Any,
    code: str,
    timeout_ms: float,
    store_history: bool = False,
    entries: list[Entry] | None = None,
) -> Ran:
    """Run ``code`` in ``shell`` with its outputs captured (into ``entries``, if given:
    read while it runs), interrupted after ``timeout_ms``; a person's interrupt (the
    kernel's stop button) ends the turn."""
    before = namespace_ids(shell.user_ns)
    started = time.monotonic()
    error: BaseException | None = None
    with captured(shell, entries) as gathered:
        guard = Interruptible(timeout_ms / 1000)
        try:
            with guard:
                result = await run_cell(shell, code, store_history)
            error = result.error_before_exec or result.error_in_exec
        except KeyboardInterrupt as exc:  # landed in the shell's machinery, not the code
            error = exc
    elapsed = time.monotonic() - started
    if guard.stopped:
        raise TurnAborted("interrupted")
    return Ran(gathered, error, guard.timed_out, timeout_ms, elapsed, before)
