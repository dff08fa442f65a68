"""``%%agent`` in terminal IPython: no kernel loop, no widgets.

The turn runs on a loop of the magic's own (the same one every cell, so the session's
HTTP client and processes stay usable); approvals are asked on stdin; the transcript is
printed as markdown when the turn ends (see :mod:`agent_magics.terminal.console`). Ctrl-C stops
the turn and its commands.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from IPython.display import display

from agent_magics.jupyter.ui.approver import HEADLESS_NOTES, headless_approver
from agent_magics.jupyter.ui.headless import Markdown, StaticTranscript
from agent_magics.jupyter.ui.throttle import loop_scheduler
from agent_magics.terminal.console import stderr_is_tty, stdin_approver
from agent_magics.transcript.terminal import Style

if TYPE_CHECKING:
    from agent_magics.config import SessionConfig
    from agent_magics.jupyter.ui.approver import HeadlessMode
    from agent_magics.jupyter.ui.controller import Controller


def run_in_terminal(
    agent: Controller,
    config: SessionConfig,
    prompt: str,
    headless: HeadlessMode | None,
    shell: Any = True,
) -> StaticTranscript:
    """One turn to its end on the agent's own loop; the transcript printed at the end
    (not in a plain script, ``shell`` None, where :func:`agent_magics.ask` returns the
    answer instead). Returns the turn's view, which holds how it ended."""
    loop = agent.own_loop()
    note = HEADLESS_NOTES[headless] if headless else None
    view = StaticTranscript(lambda md: None, loop_scheduler(loop), policy_note=note)
    style = Style(stderr_is_tty())
    approver = headless_approver(headless) if headless else stdin_approver(style)
    task: asyncio.Task[Any] = loop.create_task(agent.run_turn(config, prompt, view, approver))
    try:
        loop.run_until_complete(task)
    except KeyboardInterrupt:
        task.cancel()
        loop.run_until_complete(asyncio.wait([task]))
    except asyncio.CancelledError:
        pass
    view.throttle.cancel()
    if shell is not None:
        display(Markdown(view.markdown()))
    return view
