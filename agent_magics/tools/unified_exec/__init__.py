"""Running commands for the shell tools.

* :mod:`.manager` — :class:`ProcessManager`, the session's unified exec processes
  (``exec_command`` / ``write_stdin``); ``close()`` at session end, ``kill_all()`` on stop;
* :mod:`.process` — one PTY- or pipe-backed command;
* :mod:`.one_shot` — one-shot runs for ``shell`` / ``shell_command``;
* :mod:`.format` — the exact output texts; :mod:`.command_line` — argv and environment;
* :mod:`.snapshot` — the login shell's snapshot, read once per session.

Approvals, sandbox choice and denial checks are not this package's business: the
runtimes (:mod:`agent_magics.tools.runtimes`) do them and hand it commands to run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_magics.tools.unified_exec.manager import STATE_KEY, ProcessManager

if TYPE_CHECKING:
    from agent_magics.tools.context import SessionServices

__all__ = [
    "STATE_KEY",
    "ProcessManager",
    "close_tool_processes",
    "kill_tool_processes",
    "manager_for",
]


def manager_for(services: SessionServices) -> ProcessManager:
    """The session's process manager (created on first use)."""
    return services.state(STATE_KEY, ProcessManager)


def kill_tool_processes(services: SessionServices) -> None:
    """Kill at once every process the session's shell tools started (SIGKILL)."""
    manager_for(services).kill_all()


async def close_tool_processes(services: SessionServices) -> None:
    """End of the session: SIGTERM the tools' processes, SIGKILL what lingers."""
    await manager_for(services).close()
