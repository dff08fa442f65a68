"""shell and shell_command: run one command to completion and report its output.

``shell`` takes an argv (run directly, as execvp would) and answers in Codex's
structured JSON form; ``shell_command`` takes a script for the user's shell and answers
in plain text. Both time out after ``timeout_ms`` (10 s by default). The handlers parse
the arguments and build a :class:`CommandRequest`; :class:`ShellRuntime` runs it.

Also here, shared with ``exec_command``: the arguments with which a command asks to
leave the sandbox (:class:`EscalationArgs`, their schema is
:func:`agent_magics.tools.handlers.shell.command_props`) and the check of command text.
Each tool's arguments model names :class:`EscalationArgs` as its first base, so that the
escalation fields come after the tool's own (pydantic orders inherited fields from the
last base to the first): ``class ExecCommandArgs(EscalationArgs, _ExecFields)`` has
``cmd`` .. ``login``, then ``sandbox_permissions`` .. ``prefix_rule``. The order is
model-visible: a JSON array fills the fields in it, and the first invalid field is the one
reported; ``tests/tools/test_shell_tools.py`` pins it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, Field

from agent_magics.errors import RespondToModel
from agent_magics.protocol.approval import ApprovalPolicy, SandboxPermissions
from agent_magics.tools.approval.orchestrator import run_guarded
from agent_magics.tools.args import decode_call
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput, TurnContext
from agent_magics.tools.runtimes.intercept import find_apply_patch
from agent_magics.tools.runtimes.shell import CommandRequest, ShellRuntime
from agent_magics.tools.spec import (
    FunctionSpec,
    JsonSchema,
    ToolSpec,
    array,
    boolean,
    number,
    obj,
    string,
)
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


def command_props(sandbox_permissions: JsonSchema, *, login: bool) -> dict[str, JsonSchema]:
    """The properties the command tools share: ``workdir``, those of
    :class:`~agent_magics.tools.handlers.shell.EscalationArgs` (each tool words
    ``sandbox_permissions`` its own way) and, when ``login`` is offered, ``login``."""
    props = {
        "workdir": string("Folder to run in; the turn's working folder when omitted."),
        "sandbox_permissions": sandbox_permissions,
        "justification": string(
            "Only with `require_escalated`: the question to show the user when asking."
        ),
        "prefix_rule": array(
            string(),
            "Only with `require_escalated`: a command prefix the user may approve for later "
            'calls too, e.g. ["git", "pull"].',
        ),
    }
    if login:
        props["login"] = boolean(
            "Run the shell as a login shell (true, the default) or not (false)."
        )
    return props


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


PermissionName = Literal["use_default", "require_escalated", "with_additional_permissions"]

ADDITIONAL_DISABLED = (
    "additional permissions are disabled; enable `features.request_permission` before using "
    "`with_additional_permissions`"
)
ADDITIONAL_WITHOUT_MODE = (
    "`additional_permissions` requires `sandbox_permissions` set to `with_additional_permissions`"
)


def check_permissions(
    policy: ApprovalPolicy,
    permissions: SandboxPermissions,
    additional: object,
    tool: Literal["shell", "exec_command"],
) -> None:
    """Codex's guards on ``sandbox_permissions`` / ``additional_permissions``."""
    escalating = permissions is not SandboxPermissions.USE_DEFAULT
    if escalating and policy is not ApprovalPolicy.ON_REQUEST:
        verb = "cannot" if tool == "exec_command" else "should not"
        name = policy.rust_name
        raise RespondToModel(
            f"approval policy is {name}; reject command — you {verb} ask for escalated "
            f"permissions if the approval policy is {name}"
        )
    if permissions is SandboxPermissions.WITH_ADDITIONAL_PERMISSIONS:
        raise RespondToModel(ADDITIONAL_DISABLED)
    if additional is not None:
        raise RespondToModel(ADDITIONAL_WITHOUT_MODE)


class EscalationArgs(BaseModel):
    """The arguments with which a command asks to run outside the sandbox."""

    sandbox_permissions: PermissionName = "use_default"
    additional_permissions: dict[str, Any] | None = None
    justification: str | None = None
    prefix_rule: list[str] | None = None

    def checked_permissions(
        self, inv: ToolInvocation, tool: Literal["shell", "exec_command"]
    ) -> SandboxPermissions:
        """``sandbox_permissions``, once Codex's guards for the turn's policy let it pass."""
        permissions = SandboxPermissions(self.sandbox_permissions)
        check_permissions(inv.turn.approval_policy, permissions, self.additional_permissions, tool)
        return permissions


def check_command_text(fields: Mapping[str, str | Sequence[str] | None]) -> None:
    """Refuse command text no process can be given: a NUL byte (the text would end
    there) or an unpaired surrogate (it has no UTF-8 spelling)."""
    for field, value in fields.items():
        texts = [value] if isinstance(value, str) else list(value or ())
        for text in texts:
            if "\0" in text:
                raise RespondToModel(f"`{field}` contains a NUL byte; remove it and try again")
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as exc:
                char = f"U+{ord(text[exc.start]):04X}"
                raise RespondToModel(
                    f"`{field}` contains an unpaired surrogate ({char}), which is not valid "
                    "text; remove it and try again"
                ) from None


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
