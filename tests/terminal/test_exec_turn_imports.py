"""What a plain ``agent-magics exec`` turn loads: only what the turn uses.

A real process runs one turn (one ``exec_command``) against the conformance mock server
on 127.0.0.1, then reports the modules it holds and the TLS contexts it built. No
notebook support, no Jupyter front end, no transcript HTML, no model protocol it does
not speak, and no CA bundle read for a plain ``http://`` server (certifi's takes 20-40 ms
to load).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.helpers.conformance import harness, mock_server
from tests.helpers.conformance_replay import EXEC_ARGS, TERMINAL_ENV
from tests.helpers.paths import ROOT

REPORT = """
import gc, json, ssl, sys
from agent_magics.terminal.cli import main
status = main(sys.argv[1:])
contexts = [o for o in gc.get_objects() if isinstance(o, ssl.SSLContext)]
print(json.dumps({"status": status, "modules": sorted(sys.modules),
                  "ca_loaded": [c.cert_store_stats()["x509_ca"] for c in contexts]}))
"""
NOT_IN_A_PLAIN_TURN = (
    "nbformat",
    "agent_magics.jupyter",
    "agent_magics.tools.handlers.read_notebook",
    "agent_magics.tools.handlers.edit_notebook",
    "agent_magics.transcript.html",
    "agent_magics.transcript.export_html",
    "agent_magics.transcript.static_html",
    "agent_magics.models.chat",
    "IPython",
    "ipykernel",
    "ipywidgets",
    "jupyter_client",
)
"""Modules (and packages, with all below them) a plain turn never needs."""


def _inside(module: str, roots: tuple[str, ...]) -> bool:
    return any(module == r or module.startswith(r + ".") for r in roots)


def _plain_turn(tmp_path: Path) -> dict[str, Any]:
    case = {"turns": [[{"call_id": "c1", "name": "exec_command", "arguments": {"cmd": "echo hi"}}]]}
    cfg = dict(harness.DEFAULT_CONFIG)
    ws, home = tmp_path / "ws", tmp_path / "home"
    ws.mkdir()
    home.mkdir()
    turns = harness.build_turns(case, str(ws), cfg)
    server = mock_server.MockResponsesServer(
        harness.make_turn_provider(turns), harness.build_catalog(cfg)
    ).start()
    try:
        prompt = "Run the scripted tool calls."
        argv = harness.candidate_argv(EXEC_ARGS, server.base_url, cfg, prompt)
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("CODEX_", "OPENAI_", "PYTHON")) and k not in TERMINAL_ENV
        }
        env |= {"HOME": str(home), "OPENAI_API_KEY": "test-key", "PYTHONPATH": str(ROOT)}
        done = subprocess.run(
            [sys.executable, "-c", REPORT, *argv],
            cwd=ws,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr[-2000:]
    outputs = harness.collect(case, server.requests, [(str(ws), "{ws}")])["outputs"]
    assert "hi" in outputs["c1"]["output"]
    report: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    assert report["status"] == 0
    return report


def test_a_plain_exec_turn_loads_only_what_it_uses(tmp_path: Path) -> None:
    report = _plain_turn(tmp_path)
    loaded = report["modules"]
    assert "agent_magics.models.responses" in loaded  # the turn did run
    assert [m for m in loaded if _inside(m, NOT_IN_A_PLAIN_TURN)] == []
    assert all(count == 0 for count in report["ca_loaded"]), report["ca_loaded"]
