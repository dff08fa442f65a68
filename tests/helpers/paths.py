"""Where the tests find the repository and the recorded Codex outputs (one place)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = ROOT / "tests" / "conformance"
"""Recorded Codex outputs and the harness that compares against them (see its README)."""
MCP_SERVERS = ROOT / "tests" / "mcp_servers"
"""The small MCP servers the tests start."""
PACKAGE = ROOT / "agent_magics"
LABEXTENSION = PACKAGE / "jupyter" / "labextension"
"""The JupyterLab extension's TypeScript project (its npm packages are installed in it)."""


def package_modules() -> list[Path]:
    """The package's Python files, in order (not the .py files of npm packages)."""
    return sorted(p for p in PACKAGE.rglob("*.py") if LABEXTENSION not in p.parents)
