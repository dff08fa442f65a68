"""Replaying a recorded Codex case through ``agent-magics exec`` in this process.

The end-to-end pass (tests/tools/test_conformance.py) starts one ``python -m agent_magics exec``
per case; most of its time is that interpreter starting. This runs the same command line
through :func:`agent_magics.terminal.cli.main` inside the test process instead, against the same
conformance mock server, with the workspace, home and environment the harness gives the
subprocess, and collects the outputs exactly as the harness does. What is compared with
the golden is the same.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Any

import pytest

from agent_magics.terminal import cli
from tests.helpers.conformance import harness, mock_server

# The command line both passes run, after ``python -m agent_magics``. Session files go to
# the run's home, as Codex keeps its own under CODEX_HOME: the recorded workspaces hold
# only what the tools did. The cases were recorded with Codex's shell snapshot off, so
# ours is off too.
EXEC_ARGS = (
    "exec --base-url {base_url} -m {model} -a never -s danger-full-access "
    "-c apply_patch_tool_type={apply_patch_tool_type} "
    "-c experimental_supported_tools={tools} -c sessions_dir=~/.agent_magics/sessions "
    "-c shell_snapshot=false"
)
# What the harness takes out of the command's environment besides CODEX_* and OPENAI_*.
TERMINAL_ENV = ("TERM", "NO_COLOR", "COLORTERM")
# What the harness leaves next to the workspace: not the tools' doing.
BESIDE_WS = ("codex_home", "home", "catalog.json", "requests.jsonl")


def replay_case(case: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Case ``case`` run by ``cli.main`` in this process: the harness's result
    (outputs, order, workspace) for :func:`compare.compare_case`."""
    cfg = dict(harness.DEFAULT_CONFIG) | (case.get("config") or {})
    root = os.path.realpath(tempfile.mkdtemp(prefix="codexpeer-"))
    ws, codex_home, home = (os.path.join(root, d) for d in ("ws", "codex_home", "home"))
    for folder in (ws, codex_home, home):
        os.makedirs(folder)
    try:
        harness.materialize_files(ws, case.get("files") or {})
        for command in case.get("setup") or []:
            subprocess.run(command, shell=True, cwd=ws, check=True, capture_output=True)
        turns = harness.build_turns(case, ws, cfg)
        server = mock_server.MockResponsesServer(
            harness.make_turn_provider(turns), harness.build_catalog(cfg)
        )
        # Its own start() serves with the default half-second poll, which stop() then
        # waits out: a case's whole run here.
        threading.Thread(target=server.httpd.serve_forever, args=(0.01,), daemon=True).start()
        prompt = case.get("prompt", "Run the scripted tool calls.")
        with monkeypatch.context() as m:
            argv = harness.candidate_argv(EXEC_ARGS, server.base_url, cfg, prompt)
            for key in list(os.environ):
                if key.startswith(("CODEX_", "OPENAI_")) or key in TERMINAL_ENV:
                    m.delenv(key)
            env = {"CODEX_HOME": codex_home, "HOME": home, "LANG": "C.UTF-8"}
            env |= {"LC_ALL": "C.UTF-8", "TZ": "UTC", "OPENAI_API_KEY": "peer-mock-key"}
            for key, value in (env | (case.get("env") or {})).items():
                m.setenv(key, value)
            time.tzset()
            m.chdir(ws)
            try:
                exit_code = cli.main(argv)
            finally:
                server.stop()
        time.tzset()
        repl = [
            (ws, harness.WS_PLACEHOLDER),
            (codex_home, harness.CODEX_HOME_PLACEHOLDER),
            (home, harness.HOME_PLACEHOLDER),
            (root, "{root}"),
        ]
        result: dict[str, Any] = harness.collect(case, server.requests, repl)
        result["codex_exit_code"] = exit_code
        if case.get("capture_workspace", True):
            result["workspace"] = harness.snapshot_tree(ws, BESIDE_WS)
        if case.get("capture_tools"):
            requests = server.requests
            result["tools"] = requests[0]["body"].get("tools") if requests else None
        return result
    finally:
        shutil.rmtree(root, ignore_errors=True)


def exec_command_line(python: str) -> str:
    """The whole command line the end-to-end pass gives the harness."""
    return f"{shlex.quote(python)} -m agent_magics {EXEC_ARGS}"
