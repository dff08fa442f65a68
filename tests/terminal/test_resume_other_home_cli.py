"""``agent-magics exec --resume`` on a runner whose home is not the one that wrote the
workspace's sessions (issue 34: a fresh CI runner with only the workspace cached), run
through the real CLI with two real homes: ``last`` takes none of them and says how many
are there, why none is taken and how to go on from one on purpose; naming one by its id
then loads its history, and only that."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_magics.store.resume import TAKE_ONE_DELIBERATELY
from agent_magics.testing import ScriptedResponsesServer, message, user_texts

pytestmark = pytest.mark.slow

KEY = "sk-other-home-0123456789"
SESSIONS = 3


def exec_in(tmp_path: Path, home: Path, turns: list[Any], *options: str) -> tuple[Any, Any]:
    """Run one exec turn in ``tmp_path/ws`` with ``home`` as HOME; the server, the result."""
    home.mkdir(exist_ok=True)
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(home), "OPENAI_API_KEY": KEY, "NO_COLOR": ""}
    with ScriptedResponsesServer(turns) as server:
        argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
        argv += ["--base-url", server.base_url, "-m", "m", "-C", str(ws), "-a", "never"]
        argv += ["-c", "allow_login_shell=false", *options, "go on"]
        done = subprocess.run(
            argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    return server, done


def test_sessions_sealed_under_another_home_are_counted_explained_and_taken_only_by_id(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "first-home", tmp_path / "second-home"
    for n in range(SESSIONS):
        _, done = exec_in(tmp_path, first, [[message(f"answer {n}")]])
        assert done.returncode == 0, done.stderr
    folder = tmp_path / "ws" / ".agent_magics" / "sessions"
    ids = sorted(p.stem for p in folder.glob("*.jsonl"))
    assert len(ids) == SESSIONS

    server, done = exec_in(tmp_path, second, [[message("never asked")]], "--resume", "last")
    assert done.returncode != 0 and not server.requests
    said = " ".join(done.stderr.split())
    assert f": {SESSIONS} are there, but all {SESSIONS} are sealed with a key other " in said
    assert "written on another machine or under another home, so not trusted here" in said
    assert TAKE_ONE_DELIBERATELY in said

    # The deliberate way: by its id, the history only, and said so.
    chosen = ids[0]
    server, done = exec_in(tmp_path, second, [[message("went on")]], "--resume", chosen[:8])
    assert done.returncode == 0, done.stderr
    assert done.stdout == "went on\n"
    assert f"Session {chosen} is not yours" in done.stderr
    sent = user_texts(server.requests[0])
    assert sent[-1] == "go on" and sent.count("go on") == 2  # the earlier prompt came back
    told = json.dumps(server.requests[0]["input"])
    assert any(f"answer {n}" in told for n in range(SESSIONS))
