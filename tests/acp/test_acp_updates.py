"""The fold of our events into ACP updates, and approval questions as permission
requests, as exact objects: events in, the SDK's models out."""

from __future__ import annotations

from pathlib import Path

from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

from agent_magics.acp.permissions import decision, options, question
from agent_magics.acp.updates import AcpUpdates
from agent_magics.events import (
    ApprovalDecided,
    AssistantMessage,
    SandboxUnavailable,
    TextDelta,
    ToolCallFinished,
    ToolCallProposed,
    ToolCallStarted,
    ToolOutputDelta,
    TurnAbortedEvent,
)
from agent_magics.protocol.approval import ApprovalRequest, ReviewDecision

DONE = "Chunk ID: 1\nWall time: 0.0 seconds\nProcess exited with code {code}\nOutput:\n{out}"


def dumped(updates: list) -> list[dict]:
    return [u.model_dump(mode="json", by_alias=True, exclude_none=True) for u in updates]


def test_a_command_is_one_call_from_pending_to_its_exit(tmp_path: Path) -> None:
    fold = AcpUpdates(tmp_path)
    args = '{"cmd": "ls -la"}'
    got = [
        *fold.fold(ToolCallProposed("c1", "exec_command", args)),
        *fold.fold(ToolCallStarted("c1", "exec_command")),
        *fold.fold(ToolOutputDelta("c1", "a\n")),
        *fold.fold(
            ToolCallFinished("c1", "exec_command", DONE.format(code=1, out="a\n"), True, 0.1)
        ),
    ]
    assert dumped(got) == [
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "c1",
            "title": "exec_command: ls -la",
            "kind": "execute",
            "status": "pending",
            "rawInput": {"cmd": "ls -la"},
        },
        {"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "in_progress"},
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "content": [{"type": "content", "content": {"type": "text", "text": "a\n"}}],
        },
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "status": "failed",  # exit code 1
            "content": [{"type": "content", "content": {"type": "text", "text": "a\n"}}],
            "rawOutput": {"output": DONE.format(code=1, out="a\n"), "success": True},
        },
    ]


def test_a_denied_call_fails_and_a_stopped_turn_closes_what_is_open(tmp_path: Path) -> None:
    fold = AcpUpdates(tmp_path)
    fold.fold(ToolCallProposed("c1", "exec_command", '{"cmd": "rm x"}'))
    fold.fold(ApprovalDecided("c1", ReviewDecision.DENIED))
    [ended] = fold.fold(ToolCallFinished("c1", "exec_command", "rejected by user", False, 0.0))
    assert ended.status == "failed"
    fold.fold(ToolCallProposed("c2", "exec_command", '{"cmd": "sleep 9"}'))
    assert dumped(fold.fold(TurnAbortedEvent("interrupted"))) == [
        {"sessionUpdate": "tool_call_update", "toolCallId": "c2", "status": "failed"}
    ]


def test_a_streamed_message_is_not_sent_twice(tmp_path: Path) -> None:
    fold = AcpUpdates(tmp_path)
    chunks = [*fold.fold(TextDelta("m1", "Hel")), *fold.fold(TextDelta("m1", "lo"))]
    assert [u.content.text for u in chunks] == ["Hel", "lo"]
    assert fold.fold(AssistantMessage("Hello")) == []
    [whole] = fold.fold(AssistantMessage("Unstreamed"))
    assert whole.content.text == "Unstreamed"


def test_a_warning_is_a_line_of_the_message(tmp_path: Path) -> None:
    [line] = AcpUpdates(tmp_path).fold(SandboxUnavailable("no bubblewrap"))
    assert line.session_update == "agent_message_chunk"
    assert line.content.text.startswith("\n> ")


REQUEST = ApprovalRequest(
    call_id="c1",
    tool_name="exec_command",
    kind="exec",
    cwd=Path("/ws"),
    command=("touch\u202ex",),
    rule="commands that write ask under untrusted",
    session_scope="this exact command",
)


def test_a_question_shows_exactly_what_runs_and_what_for_session_covers() -> None:
    asked = question(REQUEST, "c1")
    assert asked.title == "Run 'touch<U+202E>x'"  # the bidi control named, not obeyed
    text = asked.content[0].content.text
    assert text.startswith("```\n'touch<U+202E>x'\n```\n")
    assert asked.raw_input["command"] == "'touch<U+202E>x'"
    assert "Why you are asked: commands that write ask under untrusted" in text
    assert [(o.option_id, o.name, o.kind) for o in options(REQUEST)] == [
        ("approved", "Approve", "allow_once"),
        ("approved_for_session", "Approve for session: this exact command", "allow_always"),
        ("denied", "Deny", "reject_once"),
    ]
    once = ApprovalRequest(**{**REQUEST.__dict__, "remember_allowed": False})
    assert [o.kind for o in options(once)] == ["allow_once", "reject_once"]


def test_answers_map_one_to_one_and_a_cancelled_question_aborts() -> None:
    def answered(option: str) -> ReviewDecision:
        chosen = AllowedOutcome(outcome="selected", option_id=option)
        return decision(RequestPermissionResponse(outcome=chosen), options(REQUEST))

    assert answered("approved") is ReviewDecision.APPROVED
    assert answered("approved_for_session") is ReviewDecision.APPROVED_FOR_SESSION
    assert answered("denied") is ReviewDecision.DENIED
    assert answered("made-up") is ReviewDecision.DENIED
    cancelled = RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
    assert decision(cancelled, options(REQUEST)) is ReviewDecision.ABORT
