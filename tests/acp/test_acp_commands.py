"""The chat's slash commands and what a turn shows beyond its calls: ``/status``,
``/compact``, ``/undo`` (confirmed, or cancelled), ``/review``; the plan; a sub-agent's
calls nested under the call that spawned it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_magics.agent.review import UNCOMMITTED_PROMPT
from agent_magics.testing import (
    ConversationsServer,
    ScriptedResponsesServer,
    custom_tool_call,
    function_call,
    message,
)
from tests.helpers.acp_client import Chat, agent_env, agent_process, ask
from tests.helpers.agents import agent_call, deciding, outputs, spawned_ids
from tests.helpers.git import git

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]


async def prompts(
    tmp_path: Path, server: Any, chat: Chat, texts: list[str], *args: str
) -> list[Any]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    replies = []
    async with agent_process(chat, agent_env(tmp_path / "home", server), ws, *args) as conn:
        session = await conn.new_session(cwd=str(ws), mcp_servers=[])
        for text in texts:
            replies.append(await ask(conn, chat, session.session_id, text))
    return replies


async def test_status_and_compact_answer_in_the_chat(tmp_path: Path) -> None:
    chat = Chat()
    turns = [[message("hello back")], [message("The person said hello.")]]
    with ScriptedResponsesServer(turns) as model:
        await prompts(tmp_path, model, chat, ["hello", "/status", "/compact"])
    text = chat.text()
    assert "- model: `m`" in text
    assert "- turns: 1" in text
    assert "Compacted the conversation" in text
    assert len(model.requests) == 2


PATCH = "*** Begin Patch\n*** Add File: made.txt\n+new\n*** End Patch\n"


@pytest.mark.parametrize(("answer", "kept"), [("undo", False), ("cancel", True)])
async def test_undo_asks_and_puts_the_files_back(tmp_path: Path, answer: str, kept: bool) -> None:
    chat = Chat([answer])
    turns = [[custom_tool_call("apply_patch", PATCH, "p1")], [message("added")]]
    with ScriptedResponsesServer(turns) as model:
        await prompts(tmp_path, model, chat, ["add a file", "/undo"], "-a", "never")
    [(question, options)] = chat.questions
    assert question.title == "Undo the last turn"
    assert [o.option_id for o in options] == ["undo", "cancel"]
    assert (tmp_path / "ws" / "made.txt").exists() is kept


REVIEW = {
    "findings": [
        {
            "title": "[P1] Divide by the count",
            "body": "Thirty is not the length of every month.",
            "confidence_score": 0.7,
            "priority": 1,
            "code_location": {
                "absolute_file_path": "/repo/stats.py",
                "line_range": {"start": 2, "end": 2},
            },
        }
    ],
    "overall_correctness": "patch is incorrect",
    "overall_explanation": "The mean is wrong.",
    "overall_confidence_score": 0.7,
}


async def test_review_tells_its_findings_and_the_next_turn_knows_them(tmp_path: Path) -> None:
    repo = tmp_path / "ws"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "stats.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "first")
    (repo / "stats.py").write_text("def mean(xs):\n    return sum(xs) / 30\n")
    chat = Chat()
    turns = [[message(json.dumps(REVIEW))], [message("I will fix it.")]]
    with ScriptedResponsesServer(turns) as model:
        await prompts(tmp_path, model, chat, ["/review", "fix the first finding"])
    assert "Divide by the count" in chat.text()
    assert "Divide by the count" in json.dumps(model.requests[1]["input"])
    assert UNCOMMITTED_PROMPT in json.dumps(model.requests[0]["input"])


async def test_the_plan_is_acps_plan(tmp_path: Path) -> None:
    plan = {
        "plan": [
            {"step": "read", "status": "completed"},
            {"step": "write", "status": "in_progress"},
        ]
    }
    chat = Chat()
    with ScriptedResponsesServer(
        [[function_call("update_plan", plan, "u1")], [message("ok")]]
    ) as model:
        await prompts(tmp_path, model, chat, ["plan it"])
    [update] = [u for u in chat.updates if u.session_update == "plan"]
    assert [(e.content, e.status) for e in update.entries] == [
        ("read", "completed"),
        ("write", "in_progress"),
    ]


PARENT, TASK = "Delegate the file.", "Write child.txt in the workspace."


async def test_a_helpers_calls_are_nested_under_its_spawn(tmp_path: Path) -> None:
    def parent(body: dict[str, Any]) -> list[dict[str, Any]]:
        said = outputs(body)
        if "s1" not in said:
            return [agent_call("spawn_agent", {"message": TASK}, "s1")]
        (helper,) = spawned_ids(body, "s1")
        if "w1" not in said:
            return [agent_call("wait_agent", {"targets": [helper]}, "w1")]
        return [message("Done.")]

    scripts: dict[str, Any] = {
        PARENT: deciding(parent),
        TASK: [
            [function_call("exec_command", {"cmd": "touch child.txt"}, "k1")],
            [message("wrote it")],
        ],
    }
    chat = Chat()
    with ConversationsServer(scripts) as server:
        await prompts(tmp_path, server, chat, [PARENT], "-a", "never")
    assert (tmp_path / "ws" / "child.txt").exists()
    starts = [u for u in chat.updates if u.session_update == "tool_call"]
    [nested] = [u for u in starts if u.tool_call_id.endswith("/k1")]
    assert nested.field_meta == {"parentToolCallId": "s1"}
    assert nested.title.startswith("[") and "touch child.txt" in nested.title
    assert chat.text().endswith("Done.")
