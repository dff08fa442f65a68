"""shell and shell_command: run one command to completion and report its output.

``shell`` takes an argv (run directly, as execvp would) and answers in Codex's
structured JSON form; ``shell_command`` takes a script for the user's shell and answers
in plain text. Both time out after ``timeout_ms`` (10 s by default).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, BaseModel, Field

from agent_magics.errors import RespondToModel
from agent_magics.tools.args import decode_call
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput, TurnContext
from agent_magics.tools.exec import manager_for
from agent_magics.tools.exec.call import (
    EscalationArgs,
    check_command_text,
    run_approved,
)
from agent_magics.tools.exec.command import command_env, shell_argv, use_login
from agent_magics.tools.exec.guard import looks_sandbox_denied
from agent_magics.tools.exec.intercept import find_apply_patch
from agent_magics.tools.exec.shell_exec import (
    DEFAULT_TIMEOUT_MS,
    ExecOutput,
    decode_output,
    exec_output_text,
    run_oneshot,
    spawn_error_text,
)
from agent_magics.tools.exec.snapshot import snapshot_command
from agent_magics.tools.sandbox import SandboxSpec
from agent_magics.tools.spec import (
    ToolSpec,
)
from agent_magics.tools.specs.command import (
    shell_command_spec,
    shell_spec,
)
from agent_magics.tools.stopping import output_so_far


class _RunFields(BaseModel):
    workdir: str | None = None
    timeout_ms: int | None = Field(
        default=None, ge=0, validation_alias=AliasChoices("timeout_ms", "timeout")
    )


# workdir and timeout_ms, then the escalation fields: the order is seen by the model.
class _CommonArgs(EscalationArgs, _RunFields):
    pass


class ShellArgs(_CommonArgs):
    command: list[str]


class ShellCommandArgs(_CommonArgs):
    command: str
    login: bool | None = None


def _user_shell_argv(turn: TurnContext, script: str, login: bool) -> list[str]:
    return shell_argv(turn.shell.path, "posix", script, login)


async def run_shell_call(
    inv: ToolInvocation, argv: Sequence[str], args: _CommonArgs, structured: bool
) -> ToolOutput:
    """The part shell and shell_command share: guards, apply_patch, approval, the run."""
    check_command_text({"command": argv, "workdir": args.workdir})
    turn = inv.turn
    permissions = args.checked_permissions(inv, "shell")
    cwd: Path = inv.resolve(args.workdir) if args.workdir else turn.cwd
    found = find_apply_patch(argv, cwd)
    if found is not None:
        # The appliers load with the first patch found in a command, not with every turn.
        from agent_magics.tools.handlers.apply_patch import run_apply_patch

        return await run_apply_patch(inv, found.patch, found.cwd)
    manager = manager_for(inv.services)
    env = command_env(turn.thread_id)
    timeout = DEFAULT_TIMEOUT_MS if args.timeout_ms is None else args.timeout_ms

    async def attempt(sandbox: SandboxSpec) -> ExecOutput:
        try:
            run, run_env = await snapshot_command(
                inv.services,
                argv,
                env,
                inv.turn.cwd,
                inv.turn.approval_policy,
                inv.turn.sandbox_mode,
            )
            return await run_oneshot(
                sandbox.wrap(run),
                cwd,
                run_env,
                timeout,
                manager,
                lambda read: output_so_far(inv.services, inv.call_id, read),
            )
        except (OSError, ValueError) as exc:
            raise RespondToModel(spawn_error_text(exc)) from None

    def denied(result: ExecOutput) -> bool:
        text = decode_output(result.aggregated)
        return not result.timed_out and looks_sandbox_denied(text, result.exit_code)

    ran = await run_approved(inv, argv, cwd, args, permissions, attempt, denied)
    text, ok = exec_output_text(ran.value, structured, turn.truncation)
    return ToolOutput(text, success=ok)


class ShellHandler:
    name = "shell"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = True

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return shell_spec(config)

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        args = decode_call(ShellArgs, inv)
        return await run_shell_call(inv, args.command, args, structured=True)


class ShellCommandHandler:
    name = "shell_command"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = True

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return shell_command_spec(config)

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        args = decode_call(ShellCommandArgs, inv)
        login = use_login(args.login, inv.turn.allow_login_shell)
        argv = _user_shell_argv(inv.turn, args.command, login)
        return await run_shell_call(inv, argv, args, structured=False)
