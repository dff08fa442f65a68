"""The arguments every command tool shares (``shell``, ``shell_command``, ``exec_command``).

The arguments with which a command asks to leave the sandbox (:class:`EscalationArgs`;
their schema is :func:`command_props`, each tool wording ``sandbox_permissions`` its own
way), Codex's guards on them (:func:`check_permissions`) and the check of command text
(:func:`check_command_text`). Each tool's arguments model names :class:`EscalationArgs`
as its first base, so that the escalation fields come after the tool's own (pydantic
orders inherited fields from the last base to the first):
``class ExecCommandArgs(EscalationArgs, _ExecFields)`` has ``cmd`` .. ``login``, then
``sandbox_permissions`` .. ``prefix_rule``. The order is model-visible: a JSON array
fills the fields in it, and the first invalid field is the one reported;
``tests/tools/handlers/test_shell_tools.py`` pins it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel

from agent_magics.errors import RespondToModel
from agent_magics.protocol.approval import ApprovalPolicy, SandboxPermissions
from agent_magics.tools.context import ToolInvocation
from agent_magics.tools.spec import JsonSchema, array, boolean, string

PermissionName = Literal["use_default", "require_escalated", "with_additional_permissions"]

ADDITIONAL_DISABLED = (
    "additional permissions are disabled; enable `features.request_permission` before using "
    "`with_additional_permissions`"
)
ADDITIONAL_WITHOUT_MODE = (
    "`additional_permissions` requires `sandbox_permissions` set to `with_additional_permissions`"
)


def command_props(sandbox_permissions: JsonSchema, *, login: bool) -> dict[str, JsonSchema]:
    """The properties the command tools share: ``workdir``, those of
    :class:`EscalationArgs` (each tool words ``sandbox_permissions`` its own way) and,
    when ``login`` is offered, ``login``."""
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
