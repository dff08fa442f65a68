"""The terminal's approval question and one-letter answers (agent-magics exec, IPython)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_magics.protocol.approval import ApprovalRequest, ReviewDecision
from agent_magics.terminal.console import answer, question
from agent_magics.transcript.terminal import Style

EXEC = ApprovalRequest("c", "exec_command", "exec", Path("."), command=("rm", "-r", "build"))
MCP = ApprovalRequest(
    "c",
    "mcp__git__commit",
    "mcp",
    Path("."),
    reason="The MCP tool may change things.",
    server="git",
    mcp_tool="commit",
    arguments='{"message":"x"}',
    remember_allowed=False,
)


PATCH = "*** Begin Patch\n*** Update File: a.py\n@@\n-x = 1\n+x = 2\n*** End Patch\n"
PATCH_REQUEST = ApprovalRequest("c", "apply_patch", "patch", Path("."), patch=PATCH)
SCRIPT = "ls -la && echo 'done here'"
ESCALATED = ApprovalRequest(
    "c",
    "exec_command",
    "exec",
    Path("."),
    command=("/bin/bash", "-lc", SCRIPT),
    reason="list files",
    retry_without_sandbox=True,
)


def test_questions_show_what_would_run_and_the_answers_on_offer() -> None:
    assert question(EXEC) == (
        "\nRun this command?\n  rm -r build\n  in .\n"
        "[y] approve  [a] approve for session  [n] deny  [q] abort turn: "
    )
    assert question(MCP) == (
        '\nThe MCP tool may change things.\n  git · commit {"message":"x"}\n'
        "[y] approve  [n] deny  [q] abort turn: "
    )


def test_a_shell_script_is_asked_about_as_written_and_an_argv_as_a_shell_needs_it() -> None:
    assert question(ESCALATED).splitlines()[1:5] == [
        "Run this command? (it would run without the sandbox)",
        f"  {SCRIPT}",  # not `/bin/bash -lc ls -la && ...`
        "  in .",  # where it runs: a workdir can take it anywhere
        "  Reason: list files",
    ]
    spaced = ApprovalRequest("c", "shell", "exec", Path("."), command=("rm", "my file", "$x"))
    assert question(spaced).splitlines()[2] == "  rm 'my file' '$x'"


def test_a_patch_is_asked_about_with_its_diff_coloured_only_on_a_terminal() -> None:
    plain = question(PATCH_REQUEST)
    assert plain.splitlines()[1:8] == [
        "Apply this patch?",
        "*** Begin Patch",
        "*** Update File: a.py",
        "@@",
        "-x = 1",
        "+x = 2",
        "*** End Patch",
    ]
    assert "\x1b" not in plain
    coloured = question(PATCH_REQUEST, Style(colour=True))
    assert "\x1b[31m-x = 1\x1b[0m" in coloured and "\x1b[32m+x = 2\x1b[0m" in coloured
    # the terminal front end showed the diff when the call came: not twice
    assert question(PATCH_REQUEST, show_patch=False).splitlines()[1:3] == [
        "Apply this patch? (Update a.py, shown above)",
        "[y] approve  [a] approve for session  [n] deny  [q] abort turn: ",
    ]


def test_model_text_in_a_question_cannot_drive_the_terminal() -> None:
    sneaky = ApprovalRequest(
        "c", "exec_command", "exec", Path("."), command=("echo", "hi\x1b]52;c;eA==\x07"),
        reason="\x1b[2Jwhy",
    )  # fmt: skip
    assert "\x1b" not in question(sneaky, Style(colour=True)).replace("\x1b[1m", "").replace(
        "\x1b[0m", ""
    )  # our own bold stays; the model's sequences go


@pytest.mark.parametrize(
    ("request_", "letter", "decision"),
    [
        (EXEC, "y", ReviewDecision.APPROVED),
        (EXEC, " Yes", ReviewDecision.APPROVED),
        (EXEC, "a", ReviewDecision.APPROVED_FOR_SESSION),
        (EXEC, "q", ReviewDecision.ABORT),
        (EXEC, "", ReviewDecision.DENIED),
        (EXEC, "x", ReviewDecision.DENIED),
        (MCP, "a", ReviewDecision.DENIED),  # not on offer for an always-ask tool
        (MCP, "y", ReviewDecision.APPROVED),
    ],
)
def test_answers(request_: ApprovalRequest, letter: str, decision: ReviewDecision) -> None:
    assert answer(request_, letter) is decision


def test_the_folder_a_command_runs_in_is_asked_about_written_out() -> None:
    """A ``workdir`` takes a command anywhere: the question says where, hidden
    characters written out (``run_python``'s code runs in the kernel: no folder)."""
    there = ApprovalRequest(
        "c", "exec_command", "exec", Path("/srv/a\x1b[2Kb"), command=("rm", "-f", "x")
    )
    assert question(there).splitlines()[2:4] == ["  rm -f x", r"  in /srv/a\x1b[2Kb"]
    code = ApprovalRequest("c", "run_python", "exec", Path("/srv"), command=("print(1)",))
    assert " in /srv" not in question(code)
