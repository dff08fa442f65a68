"""exec_command / write_stdin with real processes: PTYs, pipes, sessions, cleanup."""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Any

import pytest

from agent_magics.protocol.approval import ApprovalPolicy, ReviewDecision
from agent_magics.tools.context import SessionServices
from agent_magics.tools.handlers.unified_exec import ExecCommandHandler, WriteStdinHandler
from agent_magics.tools.unified_exec import ProcessManager, manager_for
from agent_magics.tools.unified_exec.buffer import HeadTailBuffer
from agent_magics.tools.unified_exec.collect import clamp_yield, poll_wait_ms
from tests.helpers.tools import alive, gone, session_of
from tests.helpers.tools import run_shell_tool as run

pytestmark = pytest.mark.slow  # real PTY sessions and processes

EXEC = ExecCommandHandler()
STDIN = WriteStdinHandler()


def body(text: str) -> str:
    return text.split("\nOutput:\n", 1)[1]


async def read_until(
    services: SessionServices, cwd: Path, sid: int, seen: str, needle: str, polls: int = 4
) -> str:
    """``seen`` plus further output of session ``sid`` until ``needle`` shows up (a slow
    machine may need more than one wait)."""
    for _ in range(polls):
        if needle in seen:
            break
        text = await run(STDIN, {"session_id": sid, "yield_time_ms": 250}, services, cwd)
        if text.startswith("ERROR"):
            break
        seen += body(text)
    return seen


async def read_pid(path: Path) -> int:
    while not path.exists() or not path.read_text().strip():
        await asyncio.sleep(0.02)
    return int(path.read_text())


# -- exec_command ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param({"cmd": "echo one; echo two", "tty": True}, "one\r\ntwo\r\n", id="tty-crlf"),
        pytest.param({"cmd": "echo one; echo two"}, "one\ntwo\n", id="pipes-lf"),
        pytest.param(
            {"cmd": "test -t 0 && echo tty || echo notty", "tty": True}, "tty\r\n", id="tty-stdin"
        ),
        pytest.param({"cmd": "test -t 1 && echo tty || echo notty"}, "notty\n", id="pipe-stdout"),
        pytest.param({"cmd": "read x; echo rc=$?"}, "rc=1\n", id="stdin-at-eof"),
        pytest.param({"cmd": "echo a; echo b >&2; echo c"}, "a\nb\nc\n", id="stderr-merged"),
        pytest.param({"cmd": "printf abc"}, "abc", id="no-newline"),
        pytest.param(
            {"cmd": "echo $TERM $NO_COLOR $PAGER $CODEX_CI"}, "dumb 1 cat 1\n", id="forced-env"
        ),
        pytest.param({"cmd": "echo $CODEX_TOOL_CALL_ID"}, "call-1\n", id="call-id-env"),
    ],
)
async def test_exec_command_output(
    services: SessionServices, tmp_path: Path, args: dict[str, Any], expected: str
) -> None:
    text = await run(EXEC, args, services, tmp_path)
    assert text.startswith("Chunk ID: ")
    assert "Process exited with code 0\n" in text
    assert body(text) == expected


async def test_exit_codes_and_signals(services: SessionServices, tmp_path: Path) -> None:
    assert "Process exited with code 3\n" in await run(EXEC, {"cmd": "exit 3"}, services, tmp_path)
    killed = await run(EXEC, {"cmd": "kill -9 $$"}, services, tmp_path)
    assert "Process exited with code 137\n" in killed


async def test_response_layout(services: SessionServices, tmp_path: Path) -> None:
    text = await run(EXEC, {"cmd": "echo hello"}, services, tmp_path)
    lines = text.split("\n")
    assert re.fullmatch(r"Chunk ID: [0-9a-f]{6}", lines[0])
    assert re.fullmatch(r"Wall time: \d+\.\d{4} seconds", lines[1])
    assert lines[2:] == [
        "Process exited with code 0",
        "Original token count: 2",
        "Output:",
        "hello",
        "",
    ]


async def test_thread_id_variable(services: SessionServices, tmp_path: Path) -> None:
    text = await run(EXEC, {"cmd": "echo $CODEX_THREAD_ID"}, services, tmp_path, thread_id="t-42")
    assert body(text) == "t-42\n"


@pytest.mark.parametrize(
    ("workdir", "expected"),
    [pytest.param("sub", "sub", id="relative"), pytest.param("", "", id="empty-is-cwd")],
)
async def test_workdir(
    services: SessionServices, tmp_path: Path, workdir: str, expected: str
) -> None:
    (tmp_path / "sub").mkdir()
    text = await run(EXEC, {"cmd": "pwd -P", "workdir": workdir}, services, tmp_path)
    assert body(text) == f"{(tmp_path / expected).resolve()}\n".replace("/\n", "\n")


async def test_missing_workdir_is_a_create_process_error(
    services: SessionServices, tmp_path: Path
) -> None:
    text = await run(EXEC, {"cmd": "pwd", "workdir": "nope"}, services, tmp_path)
    assert text == (
        'ERROR exec_command failed: CreateProcess { message: "Rejected(\\"Failed to create '
        'unified exec process: No such file or directory (os error 2)\\")" }'
    )
    assert manager_for(services).session_ids == []


@pytest.mark.parametrize(
    ("budget", "head", "marker"),
    [
        pytest.param(0, "", "…6 tokens truncated…", id="zero"),
        pytest.param(5, "1\n2\n3\n4\n5\n", "…1 tokens truncated…", id="five"),
    ],
)
async def test_max_output_tokens(
    services: SessionServices, tmp_path: Path, budget: int, head: str, marker: str
) -> None:
    text = await run(EXEC, {"cmd": "seq 1 10", "max_output_tokens": budget}, services, tmp_path)
    assert "Original token count: 6\n" in text
    expected_start = (
        "Warning: truncated output (original token count: 6)\nTotal output lines: 10\n\n"
    )
    assert body(text).startswith(expected_start + head[: budget * 2])
    assert marker in body(text)


async def test_output_beyond_a_mebibyte_keeps_head_and_tail(
    services: SessionServices, tmp_path: Path
) -> None:
    cmd = "printf START; head -c 3000000 /dev/zero | tr '\\0' x; printf END"
    text = await run(EXEC, {"cmd": cmd, "max_output_tokens": 400_000}, services, tmp_path)
    assert "Original token count: 750002\n" in text  # every byte written, as Codex counts
    out = body(text)
    # a budget above the turn's (10,000 tokens) gets the turn's; the cap's marker is restated
    dropped = 3_000_008 - 1024 * 1024
    head = "Warning: truncated output (original token count: 750002)\n"
    assert out.startswith(f"{head}... {dropped} bytes omitted ...\n\nSTARTxxx")
    assert out.endswith("xxxEND") and len(out) < 41_000


# -- sessions -------------------------------------------------------------------------------


async def test_running_command_becomes_a_session(services: SessionServices, tmp_path: Path) -> None:
    text = await run(
        EXEC, {"cmd": "echo early; sleep 30", "yield_time_ms": 300}, services, tmp_path
    )
    sid = session_of(text)
    assert "Process exited" not in text
    assert await read_until(services, tmp_path, sid, body(text), "early\n") == "early\n"
    assert 1000 <= sid < 100_000 and manager_for(services).session_ids == [sid]


async def test_interactive_cat(services: SessionServices, tmp_path: Path) -> None:
    args = {"cmd": "cat", "tty": True, "yield_time_ms": 250, "login": False}
    sid = session_of(await run(EXEC, args, services, tmp_path))
    for line in ("hello", "again"):
        chars = {"session_id": sid, "chars": f"{line}\n", "yield_time_ms": 500}
        answer = await run(STDIN, chars, services, tmp_path)
        assert session_of(answer) == sid
        expected = f"{line}\r\n{line}\r\n"  # the terminal's echo, then cat's copy
        assert await read_until(services, tmp_path, sid, body(answer), expected) == expected
    done = await run(
        STDIN, {"session_id": sid, "chars": "\u0004", "yield_time_ms": 2000}, services, tmp_path
    )
    assert "Process exited with code 0\n" in done and body(done) == ""
    assert await run(STDIN, {"session_id": sid}, services, tmp_path) == (
        f"ERROR write_stdin failed: Unknown process id {sid}"
    )


async def test_python_repl(services: SessionServices, tmp_path: Path) -> None:
    start = await run(
        EXEC, {"cmd": "python3 -q -i", "tty": True, "yield_time_ms": 1500}, services, tmp_path
    )
    sid = session_of(start)
    assert (await read_until(services, tmp_path, sid, body(start), ">>> ")).endswith(">>> ")
    answer = await run(
        STDIN,
        {"session_id": sid, "chars": "print(6*7)\n", "yield_time_ms": 800},
        services,
        tmp_path,
    )
    expected = "print(6*7)\r\n42\r\n>>> "
    assert await read_until(services, tmp_path, sid, body(answer), expected) == expected
    bye = await run(
        STDIN, {"session_id": sid, "chars": "exit()\n", "yield_time_ms": 3000}, services, tmp_path
    )
    assert "Process exited with code 0\n" in bye


async def test_ctrl_c_interrupts_the_foreground_job(
    services: SessionServices, tmp_path: Path
) -> None:
    cmd = "trap 'echo caught' INT; echo ready; sleep 30 & wait; echo after"
    args = {"cmd": cmd, "tty": True, "yield_time_ms": 300, "login": False}
    start = await run(EXEC, args, services, tmp_path)
    sid = session_of(start)
    assert "ready" in await read_until(services, tmp_path, sid, body(start), "ready")
    chars = {"session_id": sid, "chars": "\u0003", "yield_time_ms": 2000}
    text = await run(STDIN, chars, services, tmp_path)
    assert "caught" in await read_until(services, tmp_path, sid, body(text), "caught")


async def test_poll_returns_when_the_process_ends(
    services: SessionServices, tmp_path: Path
) -> None:
    sid = session_of(
        await run(
            EXEC, {"cmd": "sleep 0.5; echo finished", "yield_time_ms": 250}, services, tmp_path
        )
    )
    text = await run(STDIN, {"session_id": sid, "yield_time_ms": 60_000}, services, tmp_path)
    assert "Process exited with code 0\n" in text and body(text) == "finished\n"


async def test_output_between_calls_is_kept_for_the_next_poll(
    services: SessionServices, tmp_path: Path
) -> None:
    cmd = "echo one; sleep 1; echo two; sleep 0.5"
    sid = session_of(await run(EXEC, {"cmd": cmd, "yield_time_ms": 250}, services, tmp_path))
    await asyncio.sleep(1.2)  # "two" is printed while no call is waiting
    text = await run(
        STDIN, {"session_id": sid, "chars": "", "yield_time_ms": 250}, services, tmp_path
    )
    assert "two\n" in body(text)


async def test_stdin_closed_without_tty(services: SessionServices, tmp_path: Path) -> None:
    sid = session_of(await run(EXEC, {"cmd": "sleep 30", "yield_time_ms": 250}, services, tmp_path))
    assert await run(STDIN, {"session_id": sid, "chars": "x"}, services, tmp_path) == (
        "ERROR write_stdin failed: stdin is closed for this session; rerun exec_command with "
        "tty=true to keep stdin open"
    )


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        pytest.param(
            {"session_id": 12345},
            "ERROR write_stdin failed: Unknown process id 12345",
            id="unknown",
        ),
        pytest.param(
            {"chars": "x"},
            "ERROR failed to parse function arguments: missing field `session_id`",
            id="missing",
        ),
    ],
)
async def test_write_stdin_errors(
    services: SessionServices, tmp_path: Path, args: dict[str, Any], expected: str
) -> None:
    assert (await run(STDIN, args, services, tmp_path)).startswith(expected)


# -- waiting rules and buffers ------------------------------------------------------------


@pytest.mark.parametrize(
    ("ms", "expected"),
    [
        pytest.param(0, 250, id="floor"),
        pytest.param(1000, 1000, id="kept"),
        pytest.param(99_999, 30_000, id="cap"),
    ],
)
def test_clamp_yield(ms: int, expected: int) -> None:
    assert clamp_yield(ms) == expected


@pytest.mark.parametrize(
    ("ms", "writing", "expected"),
    [
        pytest.param(0, True, 250, id="write-floor"),
        pytest.param(50_000, True, 30_000, id="write-cap"),
        pytest.param(250, False, 5_000, id="poll-floor"),
        pytest.param(10**7, False, 300_000, id="poll-cap"),
    ],
)
def test_poll_wait(ms: int, writing: bool, expected: int) -> None:
    assert poll_wait_ms(ms, writing) == expected


@pytest.mark.parametrize(
    ("pushes", "kept", "dropped"),
    [
        pytest.param([b"abc"], b"abc", 0, id="fits"),
        pytest.param([b"abcdef", b"ghij"], b"abcghij", 3, id="middle-dropped"),
        pytest.param([b"ab", b"cdefghijkl"], b"abcijkl", 5, id="one-big-chunk"),
        pytest.param([b"a"] * 10, b"aaaaaaa", 3, id="many-small"),
    ],
)
def test_head_tail_buffer(pushes: list[bytes], kept: bytes, dropped: int) -> None:
    buf = HeadTailBuffer(capacity=7)
    for chunk in pushes:
        buf.push(chunk)
    assert (buf.snapshot(), buf.dropped) == (kept, dropped)
    assert buf.drain() == kept and len(buf) == 0


# -- limits, stopping and cancellation ------------------------------------------------------


async def test_sixty_sessions_warn_and_sixty_five_prune(
    services: SessionServices, tmp_path: Path
) -> None:
    manager = manager_for(services)
    args = {"cmd": "sleep 60", "yield_time_ms": 250, "login": False}
    await asyncio.gather(*(run(EXEC, args, services, tmp_path) for _ in range(65)))
    assert len(manager.session_ids) == 64
    warnings = [m for m in services.pending_user_messages if "maximum number" in m]
    assert len(warnings) == 6
    assert warnings[0] == (
        "Warning: The maximum number of unified exec processes you can keep open is 60 and you "
        "currently have 60 processes open. Reuse older processes or close them to prevent "
        "automatic pruning of old processes"
    )


async def test_kill_all_kills_the_whole_process_group(
    services: SessionServices, tmp_path: Path
) -> None:
    cmd = f"sleep 1000 & echo $! > {tmp_path / 'pid'}; wait"
    session_of(await run(EXEC, {"cmd": cmd, "yield_time_ms": 250}, services, tmp_path))
    pid = await read_pid(tmp_path / "pid")
    assert alive(pid)
    manager_for(services).kill_all()
    assert await gone(pid)
    assert manager_for(services).session_ids == []


async def test_close_ends_every_session(services: SessionServices, tmp_path: Path) -> None:
    cmd = f"sleep 1000 & echo $! > {tmp_path / 'pid'}; wait"
    session_of(await run(EXEC, {"cmd": cmd, "yield_time_ms": 250}, services, tmp_path))
    pid = await read_pid(tmp_path / "pid")
    await manager_for(services).close()
    assert await gone(pid)


async def test_cancelled_exec_command_keeps_its_session_until_kill_all(
    services: SessionServices, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"
    task = asyncio.ensure_future(
        run(EXEC, {"cmd": f"echo $$ > {pidfile}; sleep 1000"}, services, tmp_path)
    )
    pid = await read_pid(pidfile)
    await asyncio.sleep(0.3)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert alive(pid) and len(manager_for(services).session_ids) == 1
    manager_for(services).kill_all()
    assert await gone(pid)


async def test_cancelled_spawn_leaves_nothing_running(tmp_path: Path) -> None:
    manager = ProcessManager()
    pidfile = tmp_path / "pid"
    task = asyncio.ensure_future(
        manager.spawn(
            ["sh", "-c", f"echo $$ > {pidfile}; exec sleep 1000"], tmp_path, dict(os.environ), False
        )
    )
    pid = await read_pid(pidfile)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await gone(pid)


async def test_escalation_guard(services: SessionServices, tmp_path: Path) -> None:
    args = {"cmd": "ls", "sandbox_permissions": "require_escalated"}
    text = await run(EXEC, args, services, tmp_path, approval_policy=ApprovalPolicy.NEVER)
    assert text == (
        "ERROR approval policy is Never; reject command — you cannot ask for escalated "
        "permissions if the approval policy is Never"
    )


async def test_login_disabled(services: SessionServices, tmp_path: Path) -> None:
    text = await run(
        EXEC, {"cmd": "true", "login": True}, services, tmp_path, allow_login_shell=False
    )
    assert text == "ERROR login shell is disabled by config; omit `login` or set it to false."


async def test_denied_approval(tmp_path: Path) -> None:
    async def deny(request: Any) -> ReviewDecision:
        return ReviewDecision.DENIED

    services = SessionServices(approver=deny)
    text = await run(
        EXEC, {"cmd": "touch x"}, services, tmp_path, approval_policy=ApprovalPolicy.UNTRUSTED
    )
    assert text == (
        'ERROR exec_command failed: CreateProcess { message: "Rejected(\\"exec command '
        'rejected by user\\")" }'
    )
    assert not (tmp_path / "x").exists()


async def test_approved_for_session_is_remembered(tmp_path: Path) -> None:
    asked: list[Any] = []

    async def approve(request: Any) -> ReviewDecision:
        asked.append(request)
        return ReviewDecision.APPROVED_FOR_SESSION

    services = SessionServices(approver=approve)
    for _ in range(2):
        text = await run(
            EXEC, {"cmd": "touch x"}, services, tmp_path, approval_policy=ApprovalPolicy.UNTRUSTED
        )
        assert "Process exited with code 0" in text
    assert len(asked) == 1
    [key] = asked[0].keys
    assert key == {
        "command": ["touch", "x"],
        "cwd": str(tmp_path),
        "sandbox_permissions": "use_default",
        "additional_permissions": None,
        "tty": False,
    }
    await manager_for(services).close()


async def test_dangerous_command_is_refused_under_never(
    services: SessionServices, tmp_path: Path
) -> None:
    text = await run(
        EXEC, {"cmd": "rm -rf x"}, services, tmp_path, approval_policy=ApprovalPolicy.NEVER
    )
    assert text == (
        'ERROR exec_command failed: CreateProcess { message: "Rejected(\\"`/bin/bash -lc '
        "'rm -rf x'` rejected: blocked by policy\\\")\" }"
    )


async def test_kill_all_reaches_jobs_of_an_interactive_shell(
    services: SessionServices, tmp_path: Path
) -> None:
    args = {"cmd": "exec bash --norc --noprofile -i", "tty": True, "yield_time_ms": 500}
    sid = session_of(await run(EXEC, args, services, tmp_path))
    chars = f"sleep 1000 & echo $! > {tmp_path / 'pid'}\n"
    await run(STDIN, {"session_id": sid, "chars": chars, "yield_time_ms": 250}, services, tmp_path)
    pid = await read_pid(tmp_path / "pid")
    assert alive(pid) and os.getpgid(pid) == pid  # a job of its own, not the shell's group
    manager_for(services).kill_all()
    assert await gone(pid)


def test_tools_do_not_inherit_the_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_magics.tools.unified_exec.command_line import command_env

    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-in-tool-output")
    monkeypatch.setenv("SOMETHING_ELSE", "kept")
    env = command_env("thread", unified=True)
    assert "OPENAI_API_KEY" not in env and env["SOMETHING_ELSE"] == "kept"
