"""``agent_magics.ask`` and ``ask_async``: a ``%%agent`` turn called from code, its
final answer returned.

In a kernel they are the kernel's ``%%agent`` cells as a function: the same session
(cells and calls continue one conversation), the same options (they stick as a cell's
do), the transcript shown in the calling cell, and a failed turn raises
:class:`~agent_magics.jupyter.ui.runner.AgentTurnFailed` as a waiting cell does.

Why two functions: code in a notebook cell runs inside the kernel's event loop, on its
thread, so nothing there can block until the turn ends (the turn needs that loop, and
so do the clicks on its cards). A cell waits by awaiting: ``await ask_async(...)`` is
what the input transformer makes of a ``%%agent`` cell, and on ipykernel >= 7.4 the
cell's cards still take clicks meanwhile. Older kernels give a busy cell no clicks, so
there approvals are answered as in a headless run, and the transcript says so.
:func:`ask` blocks, for where no loop runs: a plain script (a session of its own, as
``agent-magics exec`` has, approvals asked on the terminal or, with no terminal,
answered as headless) or terminal IPython (the shell's ``%%agent`` session).
"""

from __future__ import annotations

import asyncio
import atexit
import shlex
import sys
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agent_magics.errors import TurnAborted, UserError

if TYPE_CHECKING:
    import argparse

    from agent_magics.jupyter.magics import AgentMagics, Started

IN_A_LOOP = (
    "agent_magics.ask() cannot wait here: an event loop runs in this thread (in a notebook "
    "cell, the kernel's), and the turn needs it; write answer = await "
    "agent_magics.ask_async(prompt) instead."
)
STOPPED = "The turn was stopped before it answered."
_SCRIPT: list[AgentMagics] = []  # a plain script's one agent (no IPython shell)
_SCRIPT_TURN = threading.Lock()  # a script's turns run on one loop: one at a time


def ask(
    prompt: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    provider: str | None = None,
    approval_policy: str | None = None,
    sandbox: str | None = None,
    web_search: str | None = None,
    cd: str | None = None,
    config: Sequence[str] = (),
    new: bool = False,
) -> str:
    """Run one turn of the agent on ``prompt`` and return its final answer, blocking
    until the turn ends. Where an event loop runs in this thread (a notebook cell) it
    raises and names :func:`ask_async`. The options are ``%%agent``'s (``config``: the
    ``-c KEY=VALUE`` settings; ``new``: start a new conversation). A turn that fails
    raises ``AgentTurnFailed`` with its reason; a stopped one :class:`TurnAborted`."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise UserError(IN_A_LOOP)
    options = _options(locals())
    magics = _magics()
    if magics.shell is not None:  # terminal IPython: asked on its terminal, as its cells
        return _answer(magics.start(_args(magics, options), prompt))
    with _SCRIPT_TURN:  # a script: asked on the terminal if it has one, else headless
        clicks = sys.stdin is not None and sys.stdin.isatty()
        started = magics.start(_args(magics, options), prompt, clicks=clicks)
    return _answer(started)


async def ask_async(
    prompt: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    provider: str | None = None,
    approval_policy: str | None = None,
    sandbox: str | None = None,
    web_search: str | None = None,
    cd: str | None = None,
    config: Sequence[str] = (),
    new: bool = False,
) -> str:
    """:func:`ask` to be awaited: ``answer = await agent_magics.ask_async(prompt)`` in a
    notebook cell, which stays busy until the turn ends and keeps its transcript.
    Outside a kernel the turn runs as :func:`ask` runs it, in a worker thread."""
    options = _options(locals())
    from agent_magics.jupyter.ui.runner import can_block

    magics = _magics()
    kernel = getattr(magics.shell, "kernel", None)
    if kernel is None:
        return await asyncio.to_thread(ask, prompt, **options)
    clicks = can_block(kernel) and not magics.headless_now()
    started = magics.start(_args(magics, options), prompt, clicks=clicks)
    if started is not None:
        await magics.agent.wait(started[0], clicks)
    return _answer(started)


def _options(given: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in given.items() if k != "prompt"}


def _args(magics: AgentMagics, options: dict[str, Any]) -> argparse.Namespace:
    """The options as the ``%%agent`` line would give them, parsed by the magic."""
    words = ["--_awaited"]
    for name in ("model", "base_url", "provider", "approval_policy", "sandbox", "web_search"):
        if options[name] is not None:
            words += [f"--{name.replace('_', '-')}", str(options[name])]
    if options["cd"] is not None:
        words += ["--cd", str(options["cd"])]
    for setting in options["config"]:
        words += ["-c", setting]
    if options["new"]:
        words.append("--new")
    return magics.parse(shlex.join(words))


def _answer(started: Started | None) -> str:
    """The turn's final answer, or the error of how it ended otherwise."""
    from agent_magics.jupyter.ui.runner import AgentTurnFailed
    from agent_magics.jupyter.ui.turn_record import TurnRecorder

    if started is None:  # cannot happen with --_awaited: the magic raises instead
        raise AgentTurnFailed("The turn did not start.")
    record = TurnRecorder("", started[1].state).result()
    if record.status == "failed":
        raise AgentTurnFailed(record.error or "The turn failed.")
    if record.status == "aborted":
        raise TurnAborted(STOPPED)
    return record.text


def _magics() -> AgentMagics:
    """The magics of this IPython shell (the extension loaded if it was not), or of a
    plain script: one of its own, with no shell, kept for the script's later calls."""
    from IPython import get_ipython

    from agent_magics.jupyter.extension import load
    from agent_magics.jupyter.magics import AgentMagics

    shell = get_ipython()
    if shell is not None:
        return load(shell)
    if not _SCRIPT:
        _SCRIPT.append(AgentMagics(None))
        atexit.register(_SCRIPT[0].agent.shutdown)  # its processes, its loop, its clients
    return _SCRIPT[0]
