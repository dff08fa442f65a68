"""exec_command and write_stdin: commands in a PTY or pipes, kept alive between calls.

``exec_command`` runs a shell command and waits up to ``yield_time_ms`` for it; if it is
still running the answer carries a session id, and ``write_stdin`` sends input to it
(PTY sessions only) or polls it for more output.
"""

from __future__ import annotations

import codecs
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from agent_magics.errors import RespondToModel
from agent_magics.events import ToolOutputDelta
from agent_magics.rust_text import rust_os_error
from agent_magics.tools.approval import SandboxPermissions
from agent_magics.tools.args import decode_call
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput, TurnContext
from agent_magics.tools.exec import manager_for
from agent_magics.tools.exec.buffer import HeadTailBuffer
from agent_magics.tools.exec.call import (
    EscalationArgs,
    check_command_text,
    run_approved,
)
from agent_magics.tools.exec.command import command_env, resolve_shell, shell_argv, use_login
from agent_magics.tools.exec.format import (
    create_process_failed,
    intercepted_response,
    new_chunk_id,
    output_policy,
    reserialize_shell_output,
    sandbox_denied_failure,
    unified_response,
)
from agent_magics.tools.exec.guard import looks_sandbox_denied
from agent_magics.tools.exec.intercept import PatchCall, find_apply_patch
from agent_magics.tools.exec.manager import ExecResult, StdinClosed, UnknownSession
from agent_magics.tools.exec.process import ExecProcess
from agent_magics.tools.exec.snapshot import snapshot_command
from agent_magics.tools.sandbox import SandboxSpec
from agent_magics.tools.spec import ToolSpec
from agent_magics.tools.specs.command import (
    exec_command_spec,
    write_stdin_spec,
)
from agent_magics.tools.stopping import on_stop, output_so_far

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


class _CallOutput:
    """What a call's command prints: each piece shown live, and what the call saw kept
    (head and tail, 1 MiB) with what the process holds not yet read, for the model
    should the call be stopped before it answers."""

    def __init__(self, inv: ToolInvocation, process: ExecProcess | None = None) -> None:
        self._inv = inv
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._seen = HeadTailBuffer()
        self._process = process
        output_so_far(inv.services, inv.call_id, self.so_far)

    def watch(self, process: ExecProcess) -> None:
        self._process = process

    def emit(self, chunk: bytes) -> None:
        self._seen.push(chunk)
        text = self._decoder.decode(chunk)
        if text:
            self._inv.emit(ToolOutputDelta(self._inv.call_id, text))

    def so_far(self) -> str:
        data = self._seen.peek().data
        if self._process is not None:
            data += self._process.snapshot()
        return data.decode("utf-8", errors="replace")


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
        return await self._exec(inv, args, argv, cwd, permissions)

    async def _apply_patch(self, inv: ToolInvocation, call: PatchCall) -> ToolOutput:
        # The appliers load with the first patch found in a command, not with every turn.
        from agent_magics.tools.handlers.apply_patch import run_apply_patch

        started = time.monotonic()
        result = await run_apply_patch(inv, call.patch, call.cwd)
        inner = reserialize_shell_output(result.text)
        text = intercepted_response(time.monotonic() - started, inner)
        return ToolOutput(text, success=result.success)

    async def _exec(
        self,
        inv: ToolInvocation,
        args: ExecCommandArgs,
        argv: list[str],
        cwd: Path,
        permissions: SandboxPermissions,
    ) -> ToolOutput:
        turn = inv.turn
        manager = manager_for(inv.services)
        session_id = manager.reserve_id()
        env = command_env(turn.thread_id, unified=True, call_id=inv.call_id)
        output = _CallOutput(inv)

        async def attempt(sandbox: SandboxSpec) -> ExecProcess:
            try:
                run, run_env = await snapshot_command(
                    inv.services,
                    argv,
                    env,
                    inv.turn.cwd,
                    inv.turn.approval_policy,
                    inv.turn.sandbox_mode,
                )
                started = await manager.spawn(
                    sandbox.wrap(run), cwd, run_env, args.tty, on_start=output.watch
                )
            except OSError as exc:
                raise RespondToModel(
                    f"Failed to create unified exec process: {rust_os_error(exc)}"
                ) from None
            on_stop(inv.services, inv.call_id, lambda: manager.stop(started))
            return started

        def denied(process: ExecProcess) -> bool:
            text = process.snapshot().decode("utf-8", errors="replace")
            return process.exit_code is not None and looks_sandbox_denied(text, process.exit_code)

        process: ExecProcess | None = None
        try:
            try:
                ran = await run_approved(
                    inv,
                    argv,
                    cwd,
                    args,
                    permissions,
                    attempt,
                    denied,
                    tty=args.tty,
                    release=manager.discard,
                )
            except RespondToModel as exc:
                raise RespondToModel(create_process_failed(exc.message)) from None
            process, confined = ran.value, ran.sandbox.confined
            if confined and denied(process):
                text = process.snapshot().decode("utf-8", errors="replace")
                raise RespondToModel(sandbox_denied_failure(text, process.exit_code or 0))
            result = await manager.start(
                process,
                session_id=session_id,
                command=argv,
                yield_time_ms=args.yield_time_ms,
                warn=lambda message: inv.services.pending_user_messages.append(
                    f"Warning: {message}"
                ),
                on_output=output.emit,
            )
        except BaseException:
            if process is not None and not manager.is_session(process):
                manager.discard(process)
            if session_id not in manager.session_ids:
                manager.release_id(session_id)
            raise
        if confined and result.exit_code is not None:
            seen = result.output.data.decode("utf-8", errors="replace")
            if looks_sandbox_denied(seen, result.exit_code):
                raise RespondToModel(sandbox_denied_failure(seen, result.exit_code))
        return _answer(result, args.max_output_tokens, inv.turn)


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
                args.session_id, args.chars, args.yield_time_ms, _CallOutput(inv, polled).emit
            )
        except (UnknownSession, StdinClosed) as exc:
            raise RespondToModel(f"write_stdin failed: {exc}") from None
        return _answer(result, args.max_output_tokens, inv.turn)
