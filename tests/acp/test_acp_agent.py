"""``agent-magics acp`` driven by the SDK's own client over a real stdio process, against
a scripted model server: commands that ask (allowed once, for the session, denied), a
patch and its diff, a cancel during a long command, a session loaded after the process
restarted, the modes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from agent_magics.testing import ScriptedResponsesServer, custom_tool_call, function_call, message
from tests.helpers.acp_client import WAIT_S, Chat, agent_env, agent_process, ask

pytestmark = pytest.mark.asyncio


def shell(command: str, call_id: str) -> dict[str, object]:
    return function_call("exec_command", {"cmd": command}, call_id)


def say(text: str) -> dict[str, object]:
    return message(text)


async def one_turn(
    tmp_path: Path, turns: list, answers: list[str], mode: str = "untrusted"
) -> tuple[Chat, object, ScriptedResponsesServer]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    chat = Chat(answers)
    with ScriptedResponsesServer(turns) as model:
        async with agent_process(chat, agent_env(tmp_path / "home", model), ws, "-a", mode) as conn:
            session = await conn.new_session(cwd=str(ws), mcp_servers=[])
            reply = await ask(conn, chat, session.session_id, "go")
    return chat, reply, model


async def test_a_command_that_asks_runs_once_approved(tmp_path: Path) -> None:
    turns = [[shell("touch made.txt", "c1")], [say("made it")]]
    chat, reply, _ = await one_turn(tmp_path, turns, ["approved"])
    assert reply.stop_reason == "end_turn"
    assert (tmp_path / "ws" / "made.txt").exists()
    [(call, options)] = chat.questions
    assert "touch made.txt" in call.content[0].content.text
    shown = [u.raw_input for u in chat.calls() if u.session_update == "tool_call_update"]
    assert next(r for r in shown if r)["command"].endswith("bash -c 'touch made.txt'")
    assert [o.kind for o in options] == ["allow_once", "allow_always", "reject_once"]
    assert chat.kinds().count("tool_call") == 1
    assert [u.status for u in chat.calls()][-1] == "completed"
    assert chat.text().endswith("made it")
    assert reply.usage is not None and reply.usage.total_tokens > 0


async def test_approve_for_session_is_not_asked_again(tmp_path: Path) -> None:
    turns = [
        [shell("touch one.txt", "c1")],
        [shell("touch one.txt", "c2")],
        [say("twice")],
    ]
    chat, _, _ = await one_turn(tmp_path, turns, ["approved_for_session"])
    assert len(chat.questions) == 1
    assert [u.status for u in chat.calls() if u.status in ("completed", "failed")] == [
        "completed",
        "completed",
    ]


async def test_a_denied_command_does_not_run_and_the_turn_goes_on(tmp_path: Path) -> None:
    turns = [[shell("touch never.txt", "c1")], [say("understood")]]
    chat, _, model = await one_turn(tmp_path, turns, ["denied"])
    assert not (tmp_path / "ws" / "never.txt").exists()
    assert chat.calls("failed")
    assert "rejected" in json.dumps(model.outputs(1))
    assert chat.text().endswith("understood")


PATCH = "*** Begin Patch\n*** Update File: notes.txt\n-old line\n+new line\n*** End Patch\n"


async def test_a_patch_shows_its_diff_when_asked_and_when_done(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "notes.txt").write_text("old line\n")
    turns = [[custom_tool_call("apply_patch", PATCH, "p1")], [say("patched")]]
    chat, _, _ = await one_turn(tmp_path, turns, ["approved"])
    assert (tmp_path / "ws" / "notes.txt").read_text() == "new line\n"
    [(call, _options)] = chat.questions
    [diff] = [c for c in call.content if c.type == "diff"]
    assert (diff.old_text, diff.new_text) == ("old line\n", "new line\n")
    assert diff.path == str((tmp_path / "ws" / "notes.txt").resolve())
    [done] = chat.calls("completed")
    assert done.content[0].type == "diff"
    [start] = [u for u in chat.updates if u.session_update == "tool_call"]
    assert start.kind == "edit" and start.locations[0].path == diff.path


async def test_cancel_stops_a_long_command_and_its_processes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    turns = [[shell("touch started; sleep 1; touch late", "c1")], [say("never")]]
    chat = Chat()
    with ScriptedResponsesServer(turns) as model:
        async with agent_process(
            chat, agent_env(tmp_path / "home", model), ws, "-a", "never"
        ) as conn:
            session = await conn.new_session(cwd=str(ws), mcp_servers=[])
            prompt = asyncio.ensure_future(
                conn.prompt(session_id=session.session_id, prompt=[{"type": "text", "text": "go"}])
            )
            for _ in range(1200):
                if (ws / "started").exists():
                    break
                await asyncio.sleep(0.05)
            await conn.cancel(session_id=session.session_id)
            reply = await asyncio.wait_for(prompt, WAIT_S)
            await chat.settle()
            assert reply.stop_reason == "cancelled"
            await asyncio.sleep(1.5)  # past the command's sleep: a live one would write
            assert not (ws / "late").exists()
            assert chat.calls("failed")
            assert len(model.requests) == 1  # the turn stopped where it was


async def test_a_session_loads_after_the_process_restarts(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    home = tmp_path / "home"
    turns = [[say("first answer")], [say("second answer")]]
    with ScriptedResponsesServer(turns) as model:
        first = Chat()
        async with agent_process(first, agent_env(home, model), ws) as conn:
            session = await conn.new_session(cwd=str(ws), mcp_servers=[])
            await ask(conn, first, session.session_id, "remember the word lantern")
        second = Chat()
        async with agent_process(second, agent_env(home, model), ws) as conn:
            listed = await conn.list_sessions(cwd=str(ws))
            assert session.session_id in [s.session_id for s in listed.sessions]
            loaded = await conn.load_session(
                cwd=str(ws), session_id=session.session_id, mcp_servers=[]
            )
            assert loaded.modes.current_mode_id == "on-request"
            await second.until(lambda: "first answer" in second.text())
            told = [u for u in second.updates if u.session_update == "user_message_chunk"]
            assert [u.content.text for u in told] == ["remember the word lantern"]
            assert "first answer" in second.text()
            await ask(conn, second, session.session_id, "which word?")
        assert "lantern" in json.dumps(model.requests[-1]["input"])


async def test_modes_are_the_approval_policies(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    turns = [[shell("touch free.txt", "c1")], [say("ok")]]
    chat = Chat()
    with ScriptedResponsesServer(turns) as model:
        async with agent_process(
            chat, agent_env(tmp_path / "home", model), ws, "-a", "untrusted"
        ) as conn:
            session = await conn.new_session(cwd=str(ws), mcp_servers=[])
            assert session.modes.current_mode_id == "untrusted"
            ids = [m.id for m in session.modes.available_modes]
            assert ids == ["untrusted", "on-request", "on-failure", "never"]
            await conn.set_session_mode(session_id=session.session_id, mode_id="never")
            await ask(conn, chat, session.session_id, "go")
    assert chat.questions == []  # never: nothing asks
    assert (ws / "free.txt").exists()
    assert "current_mode_update" in chat.kinds()


async def test_a_session_written_elsewhere_says_so_before_it_is_told(tmp_path: Path) -> None:
    """The chat's client names the session to load (jupyter-ai keeps its id in the
    ``.chat`` file, which a repository may ship beside a session file of its own): what
    the file is worth is said before what it says."""
    ws = tmp_path / "ws"
    ws.mkdir()
    with ScriptedResponsesServer([[say("written elsewhere")]]) as model:
        first = Chat()
        async with agent_process(first, agent_env(tmp_path / "elsewhere", model), ws) as conn:
            session = await conn.new_session(cwd=str(ws), mcp_servers=[])
            await ask(conn, first, session.session_id, "hello")
        second = Chat()
        async with agent_process(second, agent_env(tmp_path / "home", model), ws) as conn:
            await conn.load_session(cwd=str(ws), session_id=session.session_id, mcp_servers=[])
            await second.until(lambda: "user_message_chunk" in second.kinds())
            await second.settle()
    told = [u for u in second.updates if u.session_update.endswith("message_chunk")]
    first_prompt = next(i for i, u in enumerate(told) if u.session_update == "user_message_chunk")
    before = " ".join(u.content.text for u in told[:first_prompt])
    assert f"Session {session.session_id} is not yours" in before
