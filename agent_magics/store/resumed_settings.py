"""Which saved settings a resumed session takes, and the lines that say so.

A session file gives its settings only when every line of it carries this user's seal
(:mod:`.resume`). Even then it may tighten the settings in force, never loosen them
(:func:`held_back`): turning approvals off, lifting the sandbox, sending the API key to
another server or starting a program takes the person's word in the run that resumes.
"""

from __future__ import annotations

from typing import Any

from agent_magics.config import SessionConfig
from agent_magics.models.secret import REDACTED
from agent_magics.store.readback import RESUMED_SETTINGS
from agent_magics.teaching.policy import APPROVAL_ORDER, SANDBOX_ORDER


def resumed_settings(saved: dict[str, Any]) -> dict[str, Any]:
    """The settings a session takes from its signed file. An MCP server whose secrets
    were left out when it was saved is not taken (the one configured now stands)."""
    settings = {k: saved[k] for k in RESUMED_SETTINGS if saved.get(k) is not None}
    servers = settings.get("mcp_servers")
    if isinstance(servers, dict):
        settings["mcp_servers"] = {
            name: server
            for name, server in servers.items()
            if isinstance(server, dict) and not _redacted(server)
        }
    return settings


DEFAULTS_IN_FORCE: dict[str, Any] = {
    key: str(SessionConfig.model_fields[key].default)
    for key in ("approval_policy", "sandbox_mode", "base_url")
}
"""What a resume compares a file's settings with when its caller names none."""
HOW = {"approval_policy": "-a", "sandbox_mode": "-s", "base_url": "--base-url", "cwd": "-C"}
WHAT = {
    "approval_policy": "approval policy",
    "sandbox_mode": "sandbox",
    "base_url": "model server",
    "cwd": "working folder",
    "mcp_servers": "MCP server(s)",
}


def _rank(value: Any, order: tuple[Any, ...]) -> int:
    """Where ``value`` stands from strictest to loosest; one not known counts as loosest."""
    names = [str(v) for v in order]
    return names.index(value) if value in names else len(names)


def restorable(
    settings: dict[str, Any], now: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``settings`` without what :func:`held_back` holds back (an MCP server held back is
    left out alone), and what it holds back."""
    held = held_back(settings, now)
    kept = {k: v for k, v in settings.items() if k not in held}
    if "mcp_servers" in held:
        names = set(held["mcp_servers"])
        kept["mcp_servers"] = {n: s for n, s in settings["mcp_servers"].items() if n not in names}
    return kept, held


def held_back(settings: dict[str, Any], now: dict[str, Any]) -> dict[str, Any]:
    """The settings of a file that a resume does not restore over those in force ``now``:
    a looser approval policy or sandbox, another model server, another working folder,
    MCP servers (programs the kernel would start) not configured now. Even a file sealed
    by this user must not turn approvals off, lift the sandbox, send the API key
    elsewhere or start a program without the person saying so in this run: a key that
    leaked would otherwise let a planted file do all of it. Tighter settings are taken."""
    held: dict[str, Any] = {}
    for key, order in (("approval_policy", APPROVAL_ORDER), ("sandbox_mode", SANDBOX_ORDER)):
        saved = settings.get(key)
        if saved is not None and _rank(saved, order) > _rank(now.get(key), order):
            held[key] = saved
    for key in ("base_url", "cwd"):
        if key in settings and settings[key] != now.get(key):
            held[key] = settings[key]
    servers = settings.get("mcp_servers")
    configured = now.get("mcp_servers") or {}
    if isinstance(servers, dict) and (
        new := sorted(n for n, s in servers.items() if configured.get(n) != s)
    ):
        held["mcp_servers"] = new
    return held


def held_line(held: dict[str, Any]) -> str:
    """The one line that says what a resume left out, and how to have it."""
    shown = [
        f"{WHAT[k]} {', '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in held.items()
    ]
    flags = [f"{HOW[k]} {v}" for k, v in held.items() if k in HOW]
    ways = []
    if flags:
        ways.append(
            f"give {' '.join(flags)} again (on the next %%agent cell, or to agent-magics exec)"
        )
    if "mcp_servers" in held:
        ways.append("add the MCP servers again (%agent mcp add, or a config file)")
    return (
        f"Not restored: {'; '.join(shown)} (a saved session may tighten the settings in "
        "force, never loosen them or name another server, folder or program); to use "
        f"them, {'; '.join(ways)}."
    )


def _redacted(server: dict[str, Any]) -> bool:
    tables = (server.get("env") or {}, server.get("http_headers") or {})
    return any(REDACTED in str(v) for table in tables for v in table.values())


def restored_line(settings: dict[str, Any]) -> str | None:
    """The one line that says which approval policy and sandbox a resume brings back
    (none when it brings back neither)."""
    said = [
        f"{WHAT[k]} {settings[k]}" for k in ("approval_policy", "sandbox_mode") if k in settings
    ]
    if not said:
        return None
    return (
        f"Restored the session's latest settings: {', '.join(said)} (options given now still win)."
    )
