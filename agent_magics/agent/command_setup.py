"""What a session sets up for its commands, apart from any turn: the login shell's
snapshot, read once in the background, and what it says once about the sandbox (none
works here, so commands need approval; or what the one that works cannot hold)."""

from __future__ import annotations

import logging
from collections.abc import Callable

from agent_magics.config import SessionConfig
from agent_magics.events import Event, SandboxUnavailable, SandboxWeakness
from agent_magics.tools.context import SessionServices, ShellInfo, TurnContext
from agent_magics.tools.unified_exec.snapshot import startup_notice, sync_shell_snapshot


def start_shell_snapshot(
    services: SessionServices,
    config: SessionConfig,
    shell: ShellInfo,
    redact: Callable[[str], str],
) -> None:
    """Read the login profile once, in the background (``shell_snapshot`` setting)."""
    sync_shell_snapshot(
        services,
        enabled=config.shell_snapshot and config.shell_type != "disabled",
        shell=shell.path,
        shell_kind=shell.kind,
        cwd=config.cwd,
        redact=redact,
        approval=config.approval_policy,
        sandbox=config.sandbox_mode,
    )


def sandbox_notices(turn: TurnContext) -> list[Event]:
    """What to tell the person about the sandbox under this turn's settings, each also
    logged as a warning."""
    from agent_magics.tools.sandbox.platform import unavailable_notice, weakness_notices

    log = logging.getLogger("agent_magics")
    events: list[Event] = []
    notice = unavailable_notice(turn.sandbox_mode)
    if notice is not None:
        log.warning(notice)
        events.append(SandboxUnavailable(notice))
    startup = startup_notice(turn.cwd, turn.approval_policy, turn.sandbox_mode)
    for weakness in [*weakness_notices(turn.sandbox_mode, turn.cwd), *filter(None, [startup])]:
        log.warning(weakness)
        events.append(SandboxWeakness(weakness))
    return events
