"""``%agent mcp``: list, add, remove and restart the session's MCP servers.

    %agent mcp                                  list servers: state, tools, why one failed
    %agent mcp add NAME [options] -- CMD ARG..  a stdio server
    %agent mcp add NAME --url URL [options]     a streamable HTTP server
    %agent mcp remove NAME
    %agent mcp restart NAME

Options of ``add``: ``--env KEY=VALUE`` and ``--env-var NAME`` (repeatable), ``--cwd``,
``--startup-timeout S``, ``--tool-timeout S``, ``--approval auto|prompt|writes|approve``,
``--bearer-token-env-var NAME``. Added servers stay for the following cells (``%%agent
--new`` too) until ``remove``, which also disables a server from a config file.

Its parts are pure (parsing, listing, :func:`plan_change`) except :func:`apply_change`,
which brings a running session's servers in line and shows the outcome in the cell.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from agent_magics.config import SessionConfig
from agent_magics.errors import ConfigError, UserError, for_person
from agent_magics.mcp.config import McpServerConfig

if TYPE_CHECKING:
    from agent_magics.agent.session import Session
    from agent_magics.jupyter.ui.controller import Controller

SUBCOMMANDS = ("list", "add", "remove", "restart")


class StatusLike(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def transport(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def tools(self) -> Sequence[str]: ...
    @property
    def log_path(self) -> Path | None: ...
    @property
    def description(self) -> str: ...


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse would exit the kernel
        raise ConfigError(f"%agent mcp add: {message}.")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="%agent mcp add", add_help=False)
    p.add_argument("name")
    p.add_argument("--url")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--env-var", action="append", default=[], metavar="NAME")
    p.add_argument("--cwd")
    p.add_argument("--startup-timeout", type=float)
    p.add_argument("--tool-timeout", type=float)
    p.add_argument("--approval", choices=["auto", "prompt", "writes", "approve"])
    p.add_argument("--bearer-token-env-var")
    return p


def parse_add(words: Sequence[str]) -> tuple[str, dict[str, Any]]:
    """``NAME [options] [--] [COMMAND ARG...]`` as a server name and its config table
    (validated; raises ConfigError with one sentence)."""
    words = list(words)
    if "--" in words:
        at = words.index("--")
        own, command = words[:at], words[at + 1 :]
    else:
        own, command = words, []
    args, rest = _parser().parse_known_args(own)
    command = [*rest, *command]
    table: dict[str, Any] = {}
    if command:
        table["command"], table["args"] = command[0], command[1:]
    if args.url:
        table["url"] = args.url
    env = {}
    for item in args.env:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"%agent mcp add: --env takes KEY=VALUE, got {item!r}.")
        env[key] = value
    optional = {
        "env": env,
        "env_vars": args.env_var,
        "cwd": args.cwd,
        "startup_timeout_sec": args.startup_timeout,
        "tool_timeout_sec": args.tool_timeout,
        "default_tools_approval_mode": args.approval,
        "bearer_token_env_var": args.bearer_token_env_var,
    }
    table |= {k: v for k, v in optional.items() if v}
    try:
        McpServerConfig.model_validate(table)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        raise ConfigError(f"%agent mcp add {args.name}: {err['msg']}.") from None
    return args.name, table


def status_line(status: StatusLike) -> str:
    tools = len(status.tools)
    state = status.state
    if state == "ready":
        state = f"ready, {tools} tool{'' if tools == 1 else 's'}"
    head = f"{status.name:<12} {status.transport:<5} {state:<16} {status.description}"
    lines = [head.rstrip()]
    if status.reason and status.state == "failed":
        lines.append(f"{'':12} {status.reason}")
    if status.log_path is not None and status.state == "failed":
        lines.append(f"{'':12} log: {status.log_path}")
    return "\n".join(lines)


def list_text(statuses: Sequence[StatusLike]) -> str:
    """What ``%agent mcp`` prints."""
    if not statuses:
        return "No MCP servers. Add one with: %agent mcp add NAME -- COMMAND ARG..."
    return "\n".join(status_line(s) for s in statuses)


def configured_text(servers: dict[str, McpServerConfig]) -> str:
    """The listing before any session started: servers start with the first turn."""
    if not servers:
        return list_text([])
    rows = []
    for name, cfg in servers.items():
        state = "not started" if cfg.enabled else "disabled"
        rows.append(f"{name:<12} {cfg.transport:<5} {state:<16} {cfg.describe()}".rstrip())
    return "\n".join(rows)


@dataclass(frozen=True)
class Change:
    """What ``%agent mcp add|remove|restart`` leaves: the session's sticky settings, the
    configuration they give, the server to restart, and the sentence that reports it."""

    sticky: dict[str, Any]
    overrides: list[str]
    config: SessionConfig
    restart: str | None
    done: str


def plan_change(
    sub: str,
    words: list[str],
    sticky: dict[str, Any],
    overrides: list[str],
    build: Callable[[dict[str, Any], list[str]], SessionConfig],
) -> Change:
    """The settings after ``%agent mcp SUB WORDS...`` (``build`` turns sticky settings
    and ``-c`` overrides into a configuration); raises :class:`UserError` when the
    server to restart is not configured."""
    name = words[0]
    servers: dict[str, Any] = dict(sticky.get("mcp_servers") or {})
    if sub == "add":
        name, table = parse_add(words)
        servers[name] = table
        done = f"MCP server '{name}' added"
    elif sub == "remove":
        servers.pop(name, None)
        prefix = f"mcp_servers.{name}."
        overrides = [o for o in overrides if not o.startswith(prefix)]
        if name in build({**sticky, "mcp_servers": servers}, overrides).mcp_servers:
            servers[name] = {"enabled": False}  # from a config file: keep it off
        done = f"MCP server '{name}' removed"
    else:
        done = f"MCP server '{name}' restarted"
    new_sticky = {**sticky, "mcp_servers": servers}
    config = build(new_sticky, overrides)
    if sub == "restart" and name not in config.mcp_servers:
        raise UserError(f"No MCP server named '{name}'.")
    return Change(new_sticky, overrides, config, name if sub == "restart" else None, done)


def apply_change(agent: Controller, session: Session, restart: str | None, done: str) -> None:
    """Bring the session's MCP servers in line with its settings (and restart one),
    showing progress in the cell: a display updated in place when they are up, so
    the cell returns at once and the result still lands in it (also headless)."""

    async def change() -> str:
        await session.sync_mcp_servers()
        if restart is not None:
            if session.mcp is None:
                raise ConfigError(f"There is no MCP server named {restart!r}.")
            await session.mcp.restart(restart)
        return f"{for_person(done)}.\n{list_text(session.mcp_statuses())}"

    agent.in_cell(
        change,
        for_person("starting MCP servers…"),
        for_person("stopped before the MCP servers were up."),
        for_person("MCP servers could not be changed: {}"),
    )
