"""SessionConfig: every setting of a session, frozen, built from defaults, files, env and flags.

Precedence, lowest first: built-in defaults, ``~/.agent_magics/config.toml``,
``./.agent_magics/config.toml`` (only once the user trusts it, see :mod:`.trust`),
environment variables, front-end options (traitlets, command-line flags), then
``-c key=value`` overrides. The API key is a secret: it is never printed, dumped or saved.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
)

from agent_magics.errors import ConfigError
from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode
from agent_magics.tools.config import EXPERIMENTAL_TOOLS, ToolsConfig, WebSearchMode
from agent_magics.tools.truncate import TruncationPolicy
from agent_magics.trust import CONFIG_DIR as CONFIG_DIR
from agent_magics.trust import CONFIG_FILE as CONFIG_FILE
from agent_magics.trust import TRUST_TABLE, project_config, read_toml, user_config_file

DEFAULT_MODEL = "gpt-5.1-codex"
DEFAULT_BASE_URL = "https://api.openai.com/v1"

ENV_VARS = {
    "OPENAI_API_KEY": "api_key",
    "OPENAI_BASE_URL": "base_url",
    "AGENT_MAGICS_MODEL": "model",
    "AGENT_MAGICS_PROVIDER": "provider",
    "AGENT_MAGICS_APPROVAL_POLICY": "approval_policy",
    "AGENT_MAGICS_SANDBOX": "sandbox_mode",
    "AGENT_MAGICS_RECORD_PATH": "record_path",
}


def _mcp_servers(value: Any) -> Any:
    """``[mcp_servers]`` checked as servers; the MCP settings model is built only when
    a server is configured."""
    if isinstance(value, dict) and not value:
        return value
    from agent_magics.mcp.config import validate_servers

    return validate_servers(value)


if TYPE_CHECKING:
    from agent_magics.mcp.config import McpServerConfig

    McpServers = dict[str, McpServerConfig]
else:
    McpServers = Annotated[dict[str, Any], BeforeValidator(_mcp_servers)]


class SessionConfig(BaseModel):
    """Settings of one agent session (one conversation)."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_enum_values=False)

    model: str = DEFAULT_MODEL
    """Model name sent with every request."""
    provider: Literal["auto", "responses", "chat", "replay"] = "auto"
    """Wire protocol: the Responses API, Chat Completions, or an offline recording;
    ``auto`` is the Responses API; with neither an API key nor a base URL there is no
    model, and a turn says so in one sentence. The recording plays only as ``replay``."""
    base_url: str = DEFAULT_BASE_URL
    """Where the model server listens (``.../v1``)."""
    api_key: SecretStr | None = Field(default=None, repr=False, exclude=True)
    """The key sent as a bearer token; never shown or saved."""
    approval_policy: ApprovalPolicy = ApprovalPolicy.ON_REQUEST
    """When a person is asked before a tool runs."""
    sandbox_mode: SandboxMode = SandboxMode.WORKSPACE_WRITE
    """What commands may write and reach."""
    sandbox_limit: str | None = Field(default=None, exclude=True)
    """Set by a teacher's ``max_sandbox`` (not a setting to choose): the policy's words
    ("The teacher's policy (...) allows sandbox up to read-only"). While set, no command
    or patch of the agent or its helpers runs outside the sandbox: an escalation, a retry
    without the sandbox and a machine with no sandbox are refused with these words."""
    approver: Literal["notebook", "terminal", "chat", "deny", "approve"] = Field(
        default="notebook", exclude=True
    )
    """Set by the front end (not a setting to choose or save): who answers approval
    questions, a person at the notebook's cards, at a terminal or in a chat panel (ACP),
    or, in a run nobody watches, a standing answer that denies or approves each; the
    model is told which."""
    cwd: Path = Field(default_factory=Path.cwd)
    """The folder the agent works in."""
    apply_patch_tool_type: Literal["freeform", "function"] | None = "freeform"
    """apply_patch as a grammar-constrained freeform tool, a JSON function, or absent."""
    experimental_supported_tools: tuple[str, ...] = ()
    """Opt-in file tools: any of read_file, list_dir, grep_files, read_notebook, edit_notebook."""
    shell_type: Literal["auto", "unified_exec", "shell_command", "shell", "disabled"] = "auto"
    """Shell tool flavour; ``auto`` picks exec_command, or shell_command with the file tools."""
    allow_login_shell: bool = True
    """Whether commands may run in login shells."""
    shell_snapshot: bool = True
    """Read the login profile once per session and reuse it, instead of once per command."""
    instructions: str | None = None
    """Replaces the built-in system instructions when set."""
    tool_output_token_limit: int | None = None
    """Budget of tool output kept in history, in tokens (default: 10 000)."""
    parallel_tool_calls: bool = True
    """Let the model emit several tool calls in one response."""
    reasoning_effort: str | None = None
    """Reasoning effort for reasoning models (``low``, ``medium``, ``high``...)."""
    request_max_retries: int = Field(default=4, ge=0, le=100)
    """Re-sends of a request after 5xx, 429 or transport errors."""
    stream_max_retries: int = Field(default=5, ge=0, le=100)
    """Re-sends of a turn's request after a dropped, idle or failed stream."""
    stream_idle_timeout_s: float = Field(default=300.0, gt=0)
    """Seconds without a stream event before the stream counts as dropped."""
    supports_images: bool = True
    """Whether the model takes images (view_image)."""
    web_search: WebSearchMode = "cached"
    """The model server's own web search (Codex's key and values): ``cached`` results
    only, ``live`` pages, or ``disabled``. As in Codex, ``cached`` becomes ``live`` under
    danger-full-access; a Chat Completions server is never offered it."""
    record_path: Path | None = None
    """Record the live session's requests and responses to this JSONL file (no API key)."""
    replay_path: Path | None = None
    """The recording the ``replay`` provider plays (default: the shipped demo)."""
    offline_recording: Path | None = None
    """The recording played when no model is configured (no API key, no base URL of
    one's own): a notebook that teaches runs offline on it and live once a model is set
    (``%agent recording PATH``)."""
    mcp_servers: McpServers = Field(default_factory=dict)
    """MCP servers whose tools the agent gets (``[mcp_servers.NAME]`` tables)."""
    log_dir: Path | None = None
    """Where MCP servers' stderr logs go (default: ``~/.agent_magics/logs``)."""
    sessions_dir: Path | Literal[False] | None = None
    """Where sessions are saved as they run, one JSONL file each (default:
    ``.agent_magics/sessions`` in the working folder; ``false``: not saved)."""
    model_context_window: int | None = Field(default=None, gt=0)
    """The model's context window in tokens (Codex's key). Unset: from the model catalog
    for known models, else asked of the model server (vLLM, llama.cpp, Ollama, LM
    Studio); unknown, nothing compacts until the server says the window is full."""
    model_auto_compact_token_limit: int | None = Field(default=None, gt=0)
    """Compact once a response's ``total_tokens`` reaches this (Codex's key); the limit is
    the smaller of this and 90% of the window."""
    model_post_turn_compact_threshold_percent: int | None = Field(default=None, gt=0, le=100)
    """Also compact right after a turn whose last response used this share of the window
    (Codex's key; off by default)."""
    compact_prompt: str | None = None
    """Replaces the prompt that asks the model for the conversation's summary."""
    remote_compaction: bool | None = None
    """Let the server compact the conversation itself (OpenAI's ``compaction`` item)
    instead of asking the model for a summary; unset, on for OpenAI's own API only."""

    @field_validator("experimental_supported_tools", mode="before")
    @classmethod
    def _split_tools(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        unknown = [v for v in value if v not in EXPERIMENTAL_TOOLS]
        if unknown:
            raise ValueError(f"unknown tools {unknown}; known: {', '.join(EXPERIMENTAL_TOOLS)}")
        return tuple(value)

    @field_validator("cwd", mode="after")
    @classmethod
    def _absolute(cls, value: Path) -> Path:
        return value.expanduser().resolve()

    def tools_config(self) -> ToolsConfig:
        shell = self.shell_type
        if shell == "auto":
            # Codex offered the file tools only with models whose shell tool was
            # shell_command; keep that pairing so recorded sessions replay as they ran.
            shell = "shell_command" if self.experimental_supported_tools else "unified_exec"
        return ToolsConfig(
            shell_type=shell,
            apply_patch_tool_type=self.apply_patch_tool_type,
            experimental_supported_tools=frozenset(self.experimental_supported_tools),
            allow_login_shell=self.allow_login_shell,
            supports_images=self.supports_images,
            web_search=self.web_search_mode(),
        )

    def web_search_mode(self) -> WebSearchMode:
        """The search the session offers: none to a Chat Completions server (it has no
        hosted tools), live where nothing is sandboxed, else as set."""
        if self.provider == "chat" or self.web_search == "disabled":
            return "disabled"
        if self.sandbox_mode == SandboxMode.DANGER_FULL_ACCESS:
            return "live"
        return self.web_search

    def truncation(self) -> TruncationPolicy:
        return TruncationPolicy.tokens(self.tool_output_token_limit or 10_000)

    def key(self) -> str | None:
        return self.api_key.get_secret_value() if self.api_key else None

    def replace(self, **changes: Any) -> SessionConfig:
        return build_config(self.model_dump() | {"api_key": self.key()}, changes)


def parse_override(text: str) -> tuple[str, Any]:
    """``key=value`` with the value read as TOML, else taken as a plain string."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"-c takes key=value, got {text!r}")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key.strip(), value


def _deep_merge(base: dict[str, Any], layer: dict[str, Any]) -> dict[str, Any]:
    """``layer`` over ``base``; tables merge key by key (so one file's
    ``[mcp_servers.a]`` and another's ``[mcp_servers.b]`` both count)."""
    out = dict(base)
    for key, value in layer.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = value
    return out


def _set_dotted(target: dict[str, Any], key: str, value: Any) -> None:
    """``a.b.c = value`` into nested tables, replacing non-table values on the way."""
    parts = key.split(".")
    node = target
    for part in parts[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = {}
        child = dict(child)
        node[part] = child
        node = child
    node[parts[-1]] = value


def load_files(cwd: Path, home: Path | None = None) -> dict[str, Any]:
    """Settings from the user's config.toml and, when the user trusts it, the project's
    (project winning). An untrusted project config is left out: the front ends ask
    about it or say in one line that it was ignored."""
    user_file = user_config_file(home)
    merged = {k: v for k, v in read_toml(user_file).items() if k != TRUST_TABLE}
    project = project_config(cwd, home)
    if project is None or not project.trusted:
        return merged
    if project.problem is not None:
        raise ConfigError(f"Cannot read {project.file}: {project.problem}.")
    return _deep_merge(merged, project.settings)


def from_env(env: dict[str, str] | None = None) -> dict[str, Any]:
    env = dict(os.environ) if env is None else env
    return {field: env[var] for var, field in ENV_VARS.items() if env.get(var)}


SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|AUTHORIZATION|COOKIE", re.IGNORECASE)
"""Names of variables, headers and settings that hold credentials."""


def looks_secret(name: str) -> bool:
    """Whether a variable or header of this name holds a credential."""
    return SECRET_NAME.search(name) is not None


NOT_SETTINGS = frozenset({"sandbox_limit", "approver"})
"""Fields a person does not set: a teacher's policy does (``sandbox_limit``, see
``teaching.bounds.bind``), or the front end (``approver``)."""


def build_config(
    base: dict[str, Any],
    *layers: dict[str, Any],
    overrides: list[str] = (),  # type: ignore[assignment]
) -> SessionConfig:
    """Merge ``base`` and ``layers`` (later wins; ``None`` values skipped) and ``-c`` items."""
    merged = dict(base)
    for layer in layers:
        merged = _deep_merge(merged, {k: v for k, v in layer.items() if v is not None})
    for item in overrides:
        key, value = parse_override(item)
        _set_dotted(merged, key, value)
    unknown = sorted(k for k in merged if k not in SessionConfig.model_fields or k in NOT_SETTINGS)
    if unknown:
        raise ConfigError(f"Unknown setting(s): {', '.join(unknown)}.")
    try:
        return SessionConfig.model_validate(merged)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"]) or "config"
        raise ConfigError(f"Invalid value for {where}: {err['msg']}.") from None


def load_config(
    cwd: Path | None = None,
    options: dict[str, Any] | None = None,
    overrides: list[str] = (),  # type: ignore[assignment]
    env: dict[str, str] | None = None,
    home: Path | None = None,
) -> SessionConfig:
    """The full precedence chain: files < env < options < ``-c`` overrides."""
    options = dict(options or {})
    folder = Path(options.get("cwd") or cwd or Path.cwd())
    files = load_files(folder, home)
    return build_config({"cwd": folder}, files, from_env(env), options, overrides=overrides)
