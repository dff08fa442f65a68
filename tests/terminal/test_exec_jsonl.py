"""``exec --json``'s fold (agent_magics.terminal.jsonl) as exact lines: events in, the
objects of Codex's exec event schema out, for every kind of item it writes. The CLI's
whole run against the recordings of codex exec 0.171 is in test_exec_ci_cli.py."""

from __future__ import annotations

import json
from typing import Any

from agent_magics.events import (
    AgentSpawned,
    AgentStatusChanged,
    ApprovalDecided,
    AssistantMessage,
    ContextCompacted,
    Event,
    GoalUpdated,
    PlanStep,
    PlanUpdated,
    ReasoningSummary,
    RetryScheduled,
    SandboxUnavailable,
    ToolCallFinished,
    ToolCallProposed,
    ToolCallStarted,
    TurnAbortedEvent,
    TurnFinished,
    TurnStarted,
    Usage,
    WebSearched,
)
from agent_magics.protocol.approval import ReviewDecision
from agent_magics.terminal.jsonl import ExecJsonl, json_line
from agent_magics.terminal.jsonl_items import Shell

THREAD = "0199a6c2-0000-7000-8000-000000000001"
CWD = "/ws"
DONE = "Chunk ID: 1\nWall time: 0.0 seconds\nProcess exited with code {code}\nOutput:\n{out}"
RUNNING = "Chunk ID: 1\nWall time: 1.0 seconds\nProcess running with session ID 7\nOutput:\n{out}"


def fold(*events: Event, shell: Shell | None = None) -> list[dict[str, Any]]:
    jsonl = ExecJsonl(THREAD, CWD, shell or Shell("/bin/bash", True))
    return [line for event in events for line in jsonl.fold(event)]


def call(call_id: str, tool: str, arguments: Any, kind: str = "function", **mcp: str) -> Event:
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCallProposed(call_id, tool, raw, kind, **mcp)


def ran(call_id: str, tool: str, output: Any, success: bool = True) -> list[Event]:
    return [ToolCallStarted(call_id, tool), ToolCallFinished(call_id, tool, output, success, 0.1)]


def item(event: str, **fields: Any) -> dict[str, Any]:
    return {"type": f"item.{event}", "item": fields}


def test_a_command_and_an_answer_read_as_codex_writes_them() -> None:
    lines = fold(
        TurnStarted("do it", 1),
        call("c1", "exec_command", {"cmd": "echo hello"}),
        *ran("c1", "exec_command", DONE.format(code=0, out="hello\n")),
        AssistantMessage("done"),
        TurnFinished("done", Usage(95, 3, 5, 1, 100)),
    )
    command = {"id": "item_0", "type": "command_execution", "command": "/bin/bash -lc 'echo hello'"}
    assert lines == [
        {"type": "turn.started"},
        item("started", **command, aggregated_output="", exit_code=None, status="in_progress"),
        item("completed", **command, aggregated_output="hello\n", exit_code=0, status="completed"),
        item("completed", id="item_1", type="agent_message", text="done"),
        {
            "type": "turn.completed",
            "usage": {
                "input_tokens": 95,
                "cached_input_tokens": 3,
                "cache_write_input_tokens": 0,
                "output_tokens": 5,
                "reasoning_output_tokens": 1,
            },
        },
    ]
    assert json_line(lines[-2]) == (
        '{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"done"}}'
    )


def test_a_failing_a_denied_and_a_non_login_command() -> None:
    shell = Shell("/bin/zsh", False)
    lines = fold(
        call("c1", "exec_command", {"cmd": "exit 3"}),
        *ran("c1", "exec_command", DONE.format(code=3, out="")),
        call("c2", "shell", {"command": ["rm", "-rf", "a b"]}),
        ToolCallStarted("c2", "shell"),
        ApprovalDecided("c2", ReviewDecision.DENIED),
        ToolCallFinished("c2", "shell", "exec command rejected by user", False, 0.0),
        shell=shell,
    )
    assert [line["item"] for line in lines if line["type"] == "item.completed"] == [
        {
            "id": "item_0",
            "type": "command_execution",
            "command": "/bin/zsh -c 'exit 3'",
            "aggregated_output": "",
            "exit_code": 3,
            "status": "failed",
        },
        {
            "id": "item_1",
            "type": "command_execution",
            "command": "rm -rf 'a b'",
            "aggregated_output": "",
            "exit_code": None,
            "status": "declined",
        },
    ]


def test_a_command_still_running_ends_with_write_stdin_or_with_the_turn() -> None:
    lines = fold(
        call("c1", "exec_command", {"cmd": "sleep 1; echo one"}),
        *ran("c1", "exec_command", RUNNING.format(out="")),
        call("c2", "write_stdin", {"session_id": 7}),
        *ran("c2", "write_stdin", DONE.format(code=0, out="one\n")),
        call("c3", "exec_command", {"cmd": "sleep 99"}),
        *ran("c3", "exec_command", RUNNING.format(out="zz")),
        TurnFinished("ok"),
    )
    assert [line["type"] for line in lines] == [
        "item.started",
        "item.completed",  # write_stdin saw it exit
        "item.started",
        "item.completed",  # the turn ended with it running: Codex's way
        "turn.completed",
    ]
    first, second = lines[1]["item"], lines[3]["item"]
    assert (first["id"], first["exit_code"], first["status"]) == ("item_0", 0, "completed")
    assert first["aggregated_output"] == "one\n"
    assert (second["id"], second["exit_code"], second["status"]) == ("item_1", None, "completed")
    assert second["aggregated_output"] == "zz"


def test_patches_are_file_changes_with_absolute_paths_whichever_tool_sent_them() -> None:
    patch = (
        "*** Begin Patch\n*** Add File: new.txt\n+x\n*** Update File: src/a.py\n@@\n-a\n+b\n"
        "*** Delete File: old.txt\n*** End Patch"
    )
    heredoc = f"cd sub && apply_patch <<'EOF'\n{patch}\nEOF\n"
    lines = fold(
        call("c1", "apply_patch", patch, "custom"),
        *ran("c1", "apply_patch", "Success."),
        call("c2", "exec_command", {"cmd": heredoc}),
        *ran("c2", "exec_command", "bad hunk", success=False),
    )
    changes = [
        {"path": "/ws/new.txt", "kind": "add"},
        {"path": "/ws/src/a.py", "kind": "update"},
        {"path": "/ws/old.txt", "kind": "delete"},
    ]
    in_sub = [{**c, "path": c["path"].replace("/ws/", "/ws/sub/")} for c in changes]
    assert lines == [
        item("completed", id="item_0", type="file_change", changes=changes, status="completed"),
        item("completed", id="item_1", type="file_change", changes=in_sub, status="failed"),
    ]


def test_mcp_calls_carry_arguments_and_the_result_or_the_error() -> None:
    mcp = {"server": "time", "mcp_tool": "get_time"}
    content = '[{"type":"text","text":"12:00"}]'
    lines = fold(
        call("c1", "mcp__time__get_time", {"tz": "UTC"}, **mcp),
        *ran("c1", "mcp__time__get_time", content),
        call("c2", "mcp__time__get_time", {}, **mcp),
        *ran("c2", "mcp__time__get_time", 'err: "tool call error: server down"', False),
    )
    head = {"type": "mcp_tool_call", "server": "time", "tool": "get_time"}
    assert lines == [
        item("started", id="item_0", **head, arguments={"tz": "UTC"}, result=None, error=None,
             status="in_progress"),
        item("completed", id="item_0", **head, arguments={"tz": "UTC"},
             result={"content": [{"type": "text", "text": "12:00"}], "structured_content": None},
             error=None, status="completed"),
        item("started", id="item_1", **head, arguments={}, result=None, error=None,
             status="in_progress"),
        item("completed", id="item_1", **head, arguments={}, result=None,
             error={"message": "tool call error: server down"}, status="failed"),
    ]  # fmt: skip


def test_a_plan_is_one_todo_list_started_updated_and_completed_at_the_end() -> None:
    first = PlanUpdated("p1", None, [PlanStep("read", "in_progress"), PlanStep("fix", "pending")])
    second = PlanUpdated("p2", None, [PlanStep("read", "completed"), PlanStep("fix", "pending")])
    lines = fold(
        call("p1", "update_plan", {}),
        ToolCallStarted("p1", "update_plan"),
        first,
        ToolCallFinished("p1", "update_plan", "Plan updated", True, 0.0),
        second,
        TurnFinished("ok"),
    )
    todo = [{"text": "read", "completed": False}, {"text": "fix", "completed": False}]
    done = [{"text": "read", "completed": True}, {"text": "fix", "completed": False}]
    assert lines[:3] == [
        item("started", id="item_0", type="todo_list", items=todo),
        item("updated", id="item_0", type="todo_list", items=done),
        item("completed", id="item_0", type="todo_list", items=done),
    ]
    assert lines[3]["type"] == "turn.completed"


def test_reasoning_web_search_and_a_warning() -> None:
    lines = fold(
        ReasoningSummary("Looking at the tests."),
        WebSearched("ws_1", "pytest xdist", "https://example.org"),
        SandboxUnavailable("No sandbox here."),
    )
    search = {"id": "item_1", "type": "web_search", "query": "pytest xdist"}
    action = {"type": "search", "query": "pytest xdist"}
    assert lines == [
        item("completed", id="item_0", type="reasoning", text="Looking at the tests."),
        item("started", **search, action=action),
        item("completed", **search, action=action),
        item("completed", id="item_2", type="error", message="No sandbox here."),
    ]


def test_sub_agents_are_collab_tool_calls() -> None:
    agent = "0199a6c2-0000-7000-8000-00000000000a"
    lines = fold(
        call("s1", "spawn_agent", {"message": "count the tests"}),
        ToolCallStarted("s1", "spawn_agent"),
        AgentSpawned("s1", agent, "Kant", 1, "count the tests"),
        ToolCallFinished("s1", "spawn_agent", "{}", True, 0.0),
        call("w1", "wait_agent", {"targets": [agent]}),
        ToolCallStarted("w1", "wait_agent"),
        AgentStatusChanged(agent, "completed", "42 tests"),
        ToolCallFinished("w1", "wait_agent", "{}", True, 0.0),
    )
    common = {"type": "collab_tool_call", "sender_thread_id": THREAD}
    assert lines == [
        item("started", id="item_0", **common, tool="spawn_agent", receiver_thread_ids=[],
             prompt="count the tests", agents_states={}, status="in_progress"),
        item("completed", id="item_0", **common, tool="spawn_agent", receiver_thread_ids=[agent],
             prompt="count the tests",
             agents_states={agent: {"status": "pending_init", "message": None}},
             status="completed"),
        item("started", id="item_1", **common, tool="wait", receiver_thread_ids=[agent],
             prompt=None, agents_states={}, status="in_progress"),
        item("completed", id="item_1", **common, tool="wait", receiver_thread_ids=[agent],
             prompt=None, agents_states={agent: {"status": "completed", "message": "42 tests"}},
             status="completed"),
    ]  # fmt: skip


def test_our_own_kinds_other_tools_goals_and_a_compaction_that_takes_no_id() -> None:
    lines = fold(
        call("r1", "run_python", {"code": "1 + 1"}),
        *ran("r1", "run_python", "2"),
        ContextCompacted("auto", "mid_turn", 5000, 900, "summary"),
        call("g1", "create_goal", {"objective": "ship"}),
        ToolCallStarted("g1", "create_goal"),
        GoalUpdated("g1", "ship", "active", 1000, 10, 2),
        ToolCallFinished("g1", "create_goal", "{}", True, 0.0),
        AssistantMessage("done"),
    )
    tool = {"id": "item_0", "type": "tool_call", "tool": "run_python"}
    assert lines == [
        item("started", **tool, arguments={"code": "1 + 1"}, output=None, status="in_progress"),
        item("completed", **tool, arguments={"code": "1 + 1"}, output="2", status="completed"),
        {"type": "thread.compacted", "trigger": "auto", "phase": "mid_turn",
         "tokens_before": 5000, "tokens_after": 900},
        item("completed", id="item_1", type="goal", objective="ship", status="active",
             token_budget=1000, tokens_used=10, seconds_used=2),
        item("completed", id="item_2", type="agent_message", text="done"),
    ]  # fmt: skip


def test_a_retry_is_an_error_event_and_a_stopped_turn_fails() -> None:
    jsonl = ExecJsonl(THREAD, CWD)
    assert jsonl.started() == [{"type": "thread.started", "thread_id": THREAD}]
    assert jsonl.fold(RetryScheduled(2, 1.5, "HTTP 502")) == [
        {"type": "error", "message": "Retrying in 1.5 s (attempt 2): HTTP 502"}
    ]
    assert jsonl.fold(TurnAbortedEvent("interrupted")) == [
        {"type": "error", "message": "the turn was interrupted"},
        {"type": "turn.failed", "error": {"message": "the turn was interrupted"}},
    ]
    assert jsonl.failed("The API key was refused.")[-1] == {
        "type": "turn.failed",
        "error": {"message": "The API key was refused."},
    }
