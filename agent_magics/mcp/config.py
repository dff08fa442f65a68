"""How one MCP server is started or reached: the ``[mcp_servers.NAME]`` table.

Field names and defaults follow Codex's configuration, so a ``config.toml`` written for
Codex works here. A stdio server gets only a small set of variables from our
environment (:data:`DEFAULT_ENV_VARS`), those its ``env_vars`` names, and its ``env``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator, model_validator

DEFAULT_STARTUP_TIMEOUT_S = 10.0
DEFAULT_TOOL_TIMEOUT_S = 120.0

# What a stdio server inherits from our environment (Codex's list for Unix).
DEFAULT_ENV_VARS = (
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "USER",
    "__CF_USER_TEXT_ENCODING",
    "LANG",
    "LC_ALL",
    "TERM",
    "TMPDIR",
    "TZ",
)

ApprovalMode = Literal["auto", "prompt", "writes", "approve"]


class McpServerConfig(BaseModel):
    """One MCP server: a command to start (stdio) or a URL (streamable HTTP)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    command: str | None = None
    """Program that starts a stdio server."""
    args: tuple[str, ...] = ()
    """Its arguments."""
    env: dict[str, str] = Field(default_factory=dict)
    """Variables set for the server (on top of the few it inherits)."""
    env_vars: tuple[str, ...] = ()
    """Names of our environment variables the server may also see."""
    cwd: Path | None = None
    """Folder the server starts in (default: the session's folder)."""
    url: str | None = None
    """Address of a streamable HTTP server."""
    bearer_token_env_var: str | None = None
    """Environment variable holding a bearer token for the HTTP server."""
    http_headers: dict[str, str] = Field(default_factory=dict)
    """Headers sent to the HTTP server."""
    env_http_headers: dict[str, str] = Field(default_factory=dict)
    """Headers whose values are read from environment variables (header -> variable)."""
    startup_timeout_sec: float = Field(default=DEFAULT_STARTUP_TIMEOUT_S, gt=0)
    """Seconds the server has to start and list its tools."""
    tool_timeout_sec: float = Field(default=DEFAULT_TOOL_TIMEOUT_S, gt=0)
    """Seconds one tool call may take."""
    enabled: bool = True
    """Set false to keep the entry but not start the server."""
    enabled_tools: tuple[str, ...] | None = None
    """Only these tools are offered (all when unset)."""
    disabled_tools: tuple[str, ...] = ()
    """These tools are never offered."""
    default_tools_approval_mode: ApprovalMode = "auto"
    """When a call needs a person: ``auto`` reads the tool's hints (read-only tools run,
    destructive or open-world ones ask), ``prompt`` always asks, ``writes`` asks unless
    the tool says it is read-only, ``approve`` never asks."""

    @field_validator("args", "env_vars", "disabled_tools", mode="before")
    @classmethod
    def _list(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value

    @field_validator("enabled_tools", mode="before")
    @classmethod
    def _opt_list(cls, value: object) -> object:
        return (value,) if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_transport(self) -> McpServerConfig:
        if (self.command is None) == (self.url is None):
            raise ValueError("set exactly one of `command` (stdio) or `url` (streamable HTTP)")
        if self.url is not None and (self.args or self.env or self.env_vars or self.cwd):
            raise ValueError("`args`, `env`, `env_vars` and `cwd` apply to stdio servers only")
        if self.command is not None and (
            self.bearer_token_env_var or self.http_headers or self.env_http_headers
        ):
            raise ValueError("HTTP headers and bearer tokens apply to `url` servers only")
        return self

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    def offers(self, tool: str) -> bool:
        """Whether the tool passes ``enabled_tools`` / ``disabled_tools``."""
        if self.enabled_tools is not None and tool not in self.enabled_tools:
            return False
        return tool not in self.disabled_tools

    def describe(self) -> str:
        """``command arg ...`` or the URL (without credentials or query), for listings."""
        if self.url is not None:
            return safe_url(self.url)
        return " ".join([self.command or "", *self.args])


@cache
def _servers_adapter() -> TypeAdapter[dict[str, McpServerConfig]]:
    return TypeAdapter(dict[str, McpServerConfig])


def validate_servers(value: Any) -> dict[str, McpServerConfig]:
    """The ``[mcp_servers]`` tables of the settings, each checked as a server."""
    return _servers_adapter().validate_python(value)


def server_env(config: McpServerConfig, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a stdio server: the default names and ``env_vars`` copied
    from ``environ`` when set there, then ``env``."""
    environ = os.environ if environ is None else environ
    names = (*DEFAULT_ENV_VARS, *config.env_vars)
    env = {name: environ[name] for name in names if name in environ}
    env.update(config.env)
    return env


def http_headers(
    config: McpServerConfig, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Headers for an HTTP server: static ones, those read from the environment (blank
    values skipped), and ``Authorization: Bearer`` from ``bearer_token_env_var``."""
    environ = os.environ if environ is None else environ
    headers = dict(config.http_headers)
    for header, var in config.env_http_headers.items():
        value = environ.get(var, "")
        if value.strip():
            headers[header] = value
    if config.bearer_token_env_var:
        token = environ.get(config.bearer_token_env_var, "")
        if token.strip():
            headers["Authorization"] = f"Bearer {token}"
    return headers


def safe_url(url: str) -> str:
    """``url`` without credentials, query or fragment (they may hold secrets)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host if port is None else f"{host}:{port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))
