"""exec_command and write_stdin: commands in a PTY or pipes, kept alive between calls.

``exec_command`` runs a shell command and waits up to ``yield_time_ms`` for it; if it is
still running the answer carries a session id, and ``write_stdin`` sends input to it
(PTY sessions only) or polls it for more output. The handler parses the arguments and
builds a :class:`CommandRequest`; :class:`UnifiedExecRuntime` runs it.
"""

from __future__ import annotations

import time
from typing import Literal

from pydantic import BaseModel, Field

from agent_magics.errors import RespondToModel
from agent_magics.tools.args import decode_call
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput, TurnContext
from agent_magics.tools.runtimes.command_args import (
    EscalationArgs,
    check_command_text,
    command_props,
)
from agent_magics.tools.runtimes.intercept import PatchCall, find_apply_patch
from agent_magics.tools.runtimes.shell import CommandRequest
from agent_magics.tools.runtimes.unified_exec import CallOutput, UnifiedExecRuntime
from agent_magics.tools.spec import (
    FunctionSpec,
    ToolSpec,
    boolean,
    number,
    obj,
    string,
)
from agent_magics.tools.stopping import on_stop
from agent_magics.tools.unified_exec import manager_for
from agent_magics.tools.unified_exec.command_line import resolve_shell, shell_argv, use_login
from agent_magics.tools.unified_exec.format import (
    intercepted_response,
    new_chunk_id,
    output_policy,
    reserialize_shell_output,
    unified_response,
)
from agent_magics.tools.unified_exec.manager import ExecResult, _StdinClosed, _UnknownSession

BUDGET = "Most tokens of output to return (default 10000)."
EXEC_DESCRIPTION = (
    "Run a shell command in a terminal-like session. Returns its output, or a session ID "
    "to keep talking to it when it is still running."
)


STDIN_DESCRIPTION = (
    "Send characters to a running exec_command session and return the output it produced."
)


def exec_command_spec(config: ToolsConfig) -> ToolSpec:
    props = {
        "cmd": string("The shell command to run."),
        "shell": string("Shell program to run the command with; the user's shell by default."),
        "tty": boolean(
            "Give the command a pseudo-terminal (needed for interactive input); "
            "plain pipes when false or omitted."
        ),
        "yield_time_ms": number(
            "How long to wait for output before returning (default 10000 ms; 250-30000)."
        ),
        "max_output_tokens": number(BUDGET),
    }
    sandbox_permissions = {
        "type": "string",
        "description": (
            "`use_default` (the default) runs in the sandbox; `require_escalated` asks to "
            "run outside it."
        ),
        "enum": ["use_default", "require_escalated"],
    }
    props.update(command_props(sandbox_permissions, login=config.allow_login_shell))
    return FunctionSpec("exec_command", EXEC_DESCRIPTION, obj(props, ["cmd"]))


def write_stdin_spec(config: ToolsConfig) -> ToolSpec:
    props = {
        "session_id": number("The session ID exec_command returned."),
        "chars": string("Characters to type into the session; empty (default) just polls."),
        "yield_time_ms": number(
            "How long to wait for output: 250 ms by default for input (at most 30000); "
            "an empty poll waits 5000-300000 ms."
        ),
        "max_output_tokens": number(BUDGET),
    }
    return FunctionSpec("write_stdin", STDIN_DESCRIPTION, obj(props, ["session_id"]))


DEFAULT_MAX_OUTPUT_TOKENS = 10_000


class _ExecFields(BaseModel):
    cmd: str
    workdir: str | None = None
    shell: str | None = None
    tty: bool = False
    yield_time_ms: int = Field(default=10_000, ge=0)
    max_output_tokens: int | None = Field(default=None, ge=0)
    login: bool | None = None


# The fields of _ExecFields, then the escalation fields: the order is seen by the model.
class ExecCommandArgs(EscalationArgs, _ExecFields):
    pass


class WriteStdinArgs(BaseModel):
    session_id: int = Field(ge=-(2**31), le=2**31 - 1)
    chars: str = ""
    yield_time_ms: int = Field(default=250, ge=0)
    max_output_tokens: int | None = Field(default=None, ge=0)


def _answer(result: ExecResult, max_output_tokens: int | None, turn: TurnContext) -> ToolOutput:
    """Codex's unified exec answer for ``result``, its output capped at the budget."""
    budget = DEFAULT_MAX_OUTPUT_TOKENS if max_output_tokens is None else max_output_tokens
    text = unified_response(
        chunk_id=new_chunk_id(),
        wall_time=result.wall_time,
        exit_code=result.exit_code,
        session_id=result.session_id,
        output=result.output,
        policy=output_policy(budget, turn.truncation),
    )
    return ToolOutput(text)


def exec_argv(args: ExecCommandArgs, turn: TurnContext, login: bool) -> list[str]:
    """The argv exec_command runs: the named shell (or the person's) with the script."""
    if args.shell is not None:
        shell, family = resolve_shell(args.shell)
    else:
        shell, family = turn.shell.path, "posix"
    return shell_argv(shell, family, args.cmd, login)


class ExecCommandHandler:
    name = "exec_command"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = True

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return exec_command_spec(config)

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        args = decode_call(ExecCommandArgs, inv)
        check_command_text({"cmd": args.cmd, "workdir": args.workdir, "shell": args.shell})
        turn = inv.turn
        argv = exec_argv(args, turn, use_login(args.login, turn.allow_login_shell))
        permissions = args.checked_permissions(inv, "exec_command")
        cwd = inv.resolve(args.workdir) if args.workdir else turn.cwd
        found = find_apply_patch(argv, cwd)
        if found is not None:
            return await self._apply_patch(inv, found)
        request = CommandRequest(argv, cwd, permissions, args.justification, tty=args.tty)
        result = await UnifiedExecRuntime(inv, request, args.yield_time_ms).run()
        return _answer(result, args.max_output_tokens, turn)

    async def _apply_patch(self, inv: ToolInvocation, call: PatchCall) -> ToolOutput:
        # The appliers load with the first patch found in a command, not with every turn.
        from agent_magics.tools.runtimes.apply_patch import run_apply_patch

        started = time.monotonic()
        result = await run_apply_patch(inv, call.patch, call.cwd)
        inner = reserialize_shell_output(result.text)
        text = intercepted_response(time.monotonic() - started, inner)
        return ToolOutput(text, success=result.success)


class WriteStdinHandler:
    name = "write_stdin"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = False

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return write_stdin_spec(config)

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        args = decode_call(WriteStdinArgs, inv)
        manager = manager_for(inv.services)
        polled = manager.process_of(args.session_id)
        if polled is not None:  # stopping this call stops the command it talks to
            on_stop(inv.services, inv.call_id, lambda: manager.stop(polled))
        try:
            result = await manager.write_stdin(
                args.session_id, args.chars, args.yield_time_ms, CallOutput(inv, polled).emit
            )
        except (_UnknownSession, _StdinClosed) as exc:
            raise RespondToModel(f"write_stdin failed: {exc}") from None
        return _answer(result, args.max_output_tokens, inv.turn)
