"""``agent-magics exec`` and web search, end to end: ``--web-search`` and ``-c
web_search=...`` choose the spec of the first request (Codex's values), and a
``web_search_call`` the model server returns shows in the terminal as a card with the
query and the sources."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_magics.testing import ScriptedResponsesServer, message

KEY = "sk-dummy-W3b5Z8k1Q2"
SOURCE = "https://example.org/kernel-messaging"


def run_exec(tmp_path: Path, args: list[str], script: list[object] | None = None) -> tuple:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(tmp_path), "OPENAI_API_KEY": KEY}
    with ScriptedResponsesServer(script) as server:  # type: ignore[arg-type]
        argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
        argv += ["--base-url", server.base_url, "-m", "m", "-C", str(tmp_path), *args, "hi"]
        done = subprocess.run(
            argv, env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return server.requests[0]["tools"], done.stdout + done.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ([], [{"type": "web_search", "external_web_access": False}]),
        (["--web-search", "live"], [{"type": "web_search", "external_web_access": True}]),
        (["--web-search", "disabled"], []),
        (["-c", "web_search=disabled"], []),
        (["-s", "danger-full-access"], [{"type": "web_search", "external_web_access": True}]),
    ],
)
def test_the_flag_and_the_setting_choose_the_spec(
    tmp_path: Path, args: list[str], expected: list[dict[str, object]]
) -> None:
    tools, _ = run_exec(tmp_path, args)
    assert [t for t in tools if t.get("type") == "web_search"] == expected


def test_a_bad_value_is_refused_in_one_line(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    argv = [sys.executable, "-m", "agent_magics", "exec", "-c", "web_search=sometimes", "hi"]
    done = subprocess.run(
        argv, env=env | {"HOME": str(tmp_path)}, cwd=tmp_path, capture_output=True,
        text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode != 0
    assert "web_search" in done.stderr and "Traceback" not in done.stderr


def test_the_search_shows_as_a_card(tmp_path: Path) -> None:
    search = {
        "type": "web_search_call",
        "id": "ws_9",
        "status": "completed",
        "action": {
            "type": "search",
            "query": "kernel messaging",
            "sources": [{"type": "url", "url": SOURCE, "title": "Messaging"}],
        },
    }
    _, shown = run_exec(tmp_path, [], [[search, message("found it")]])
    assert "web_search" in shown and "kernel messaging" in shown
    assert f"{SOURCE} (Messaging)" in shown
    assert "found it" in shown
