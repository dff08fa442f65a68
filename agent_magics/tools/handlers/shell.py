"""shell and shell_command: run one command to completion and report its output.

``shell`` takes an argv (run directly, as execvp would) and answers in Codex's
structured JSON form; ``shell_command`` takes a script for the user's shell and answers
in plain text. Both time out after ``timeout_ms`` (10 s by default). The handlers parse
the arguments and build a :class:`CommandRequest`; :class:`ShellRuntime` runs it.

The arguments they share with ``exec_command`` (escalation, the check of command text)
are :mod:`agent_magics.tools.runtimes.command_args`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, BaseModel, Field

from agent_magics.tools.approval.orchestrator import run_guarded
from agent_magics.tools.args import decode_call
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput, TurnContext
from agent_magics.tools.runtimes.command_args import (
    EscalationArgs,
    check_command_text,
    command_props,
)
from agent_magics.tools.runtimes.intercept import find_apply_patch
from agent_magics.tools.runtimes.shell import CommandRequest, ShellRuntime
from agent_magics.tools.spec import FunctionSpec, JsonSchema, ToolSpec, array, number, obj, string
from agent_magics.tools.unified_exec.command_line import shell_argv, use_login
from agent_magics.tools.unified_exec.one_shot import exec_output_text

SHELL_DESCRIPTION = (
    "Run a command and return its output.\n"
    '- `command` is an argv handed to execvp(); wrap shell syntax as ["bash", "-lc", "..."].\n'
    "- Set `workdir` rather than using `cd`, unless there is no other way."
)


SHELL_COMMAND_DESCRIPTION = (
    "Run a shell script in the user's shell and return its output.\n"
    "- Set `workdir` rather than using `cd`, unless there is no other way."
)


def _shell_props(login: bool) -> dict[str, JsonSchema]:
    sandbox_permissions = string(
        'Set to "require_escalated" to ask for running outside the sandbox; the default '
        'is "use_default".'
    )
    return {
        **command_props(sandbox_permissions, login=login),
        "timeout_ms": number("Stop the command after this many milliseconds (default 10000)."),
    }


def shell_spec(config: ToolsConfig) -> ToolSpec:
    props = _shell_props(login=False)
    props["command"] = array(string(), "The command and its arguments.")
    return FunctionSpec("shell", SHELL_DESCRIPTION, obj(props, ["command"]))


def shell_command_spec(config: ToolsConfig) -> ToolSpec:
    props = _shell_props(login=config.allow_login_shell)
    props["command"] = string("The script to run in the user's shell.")
    return FunctionSpec("shell_command", SHELL_COMMAND_DESCRIPTION, obj(props, ["command"]))


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
    """The part shell and shell_command share: guards, apply_patch, the request, the run."""
    check_command_text({"command": argv, "workdir": args.workdir})
    permissions = args.checked_permissions(inv, "shell")
    cwd: Path = inv.resolve(args.workdir) if args.workdir else inv.turn.cwd
    found = find_apply_patch(argv, cwd)
    if found is not None:
        # The appliers load with the first patch found in a command, not with every turn.
        from agent_magics.tools.runtimes.apply_patch import run_apply_patch

        return await run_apply_patch(inv, found.patch, found.cwd)
    request = CommandRequest(argv, cwd, permissions, args.justification)
    ran = await run_guarded(inv, ShellRuntime(inv, request, args.timeout_ms))
    text, ok = exec_output_text(ran.value, structured, inv.turn.truncation)
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
