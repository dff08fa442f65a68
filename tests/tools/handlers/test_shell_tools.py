"""shell and shell_command with real processes, and the exec output formats."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agent_magics.errors import RespondToModel
from agent_magics.protocol.approval import ApprovalPolicy, ReviewDecision
from agent_magics.tools.approval.requirement import can_retry_unsandboxed
from agent_magics.tools.context import SessionServices
from agent_magics.tools.handlers.shell import (
    ShellArgs,
    ShellCommandArgs,
    ShellCommandHandler,
    ShellHandler,
)
from agent_magics.tools.handlers.unified_exec import ExecCommandArgs
from agent_magics.tools.runtimes.shell import looks_sandbox_denied
from agent_magics.tools.truncate import TruncationPolicy
from agent_magics.tools.unified_exec import manager_for
from agent_magics.tools.unified_exec.format import (
    json_f32,
    reserialize_shell_output,
    rounded_duration,
    rust_debug_str,
    rust_f32_display,
)
from agent_magics.tools.unified_exec.one_shot import aggregate, decode_output
from tests.helpers.tools import alive, gone, shell_invocation

SHELL = ShellHandler()
SHELL_COMMAND = ShellCommandHandler()


async def run(
    handler: Any, args: dict[str, Any], services: SessionServices, cwd: Path, **turn: Any
) -> tuple[str, bool]:
    try:
        out = await handler.handle(shell_invocation(handler, args, services, cwd, **turn))
    except RespondToModel as exc:
        return exc.message, False
    return str(out.content), out.success


def without_wall_time(text: str) -> str:
    lines = text.split("\n")
    assert lines[1].startswith("Wall time: ") and lines[1].endswith(" seconds")
    return "\n".join([lines[0], "Wall time: W seconds", *lines[2:]])


# -- shell_command ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "expected", "success"),
    [
        pytest.param(
            {"command": "echo hi"},
            "Exit code: 0\nWall time: W seconds\nOutput:\nhi\n",
            True,
            id="basic",
        ),
        pytest.param(
            {"command": "echo err >&2; echo out; exit 2"},
            "Exit code: 2\nWall time: W seconds\nOutput:\nout\nerr\n",
            False,
            id="stdout-then-stderr",
        ),
        pytest.param(
            {"command": "true"},
            "Exit code: 0\nWall time: W seconds\nOutput:\n",
            True,
            id="no-output",
        ),
        pytest.param(
            {"command": "shopt -q login_shell && echo login || echo plain", "login": False},
            "Exit code: 0\nWall time: W seconds\nOutput:\nplain\n",
            True,
            id="login-false",
        ),
        pytest.param(
            {"command": "shopt -q login_shell && echo login || echo plain"},
            "Exit code: 0\nWall time: W seconds\nOutput:\nlogin\n",
            True,
            id="login-default",
        ),
        pytest.param(
            {"command": "read x; echo rc=$?"},
            "Exit code: 0\nWall time: W seconds\nOutput:\nrc=1\n",
            True,
            id="stdin-at-eof",
        ),
    ],
)
async def test_shell_command(
    services: SessionServices, tmp_path: Path, args: dict[str, Any], expected: str, success: bool
) -> None:
    text, ok = await run(SHELL_COMMAND, args, services, tmp_path)
    assert (without_wall_time(text), ok) == (expected, success)


async def test_timeout_kills_the_group(services: SessionServices, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    command = f"echo start; sleep 1000 & echo $! > {pidfile}; wait"
    args = {"command": command, "timeout_ms": 1500, "login": False}
    text, ok = await run(SHELL_COMMAND, args, services, tmp_path)
    lines = without_wall_time(text).split("\n")
    assert lines[:3] == ["Exit code: 124", "Wall time: W seconds", "Output:"]
    assert lines[3].startswith("command timed out after ") and lines[3].endswith(" milliseconds")
    assert lines[4:] == ["start", ""] and not ok
    assert await gone(int(pidfile.read_text()))


async def test_killed_by_signal(services: SessionServices, tmp_path: Path) -> None:
    assert await run(SHELL_COMMAND, {"command": "kill -9 $$"}, services, tmp_path) == (
        "execution error: Sandbox(Signal(9))",
        False,
    )


async def test_truncated_freeform_output(services: SessionServices, tmp_path: Path) -> None:
    policy = TruncationPolicy.bytes(20)
    text, _ = await run(
        SHELL_COMMAND, {"command": "seq 1 30"}, services, tmp_path, truncation=policy
    )
    assert without_wall_time(text) == (
        "Exit code: 0\nWall time: W seconds\nTotal output lines: 30\nOutput:\n"
        "1\n2\n3\n4\n5\n…61 chars truncated…\n28\n29\n30\n"
    )


async def test_login_disabled(services: SessionServices, tmp_path: Path) -> None:
    args = {"command": "true", "login": True}
    assert await run(SHELL_COMMAND, args, services, tmp_path, allow_login_shell=False) == (
        "login shell is disabled by config; omit `login` or set it to false.",
        False,
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            {"sandbox_permissions": "require_escalated"},
            "approval policy is Never; reject command — you should not ask for escalated "
            "permissions if the approval policy is Never",
            id="escalation",
        ),
    ],
)
async def test_escalation_guard(
    services: SessionServices, tmp_path: Path, args: dict[str, Any], message: str
) -> None:
    full = {"command": "ls", **args}
    result = await run(
        SHELL_COMMAND, full, services, tmp_path, approval_policy=ApprovalPolicy.NEVER
    )
    assert result == (message, False)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            {"sandbox_permissions": "with_additional_permissions"},
            "additional permissions are disabled; enable `features.request_permission` before "
            "using `with_additional_permissions`",
            id="disabled",
        ),
        pytest.param(
            {"additional_permissions": {"network": {"enabled": True}}},
            "`additional_permissions` requires `sandbox_permissions` set to "
            "`with_additional_permissions`",
            id="without-mode",
        ),
    ],
)
async def test_additional_permissions(
    services: SessionServices, tmp_path: Path, args: dict[str, Any], message: str
) -> None:
    assert await run(SHELL_COMMAND, {"command": "ls", **args}, services, tmp_path) == (
        message,
        False,
    )


async def test_denied_approval(tmp_path: Path) -> None:
    async def deny(request: Any) -> ReviewDecision:
        return ReviewDecision.DENIED

    services = SessionServices(approver=deny)
    result = await run(
        SHELL_COMMAND,
        {"command": "touch x"},
        services,
        tmp_path,
        approval_policy=ApprovalPolicy.UNTRUSTED,
    )
    assert result == ("exec command rejected by user", False)
    assert not (tmp_path / "x").exists()


async def test_approval_request_describes_the_command(tmp_path: Path) -> None:
    asked: list[Any] = []

    async def approve(request: Any) -> ReviewDecision:
        asked.append(request)
        return ReviewDecision.APPROVED

    services = SessionServices(approver=approve)
    args = {"command": "touch x", "justification": "make x?"}
    await run(SHELL_COMMAND, args, services, tmp_path, approval_policy=ApprovalPolicy.UNTRUSTED)
    [request] = asked
    assert (request.kind, request.reason, list(request.command)) == (
        "exec",
        "make x?",
        ["/bin/bash", "-lc", "touch x"],
    )
    assert request.keys == [
        {
            "command": ["touch", "x"],
            "cwd": str(tmp_path),
            "sandbox_permissions": "use_default",
            "additional_permissions": None,
        }
    ]
    assert (tmp_path / "x").exists()


async def test_cancellation_kills_the_command(services: SessionServices, tmp_path: Path) -> None:
    pidfile = tmp_path / "pid"
    args = {"command": f"sleep 1000 & echo $! > {pidfile}; wait"}
    task = asyncio.ensure_future(run(SHELL_COMMAND, args, services, tmp_path))
    while not pidfile.exists() or not pidfile.read_text().strip():
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await gone(int(pidfile.read_text()))


async def test_kill_all_reaches_background_jobs_of_finished_commands(
    services: SessionServices, tmp_path: Path
) -> None:
    pidfile = tmp_path / "pid"
    args = {"command": f"sleep 1000 > /dev/null 2>&1 & echo $! > {pidfile}"}
    _, ok = await run(SHELL_COMMAND, args, services, tmp_path)
    pid = int(pidfile.read_text())
    assert ok and alive(pid)
    manager_for(services).kill_all()
    assert await gone(pid)


NOT_FOUND = (
    'execution error: Io(Os { code: 2, kind: NotFound, message: "No such file or directory" })'
)


# -- shell (argv) ---------------------------------------------------------------------------


def structured(text: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(text)
    assert isinstance(data["metadata"].pop("duration_seconds"), float)
    return data


async def test_shell_structured_output(services: SessionServices, tmp_path: Path) -> None:
    text, ok = await run(SHELL, {"command": ["echo", "hi"]}, services, tmp_path)
    assert text.startswith('{"output":"hi\\n","metadata":{"exit_code":0,"duration_seconds":')
    assert ok
    text, ok = await run(
        SHELL, {"command": ["bash", "-c", "echo é; exit 3"], "timeout": 5000}, services, tmp_path
    )
    assert structured(text) == {"output": "é\n", "metadata": {"exit_code": 3}} and not ok


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(
            {"command": []},
            'execution error: Io(Custom { kind: InvalidInput, error: "command args are empty" })',
            id="empty",
        ),
        pytest.param(
            {"command": ["definitely-not-a-program"]},
            NOT_FOUND,
            id="missing-program",
        ),
        pytest.param(
            {"command": ["pwd"], "workdir": "missing"},
            NOT_FOUND,
            id="missing-workdir",
        ),
    ],
)
async def test_shell_spawn_errors(
    services: SessionServices, tmp_path: Path, args: dict[str, Any], message: str
) -> None:
    assert await run(SHELL, args, services, tmp_path) == (message, False)


ESCALATION = ["sandbox_permissions", "additional_permissions", "justification", "prefix_rule"]


@pytest.mark.parametrize(
    ("model", "fields"),
    [
        pytest.param(ShellArgs, ["workdir", "timeout_ms", *ESCALATION, "command"], id="shell"),
        pytest.param(
            ShellCommandArgs,
            ["workdir", "timeout_ms", *ESCALATION, "command", "login"],
            id="shell_command",
        ),
        pytest.param(
            ExecCommandArgs,
            [
                "cmd",
                "workdir",
                "shell",
                "tty",
                "yield_time_ms",
                "max_output_tokens",
                "login",
                *ESCALATION,
            ],
            id="exec_command",
        ),
    ],
)
def test_argument_fields_keep_their_order(model: type[BaseModel], fields: list[str]) -> None:
    """The order is seen: a JSON array fills the fields in it, the first bad one is named."""
    assert list(model.model_fields) == fields


# -- formats --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "display", "json_text"),
    [
        pytest.param(0.0, "0", "0.0", id="zero"),
        pytest.param(0.04, "0", "0.0", id="rounds-down"),
        pytest.param(0.05, "0.1", "0.1", id="half-up"),
        pytest.param(1.0, "1", "1.0", id="one"),
        pytest.param(12.34, "12.3", "12.3", id="twelve"),
        pytest.param(2.96, "3", "3.0", id="carry"),
        pytest.param(1234.56, "1234.6", "1234.6", id="large"),
    ],
)
def test_duration_display(seconds: float, display: str, json_text: str) -> None:
    value = rounded_duration(seconds)
    assert (rust_f32_display(value), json_f32(value)) == (display, json_text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            '{"output":"hi\\n","metadata":{"exit_code":0,"duration_seconds":0.0}}',
            "Exit code: 0\nWall time: 0 seconds\nOutput:\nhi\n",
            id="plain",
        ),
        pytest.param(
            '{"output":"Total output lines: 9\\n\\nab",'
            '"metadata":{"exit_code":1,"duration_seconds":1.5}}',
            "Exit code: 1\nWall time: 1.5 seconds\nTotal output lines: 9\nOutput:\nab",
            id="lines-header",
        ),
        pytest.param(
            '{"output":"x","metadata":{"exit_code":0,"duration_seconds":0.1},"extra":1}',
            "Exit code: 0\nWall time: 0.1 seconds\nOutput:\nx",
            id="extra-key",
        ),
        pytest.param('{"output":"x"}', '{"output":"x"}', id="no-metadata"),
        pytest.param(
            '{"output":"x","metadata":{"exit_code":"0","duration_seconds":0}}',
            '{"output":"x","metadata":{"exit_code":"0","duration_seconds":0}}',
            id="bad-code",
        ),
        pytest.param("Exit code: 0", "Exit code: 0", id="not-json"),
        pytest.param('{"output":"x","meta', '{"output":"x","meta', id="cut-json"),
    ],
)
def test_reserialize(text: str, expected: str) -> None:
    assert reserialize_shell_output(text) == expected


def test_reserialize_keeps_json_nested_past_the_recursion_limit() -> None:
    deep = '{"output": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert reserialize_shell_output(deep) == deep


@pytest.mark.parametrize(
    ("out", "err", "cap", "expected"),
    [
        pytest.param(b"ab", b"cd", 10, b"abcd", id="fits"),
        pytest.param(b"a" * 10, b"b" * 10, 9, b"aaa" + b"b" * 6, id="contention"),
        pytest.param(b"a" * 10, b"bb", 9, b"a" * 7 + b"bb", id="stdout-gets-unused-room"),
        pytest.param(b"a", b"b" * 20, 9, b"a" + b"b" * 8, id="short-stdout"),
    ],
)
def test_aggregate(out: bytes, err: bytes, cap: int, expected: bytes) -> None:
    assert aggregate(out, err, cap) == expected


@pytest.mark.parametrize(
    ("data", "text"),
    [
        pytest.param("héllo".encode(), "héllo", id="utf8"),
        pytest.param(b"caf\xe9 \x80", "café €", id="windows-1252"),
        pytest.param(b"\x81", "\x81", id="undefined-byte"),
    ],
)
def test_decode_output(data: bytes, text: str) -> None:
    assert decode_output(data) == text


@pytest.mark.parametrize(
    ("text", "debug"),
    [
        pytest.param('say "hi"\n', '"say \\"hi\\"\\n"', id="quotes-newline"),
        pytest.param("tab\there\\", '"tab\\there\\\\"', id="tab-backslash"),
        pytest.param("é\x07", '"é\\u{7}"', id="control"),
        pytest.param("it's", '"it\'s"', id="single-quote"),
    ],
)
def test_rust_debug_str(text: str, debug: str) -> None:
    assert rust_debug_str(text) == debug


async def test_dangerous_command_is_refused_under_never(
    services: SessionServices, tmp_path: Path
) -> None:
    (tmp_path / "x").write_text("keep")
    args = {"command": "rm -rf x"}
    text, ok = await run(
        SHELL_COMMAND, args, services, tmp_path, approval_policy=ApprovalPolicy.NEVER
    )
    assert (text, ok) == ("`/bin/bash -lc 'rm -rf x'` rejected: blocked by policy", False)
    assert (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("output", "code", "denied"),
    [
        pytest.param("touch: x: Operation not permitted", 1, True, id="keyword"),
        pytest.param("Read-only file system", 1, True, id="keyword-case"),
        pytest.param("Permission denied", 0, False, id="success-never"),
        pytest.param("not found", 127, False, id="quick-reject-127"),
        pytest.param("", 2, False, id="quick-reject-2"),
        pytest.param("", 159, True, id="sigsys"),
        pytest.param("boom", 1, False, id="plain-failure"),
    ],
)
def test_sandbox_denial_heuristic(output: str, code: int, denied: bool) -> None:
    assert looks_sandbox_denied(output, code) is denied


@pytest.mark.parametrize(
    ("policy", "allowed"),
    [
        pytest.param(ApprovalPolicy.UNTRUSTED, True, id="untrusted"),
        pytest.param(ApprovalPolicy.ON_FAILURE, True, id="on-failure"),
        pytest.param(ApprovalPolicy.ON_REQUEST, False, id="on-request"),
        pytest.param(ApprovalPolicy.NEVER, False, id="never"),
    ],
)
def test_retry_without_sandbox_is_asked_only_when_allowed(
    policy: ApprovalPolicy, allowed: bool
) -> None:
    assert can_retry_unsandboxed(policy) is allowed
