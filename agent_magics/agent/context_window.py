"""A session's context window, from its settings, and what the person hears about it.

:mod:`agent_magics.models.context_window` finds a window from plain values (a setting,
the model catalog, the model server); this is where a :class:`SessionConfig` becomes
them, and where the window's two notices are written (:mod:`.window_watch` says them,
once a session, and compacts against the window when it is known).
"""

from __future__ import annotations

import json

from agent_magics.agent.providers import resolve_provider
from agent_magics.config import SessionConfig
from agent_magics.errors import ConfigError
from agent_magics.models.base import ModelRequest
from agent_magics.models.context_window import WindowCache, WindowInfo
from agent_magics.tools.config import EXPERIMENTAL_TOOLS
from agent_magics.tools.truncate import tokens_for_bytes

FIXED_SHARE = 3
"""The fixed part of a request is worth a word once it takes more than 1/3 of the window."""
FROM = {"setting": "model_context_window", "catalog": "the model catalog", "server": "its server"}
FILE_TOOLS = "the experimental file tools (experimental_supported_tools)"
MCP_TOOLS = "the MCP servers' tools (mcp_servers)"
WEB_SEARCH = 'web search (web_search = "disabled")'
SHORTER_INSTRUCTIONS = "shorten your own instructions (instructions)"


def asks_server(config: SessionConfig) -> bool:
    """Whether a live model server answers this session (a recording has no window)."""
    try:
        return resolve_provider(config) != "replay"
    except ConfigError:
        return False


async def session_window(config: SessionConfig, windows: WindowCache) -> WindowInfo:
    """The window of the configured model: the setting, the catalog, else its server."""
    return await windows.resolve(
        config.model,
        config.base_url,
        config.key(),
        setting=config.model_context_window,
        ask_server=asks_server(config),
    )


def unknown_window_text(config: SessionConfig, window: WindowInfo) -> str | None:
    """What to say when a live model's window is unknown, else ``None``."""
    if window.tokens is not None or not asks_server(config):
        return None
    return (
        f"The context window of {config.model} is unknown: the model catalog does not "
        "list it and its server did not say. Nothing is compacted until the server "
        "refuses a request as too long; set model_context_window to the window in "
        "tokens to compact in time."
    )


def fixed_bytes(request: ModelRequest) -> int:
    """The bytes every request repeats: the instructions and the tools' JSON."""
    return _size(request.instructions) + _size(json.dumps(request.tools))


def fixed_part_text(config: SessionConfig, window: WindowInfo, request: ModelRequest) -> str | None:
    """What to say when the instructions and tools take more than a third of a known
    window (tokens estimated as bytes / 4, as Codex does), naming what takes room and
    can be turned off, largest first; else ``None``."""
    if window.tokens is None:
        return None
    tokens = tokens_for_bytes(fixed_bytes(request))
    if tokens * FIXED_SHARE <= window.tokens:
        return None
    text = (
        f"The instructions and tools sent with every request take about {tokens:,} "
        f"tokens, more than a third of the model's {window.tokens:,}-token context window "
        f"(from {FROM.get(window.source, window.source)})"
    )
    tools = _optional_tools(request)
    ways = [f"turn off {_either(tools)}"] if tools else []
    if config.instructions is not None:
        ways.append(SHORTER_INSTRUCTIONS)
    if not ways:
        return f"{text}; a model with a larger window leaves more room for the conversation."
    return f"{text}; to leave more room for the conversation, {' or '.join(ways)}."


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _optional_tools(request: ModelRequest) -> list[str]:
    """The settings whose tools add to the fixed part, by the bytes each adds, most first."""
    sizes: dict[str, int] = {}
    for tool in request.tools:
        name = str(tool.get("name", ""))
        if name in EXPERIMENTAL_TOOLS:
            part = FILE_TOOLS
        elif name.startswith("mcp__"):
            part = MCP_TOOLS
        elif tool.get("type") == "web_search":
            part = WEB_SEARCH
        else:
            continue
        sizes[part] = sizes.get(part, 0) + _size(json.dumps(tool))
    return sorted(sizes, key=lambda part: -sizes[part])


def _either(parts: list[str]) -> str:
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} or {parts[-1]}"
