"""Every tool a session can offer can be named in a teacher's policy: a walk over the
tools real sessions offer (each shell tool, the file and notebook tools, the kernel's
tools, MCP resource tools, helpers, goals, web search), each one denied in turn; and a
policy that names the hosted search, the helpers' namespace and the goal tools, read
in a real kernel that then offers none of them to a scripted model on 127.0.0.1."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

from agent_magics.agent.session import Session
from agent_magics.config import SessionConfig
from agent_magics.jupyter.kernel.tools import KernelTools
from agent_magics.teaching.policy import CoursePolicy, parse
from agent_magics.testing import ScriptedResponsesServer, message
from tests.helpers.kernels import KERNEL_PYTHONS, NO_LOGIN, write_kernelspec

FILE_TOOLS = ["grep_files", "read_file", "list_dir", "read_notebook", "edit_notebook"]
SHELLS = ["unified_exec", "shell_command", "shell"]
MCP = {"time": {"command": "python", "args": ["-m", "mcp_server_time"]}}


def session(tmp_path: Path, shell: str, policy: CoursePolicy | None = None) -> Session:
    """A kernel's session that offers every tool there is, under ``policy``."""
    config = SessionConfig(
        cwd=tmp_path,
        shell_type=shell,
        experimental_supported_tools=FILE_TOOLS,
        web_search="live",
        mcp_servers=MCP,
    )
    tools = KernelTools(SimpleNamespace(user_ns={}))
    return Session(config, extra_tools=tools, offers=policy.offers if policy else None)


def offered(s: Session) -> set[str]:
    """The names of the tools ``s`` offers: each spec's, its namespace's tools' too, and
    ``local_shell`` (taken, though never offered) when it takes it."""
    names: set[str] = set()
    for spec in s.registry.wire_specs():
        names.add(str(spec.get("name") or spec["type"]))
        names |= {str(t["name"]) for t in spec.get("tools", [])}  # type: ignore[attr-defined]
    if "local_shell" in s.registry:
        names.add("local_shell")
    return names


@pytest.mark.parametrize("shell", SHELLS)
def test_every_tool_a_session_offers_can_be_denied_by_name(tmp_path: Path, shell: str) -> None:
    every = offered(session(tmp_path, shell))
    expected = {"web_search", "multi_agent_v1", "spawn_agent", "get_goal", "run_python"}
    expected |= {"run_cell"}
    expected |= {"list_mcp_resources", "local_shell", *FILE_TOOLS}
    assert expected <= every
    for name in sorted(every):
        policy = parse({"denied_tools": [name]}, "a test")
        assert policy.problems == (), name
        left = offered(session(tmp_path, shell, policy))
        assert name not in left, name
        if name == "multi_agent_v1":
            assert not {"spawn_agent", "wait_agent"} & left
        assert len(every - left) <= 6, (name, every - left)  # only it, or its namespace


def test_a_policy_names_the_helpers_tools_one_by_one(tmp_path: Path) -> None:
    only = parse({"allowed_tools": ["exec_command", "spawn_agent", "wait_agent"]}, "a test")
    assert offered(session(tmp_path, "unified_exec", only)) == {
        "exec_command", "local_shell", "multi_agent_v1", "spawn_agent", "wait_agent",
    }  # fmt: skip
    denied = parse({"denied_tools": ["spawn_agent"]}, "a test")
    left = offered(session(tmp_path, "unified_exec", denied))
    assert "spawn_agent" not in left and {"multi_agent_v1", "wait_agent"} <= left


@pytest.mark.slow
def test_a_notebook_policy_denying_search_helpers_and_goals_is_read_in_a_kernel(
    home: Path,
) -> None:
    path = home / "course.ipynb"
    denied = ["web_search", "multi_agent_v1", "get_goal", "create_goal", "update_goal"]
    nb = nbformat.v4.new_notebook()
    nb.metadata["agent_magics"] = {"denied_tools": denied}
    with ScriptedResponsesServer([[message("ok")]]) as model:
        cell = f"%%agent --base-url {model.base_url} {NO_LOGIN} --web-search live\ngo"
        nb.cells = [nbformat.v4.new_code_cell(c) for c in ["%load_ext agent_magics", cell]]
        nbformat.write(nb, path)
        client = NotebookClient(
            nb, kernel_name=write_kernelspec(KERNEL_PYTHONS[0].values[0], home / "specs"),
            timeout=120, allow_errors=True, resources={"metadata": {"path": str(home)}},
        )  # fmt: skip
        client.execute(env={**os.environ, "JPY_SESSION_NAME": str(path)})
        (body,) = model.requests
    errors = [o for o in nb.cells[1].outputs if o["output_type"] == "error"]
    assert errors == []
    shown: Any = [o["data"]["text/markdown"] for o in nb.cells[1].outputs if "data" in o]
    assert "no web_search, multi_agent_v1, get_goal, create_goal, update_goal" in shown[-1]
    names = {str(t.get("name") or t.get("type")) for t in body["tools"]}
    assert "exec_command" in names and not names & {*denied, "spawn_agent"}
    assert "web_search" not in json.dumps(body["tools"])


def test_run_python_false_takes_run_cell_away_too(tmp_path: Path) -> None:
    """run_cell runs code in the kernel as run_python does: a policy that keeps the
    kernel's code from running keeps both away."""
    policy = parse({"run_python": False}, "a test")
    left = offered(session(tmp_path, SHELLS[0], policy))
    assert not {"run_python", "run_cell"} & left
    assert {"run_python", "run_cell"} <= offered(session(tmp_path, SHELLS[0]))
