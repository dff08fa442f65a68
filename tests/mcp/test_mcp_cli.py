"""``agent-magics exec`` with an MCP server given on the command line, end to end.

The model is a scripted Responses server on 127.0.0.1; the MCP server is the real
``mcp-server-time`` from PyPI, started over stdio as ``python -m mcp_server_time``
exactly as the README's command line says.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message

pytestmark = pytest.mark.slow  # real sandboxes, servers or CLI runs per case

KEY = "sk-mcp-cli-test-0123456789"
TIME_SERVER = [
    "-c",
    'mcp_servers.time.command="python"',
    "-c",
    'mcp_servers.time.args=["-m","mcp_server_time"]',
]


def run_exec(
    tmp_path: Path, server: ScriptedResponsesServer, *extra: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    # `python` must be the interpreter that has mcp_server_time installed.
    path = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env |= {"HOME": str(tmp_path), "OPENAI_API_KEY": KEY, "PATH": path}
    argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
    argv += ["--base-url", server.base_url, "-m", "m", "-C", str(tmp_path)]
    argv += ["-c", 'shell_type="disabled"', "-c", f"log_dir={json.dumps(str(tmp_path / 'logs'))}"]
    argv += [*TIME_SERVER, *extra, "what time is it in UTC?"]
    return subprocess.run(
        argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip


def test_exec_offers_the_time_tool_and_returns_the_time(tmp_path: Path) -> None:
    call = function_call("mcp__time__get_current_time", {"timezone": "UTC"}, "c1")
    with ScriptedResponsesServer([[call], [message("It is late.")]]) as server:
        done = run_exec(tmp_path, server)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "It is late.\n"
    assert len(server.requests) == 2
    first = server.requests[0]
    names = [t.get("name") or t["type"] for t in first["tools"]]
    assert names[:3] == ["list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"]
    assert "mcp__time__get_current_time" in names
    assert "mcp__time__convert_time" in names
    spec = next(t for t in first["tools"] if t.get("name") == "mcp__time__get_current_time")
    assert spec["strict"] is False
    assert spec["parameters"]["type"] == "object"
    assert spec["parameters"]["required"] == ["timezone"]
    output = server.outputs(1)["c1"]
    answer = json.loads(output)
    assert answer["timezone"] == "UTC"
    assert answer["datetime"].endswith("+00:00")
    assert (tmp_path / "logs" / "mcp-time.log").is_file()


def test_exec_goes_on_when_the_server_cannot_start(tmp_path: Path) -> None:
    call = function_call("list_mcp_resources", {}, "c1")
    with ScriptedResponsesServer([[call], [message("ok")]]) as server:
        done = run_exec(tmp_path, server, "-c", 'mcp_servers.time.command="no-such-mcp-server"')
    assert done.returncode == 0, done.stderr
    first = server.requests[0]
    names = [t.get("name") or t["type"] for t in first["tools"]]
    assert "list_mcp_resources" in names
    assert not any(n.startswith("mcp__") for n in names)
    assert json.loads(server.outputs(1)["c1"]) == {"resources": []}
