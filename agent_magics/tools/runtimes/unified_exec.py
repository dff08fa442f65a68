"""The runtime of ``exec_command``: a command in a PTY or pipes, kept alive in the
session when it outlives the call's wait.

The attempt starts the command and gives it a moment to finish early
(:meth:`ProcessManager.spawn`); the orchestrator judges that attempt once
(:meth:`CommandRuntime.is_sandbox_denial`) and may retry it without the sandbox. What
the process manager then collects within ``yield_time_ms`` is judged again only when the
first verdict could not be final: the command was still running, or had failed with
output perhaps not all read yet. Where a writable root is read-only on this machine
itself (``SandboxSpec.unwritable``), a failed write is no sandbox denial: the command is
answered as it ran, its own error in its output.
"""

from __future__ import annotations

import codecs

from agent_magics.errors import RespondToModel
from agent_magics.events import ToolOutputDelta
from agent_magics.text.rust import rust_os_error
from agent_magics.tools.approval.orchestrator import run_guarded
from agent_magics.tools.context import ToolInvocation
from agent_magics.tools.runtimes.shell import CommandRequest, CommandRuntime, looks_sandbox_denied
from agent_magics.tools.sandbox import SandboxSpec
from agent_magics.tools.stopping import on_stop, output_so_far
from agent_magics.tools.unified_exec import manager_for
from agent_magics.tools.unified_exec.buffer import HeadTailBuffer
from agent_magics.tools.unified_exec.command_line import command_env
from agent_magics.tools.unified_exec.format import create_process_failed, sandbox_denied_failure
from agent_magics.tools.unified_exec.manager import ExecResult
from agent_magics.tools.unified_exec.process import ExecProcess


class CallOutput:
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


class UnifiedExecRuntime(CommandRuntime[ExecProcess]):
    """One ``exec_command`` call: :meth:`run` answers what the command printed within
    ``yield_time_ms`` (and its session id, should it still run)."""

    def __init__(self, inv: ToolInvocation, req: CommandRequest, yield_time_ms: int) -> None:
        env = command_env(inv.turn.thread_id, unified=True, call_id=inv.call_id)
        super().__init__(inv, req, env)
        self.yield_time_ms = yield_time_ms
        self.manager = manager_for(inv.services)
        self._judged: int | None = None  # the exit code the orchestrator's verdict saw
        self._output: CallOutput | None = None

    async def run(self) -> ExecResult:
        inv, manager = self.inv, self.manager
        session_id = manager.reserve_id()
        output = self._output = CallOutput(inv)
        process: ExecProcess | None = None
        try:
            try:
                ran = await run_guarded(inv, self)
            except RespondToModel as exc:
                raise RespondToModel(create_process_failed(exc.message)) from None
            process = ran.value
            if ran.denied and not ran.sandbox.unwritable:
                text = process.snapshot().decode("utf-8", errors="replace")
                raise RespondToModel(sandbox_denied_failure(text, process.exit_code or 0))
            result = await manager.start(
                process,
                session_id=session_id,
                command=self.req.argv,
                yield_time_ms=self.yield_time_ms,
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
        if ran.sandbox.unwritable:  # the folder is read-only here: answered as it ran
            return result
        if ran.sandbox.confined and self._judged != 0 and result.exit_code is not None:
            seen = result.output.data.decode("utf-8", errors="replace")
            if looks_sandbox_denied(seen, result.exit_code):
                raise RespondToModel(sandbox_denied_failure(seen, result.exit_code))
        return result

    async def attempt(self, sandbox: SandboxSpec) -> ExecProcess:
        inv, manager = self.inv, self.manager
        try:
            argv, env = await self.command(sandbox)
            started = await manager.spawn(
                argv, self.req.cwd, env, bool(self.req.tty), on_start=self._watch
            )
        except OSError as exc:
            raise RespondToModel(
                f"Failed to create unified exec process: {rust_os_error(exc)}"
            ) from None
        on_stop(inv.services, inv.call_id, lambda: manager.stop(started))
        return started

    def _watch(self, process: ExecProcess) -> None:
        if self._output is not None:
            self._output.watch(process)

    def evidence(self, result: ExecProcess) -> tuple[str, int] | None:
        self._judged = result.exit_code
        if result.exit_code is None:
            return None
        return result.snapshot().decode("utf-8", errors="replace"), result.exit_code

    def release(self, result: ExecProcess) -> None:
        self.manager.discard(result)
