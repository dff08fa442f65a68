"""``agent-magics exec review`` through the real CLI, on a real git repository, against a
scripted model on 127.0.0.1: the review as text on stdout (laid out as Codex's), the same
with ``--json`` as events (our ``review`` item with the findings, the text as the
``agent_message``, never the reviewer's raw JSON), ``-o``, the reviewer's read-only
sandbox, and targets git cannot find refused before any request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_magics.agent.review import (
    REVIEW_INSTRUCTIONS,
    UNCOMMITTED_PROMPT,
    parse_review,
    review_text,
)
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.git import git

pytestmark = pytest.mark.slow

REVIEW = {
    "findings": [
        {
            "title": "[P2] Keep the header line",
            "body": "The new `cut` drops the first line of every file.",
            "confidence_score": 0.6,
            "priority": 2,
            "code_location": {
                "absolute_file_path": "/repo/run.sh",
                "line_range": {"start": 1, "end": 1},
            },
        }
    ],
    "overall_correctness": "patch is incorrect",
    "overall_explanation": "One line of output is lost.",
    "overall_confidence_score": 0.6,
}
EXPECTED = review_text(parse_review(json.dumps(REVIEW)))


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (repo := tmp_path / "repo").mkdir()
    git(repo, "init", "-q")
    (repo / "run.sh").write_text("cat data.txt\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")
    (repo / "run.sh").write_text("tail -n +2 data.txt | cut -f1\n")  # uncommitted
    return repo


def review(repo: Path, turns: list[Any], *options: str) -> tuple[Any, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(repo.parent), "OPENAI_API_KEY": "sk-review-0123456789", "NO_COLOR": ""}
    with ScriptedResponsesServer(turns) as server:
        argv = [sys.executable, "-m", "agent_magics", "exec", "review", "--provider", "responses"]
        argv += ["--base-url", server.base_url, "-m", "m", "-C", str(repo)]
        argv += ["-c", "allow_login_shell=false", *options]
        done = subprocess.run(
            argv, env=env, cwd=repo, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
    return server, done


def script() -> list[Any]:
    return [
        [function_call("exec_command", {"cmd": "git diff; touch planted.txt"}, "c1")],
        [message(json.dumps(REVIEW))],
    ]


def test_the_review_is_printed_as_codex_lays_it_out(repo: Path) -> None:
    server, done = review(repo, script(), "--uncommitted", "-o", str(repo.parent / "r.md"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == EXPECTED + "\n"
    assert (repo.parent / "r.md").read_text() == EXPECTED
    first = server.requests[0]
    assert first["instructions"] == REVIEW_INSTRUCTIONS
    assert UNCOMMITTED_PROMPT in json.dumps(first["input"])
    names = {t.get("name") or t.get("type") for t in first["tools"]}
    assert "apply_patch" not in names and "web_search" not in names
    seen = server.outputs(1)["c1"]
    assert "+tail -n +2 data.txt | cut -f1" in seen  # it read the change
    assert "Read-only file system" in seen and not (repo / "planted.txt").exists()
    assert "reviewing uncommitted changes" in done.stderr


def test_json_gives_the_findings_as_an_item_and_the_text_as_the_message(repo: Path) -> None:
    _, done = review(repo, script(), "--uncommitted", "--json")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines()]
    kinds = [(e["type"], e.get("item", {}).get("type")) for e in events]
    assert kinds == [
        ("thread.started", None),
        ("turn.started", None),
        ("item.started", "command_execution"),
        ("item.completed", "command_execution"),
        ("item.completed", "review"),
        ("item.completed", "agent_message"),
        ("turn.completed", None),
    ]
    found = events[4]["item"]
    assert found["findings"][0]["code_location"]["line_range"] == {"start": 1, "end": 1}
    assert found["overall_correctness"] == "patch is incorrect"
    assert events[5]["item"]["text"] == EXPECTED
    assert [e["item"]["id"] for e in events if "item" in e] == [
        "item_0", "item_0", "item_1", "item_2",
    ]  # fmt: skip


def test_a_target_git_cannot_find_is_refused_before_any_request(repo: Path) -> None:
    server, done = review(repo, script(), "--base", "nope")
    assert done.returncode == 1
    assert "git knows no branch 'nope'" in done.stderr and not server.requests
    server, done = review(repo, script())
    assert done.returncode == 1 and "Say what to review" in done.stderr
    server, done = review(repo, script(), "--uncommitted", "and this too")
    assert done.returncode == 1 and "not both" in done.stderr


def test_a_commit_is_reviewed_by_its_sha_and_title(repo: Path) -> None:
    sha = git(repo, "rev-parse", "HEAD")
    server, done = review(repo, [[message(json.dumps(REVIEW))]], "--commit", sha)
    assert done.returncode == 0, done.stderr
    assert f'commit {sha} ("first") made (`git show {sha}`)' in json.dumps(
        server.requests[0]["input"]
    ).replace('\\"', '"')
