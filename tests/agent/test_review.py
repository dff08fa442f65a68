"""Review mode's core: the prompt for each target from a real git repository, the
reviewer's read-only session against a scripted server (its commands run in the real
read-only sandbox, no patch tool offered), and how a reply is read and laid out (Codex's
findings shape and text layout, so tools that read its reviews read ours)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_magics.agent.review import (
    NO_OUTPUT,
    READ_ONLY_TOOLS,
    REVIEW_INSTRUCTIONS,
    UNCOMMITTED_PROMPT,
    ReviewTarget,
    check_target,
    parse_review,
    review_config,
    review_note,
    review_prompt,
    review_text,
    reviewer,
    run_review,
)
from agent_magics.errors import UserError
from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.git import git
from tests.helpers.sessions import config_for

FINDING = {
    "title": "[P1] Divide by the count of days, not 30",
    "body": "`mean()` divides by 30 for every month, so February is off.",
    "confidence_score": 0.8,
    "priority": 1,
    "code_location": {"absolute_file_path": "/repo/stats.py", "line_range": {"start": 3, "end": 4}},
}
REVIEW = {
    "findings": [FINDING],
    "overall_correctness": "patch is incorrect",
    "overall_explanation": "The new mean is wrong for short months.",
    "overall_confidence_score": 0.7,
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository on ``main`` with one commit, a branch ``feature`` two commits on, and
    an uncommitted change."""
    (repo := tmp_path / "repo").mkdir()
    git(repo, "init", "-q")
    (repo / "stats.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")
    git(repo, "checkout", "-qb", "feature")
    for n in (1, 2):
        (repo / "stats.py").write_text(f"def mean(xs):\n    return sum(xs) / 30  # {n}\n")
        git(repo, "commit", "-qam", f"step {n}")
    (repo / "stats.py").write_text("def mean(xs):\n    return sum(xs) / 31\n")
    return repo


def test_each_target_gets_its_prompt(repo: Path) -> None:
    base = git(repo, "rev-parse", "main")
    assert review_prompt(ReviewTarget("uncommitted"), repo) == UNCOMMITTED_PROMPT
    against = review_prompt(ReviewTarget("base", "main"), repo)
    assert f"Their merge base is {base}: `git diff {base}`" in against
    assert "'main'" in against
    sha = git(repo, "rev-parse", "HEAD")
    commit = review_prompt(ReviewTarget("commit", sha, "step 2"), repo)
    assert f'commit {sha} ("step 2") made (`git show {sha}`)' in commit
    assert review_prompt(ReviewTarget("custom", "  Look at the error handling. "), repo) == (
        "Look at the error handling."
    )
    with pytest.raises(UserError, match="instructions are empty"):
        review_prompt(ReviewTarget("custom", "  "), repo)
    assert ReviewTarget("commit", sha, "step 2").hint() == f"commit {sha[:7]}: step 2"
    assert ReviewTarget("base", "main").hint() == "changes against main"


def test_a_branch_git_cannot_find_is_refused_before_any_request(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="git knows no branch 'nope'"):
        check_target(ReviewTarget("base", "nope"), repo)
    with pytest.raises(UserError, match="git knows no commit 'f00d'"):
        check_target(ReviewTarget("commit", "f00d"), repo)
    (plain := tmp_path / "plain").mkdir()
    with pytest.raises(UserError, match="is not in a git repository"):
        check_target(ReviewTarget("uncommitted"), plain)
    check_target(ReviewTarget("custom", "anything"), plain)  # needs no repository


def test_a_reply_is_read_as_codex_reads_it() -> None:
    assert parse_review(json.dumps(REVIEW)).findings[0].priority == 1
    fenced = parse_review(f"Here it is:\n```json\n{json.dumps(REVIEW)}\n```")
    assert fenced.overall_correctness == "patch is incorrect"
    plain = parse_review("Looks fine to me.")
    assert plain.findings == [] and plain.overall_explanation == "Looks fine to me."
    no_priority = dict(FINDING, priority=None)
    assert parse_review(json.dumps({"findings": [no_priority]})).findings[0].priority is None
    assert review_text(parse_review("")) == NO_OUTPUT


def test_findings_are_laid_out_as_codex_lays_them_out() -> None:
    one = parse_review(json.dumps(REVIEW))
    assert review_text(one) == (
        "The new mean is wrong for short months.\n\n"
        "Review comment:\n\n"
        "- [P1] Divide by the count of days, not 30 — /repo/stats.py:3-4\n"
        "  `mean()` divides by 30 for every month, so February is off."
    )
    two = parse_review(json.dumps(REVIEW | {"findings": [FINDING, FINDING]}))
    assert review_text(two).count("\n- [P1]") == 2
    assert "Full review comments:" in review_text(two)
    note = review_note(ReviewTarget("uncommitted"), one)
    assert note.startswith("<review>\nThe person ran a review of uncommitted changes")
    assert "- [P1] Divide by" in note and note.endswith("</review>")
    assert "stopped before it finished" in review_note(ReviewTarget("uncommitted"), None)


async def test_the_reviewer_reads_with_commands_that_cannot_write(repo: Path) -> None:
    turns = [
        [function_call("exec_command", {"cmd": "git diff"}, "c1")],
        [function_call("exec_command", {"cmd": "touch written.txt"}, "c2")],
        [message(json.dumps(REVIEW))],
    ]
    with ScriptedResponsesServer(turns) as server:
        config = config_for(repo, server.base_url, shell_type="auto", allow_login_shell=False)
        session = reviewer(config)
        try:
            output, text = await run_review(session, ReviewTarget("uncommitted"))
        finally:
            await session.aclose()
    first = server.requests[0]
    assert first["instructions"] == REVIEW_INSTRUCTIONS
    names = {t.get("name") or t.get("type") for t in first["tools"]}
    assert names <= READ_ONLY_TOOLS and {"exec_command", "write_stdin"} <= names
    assert UNCOMMITTED_PROMPT in json.dumps(first["input"])
    assert "-    return sum(xs) / 30  # 2\n+    return sum(xs) / 31" in server.outputs(1)["c1"]
    assert not (repo / "written.txt").exists()  # the read-only sandbox held
    assert "Read-only file system" in server.outputs(2)["c2"]
    assert output.findings[0].title.startswith("[P1]")
    assert text == review_text(output)


def test_the_reviewer_keeps_only_what_reads(tmp_path: Path) -> None:
    config = config_for(
        tmp_path,
        "http://127.0.0.1:9/v1",
        experimental_supported_tools=("read_file", "edit_notebook"),
        approval_policy="untrusted",
        sandbox_mode="danger-full-access",
    )
    settings = review_config(config)
    assert settings.experimental_supported_tools == ("read_file",)
    assert settings.approval_policy == ApprovalPolicy.NEVER
    assert settings.sandbox_mode == SandboxMode.READ_ONLY
    assert settings.apply_patch_tool_type is None and settings.web_search == "disabled"
    assert settings.mcp_servers == {} and settings.instructions == REVIEW_INSTRUCTIONS
    assert (settings.model, settings.base_url) == (config.model, config.base_url)
