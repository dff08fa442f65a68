"""The command approval decision (codex-tools.md §9.4) as a truth table.

Each row is written out by hand from §9.4 (Codex's ``render_decision_for_unmatched_command``
plus ``sandbox_override_for_first_attempt``), not computed:

1. known-safe -> run; 2. dangerous -> refused under ``never``, else ask;
3. ``never`` / ``on-failure`` -> run; 4. ``untrusted`` -> ask;
5. ``on-request``: full access -> run; read-only / workspace-write -> ask only when
   ``sandbox_permissions`` is not ``use_default``.

``require_escalated`` also makes the first attempt run outside the sandbox, whatever the
decision ("+bypass"); under ``danger-full-access`` there is no sandbox, so the flag is
not compared there. Rows with ``require_escalated`` under a policy other than
``on-request`` cannot happen through the shell tools, which refuse such requests first
(§7.4); the table still pins the pure function.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode, SandboxPermissions
from agent_magics.tools.approval.requirement import (
    ApprovalRequirement,
    Forbidden,
    NeedsApproval,
    Skip,
    exec_approval_requirement,
)
from agent_magics.tools.command_safety.rules import commands_of, exec_policy_commands
from agent_magics.tools.sandbox.roots import real

P = pytest.param

COMMANDS = {
    "safe": ["ls", "-la"],
    "unsafe": ["cargo", "build"],
    "dangerous": ["rm", "-rf", "/tmp/x"],
}
PERMISSIONS = {
    "default": SandboxPermissions.USE_DEFAULT,
    "escalated": SandboxPermissions.REQUIRE_ESCALATED,
}

# policy      sandbox             command    permissions  expected
TABLE = """
untrusted     read-only           safe       default      skip
untrusted     read-only           safe       escalated    skip+bypass
untrusted     read-only           unsafe     default      ask
untrusted     read-only           unsafe     escalated    ask+bypass
untrusted     read-only           dangerous  default      ask
untrusted     read-only           dangerous  escalated    ask+bypass
untrusted     workspace-write     safe       default      skip
untrusted     workspace-write     safe       escalated    skip+bypass
untrusted     workspace-write     unsafe     default      ask
untrusted     workspace-write     unsafe     escalated    ask+bypass
untrusted     workspace-write     dangerous  default      ask
untrusted     workspace-write     dangerous  escalated    ask+bypass
untrusted     danger-full-access  safe       default      skip
untrusted     danger-full-access  safe       escalated    skip
untrusted     danger-full-access  unsafe     default      ask
untrusted     danger-full-access  unsafe     escalated    ask
untrusted     danger-full-access  dangerous  default      ask
untrusted     danger-full-access  dangerous  escalated    ask
on-failure    read-only           safe       default      skip
on-failure    read-only           safe       escalated    skip+bypass
on-failure    read-only           unsafe     default      skip
on-failure    read-only           unsafe     escalated    skip+bypass
on-failure    read-only           dangerous  default      ask
on-failure    read-only           dangerous  escalated    ask+bypass
on-failure    workspace-write     safe       default      skip
on-failure    workspace-write     safe       escalated    skip+bypass
on-failure    workspace-write     unsafe     default      skip
on-failure    workspace-write     unsafe     escalated    skip+bypass
on-failure    workspace-write     dangerous  default      ask
on-failure    workspace-write     dangerous  escalated    ask+bypass
on-failure    danger-full-access  safe       default      skip
on-failure    danger-full-access  safe       escalated    skip
on-failure    danger-full-access  unsafe     default      skip
on-failure    danger-full-access  unsafe     escalated    skip
on-failure    danger-full-access  dangerous  default      ask
on-failure    danger-full-access  dangerous  escalated    ask
on-request    read-only           safe       default      skip
on-request    read-only           safe       escalated    skip+bypass
on-request    read-only           unsafe     default      skip
on-request    read-only           unsafe     escalated    ask+bypass
on-request    read-only           dangerous  default      ask
on-request    read-only           dangerous  escalated    ask+bypass
on-request    workspace-write     safe       default      skip
on-request    workspace-write     safe       escalated    skip+bypass
on-request    workspace-write     unsafe     default      skip
on-request    workspace-write     unsafe     escalated    ask+bypass
on-request    workspace-write     dangerous  default      ask
on-request    workspace-write     dangerous  escalated    ask+bypass
on-request    danger-full-access  safe       default      skip
on-request    danger-full-access  safe       escalated    skip
on-request    danger-full-access  unsafe     default      skip
on-request    danger-full-access  unsafe     escalated    skip
on-request    danger-full-access  dangerous  default      ask
on-request    danger-full-access  dangerous  escalated    ask
never         read-only           safe       default      skip
never         read-only           safe       escalated    skip+bypass
never         read-only           unsafe     default      skip
never         read-only           unsafe     escalated    skip+bypass
never         read-only           dangerous  default      forbid
never         read-only           dangerous  escalated    forbid
never         workspace-write     safe       default      skip
never         workspace-write     safe       escalated    skip+bypass
never         workspace-write     unsafe     default      skip
never         workspace-write     unsafe     escalated    skip+bypass
never         workspace-write     dangerous  default      forbid
never         workspace-write     dangerous  escalated    forbid
never         danger-full-access  safe       default      skip
never         danger-full-access  safe       escalated    skip
never         danger-full-access  unsafe     default      skip
never         danger-full-access  unsafe     escalated    skip
never         danger-full-access  dangerous  default      forbid
never         danger-full-access  dangerous  escalated    forbid
"""


def _rows() -> list[Any]:
    rows = []
    for line in TABLE.strip().splitlines():
        policy, sandbox, kind, perms, expected = line.split()
        row = (ApprovalPolicy(policy), SandboxMode(sandbox), kind, perms, expected)
        rows.append(pytest.param(*row, id=f"{policy}-{sandbox}-{kind}-{perms}"))
    return rows


def _summary(requirement: ApprovalRequirement, sandbox: SandboxMode) -> str:
    if isinstance(requirement, Forbidden):
        return "forbid"
    kind = "skip" if isinstance(requirement, Skip) else "ask"
    if requirement.bypass_sandbox and sandbox is not SandboxMode.DANGER_FULL_ACCESS:
        kind += "+bypass"
    return kind


@pytest.mark.parametrize(("policy", "sandbox", "kind", "perms", "expected"), _rows())
def test_exec_approval_truth_table(
    policy: ApprovalPolicy, sandbox: SandboxMode, kind: str, perms: str, expected: str
) -> None:
    requirement = exec_approval_requirement(policy, sandbox, [COMMANDS[kind]], PERMISSIONS[perms])
    assert _summary(requirement, sandbox) == expected
    if isinstance(requirement, Forbidden):
        assert requirement.reason == "`rm -rf /tmp/x` rejected: blocked by policy"


HEREDOC_WRITE = ["bash", "-lc", "cat <<'EOF' > notes.txt\nhi\nEOF"]
SCRIPT_RM = ["bash", "-lc", "ls && rm -rf /tmp/x"]

# Whole argvs, split the way the shell handlers split them (commands_of).
COMPOUND = [
    pytest.param(
        "untrusted", ["bash", "-lc", "ls && cat README.md | wc -l"], "skip", id="safe-script"
    ),
    pytest.param("untrusted", ["bash", "-lc", "ls && cargo build"], "ask", id="mixed-script"),
    pytest.param("on-request", SCRIPT_RM, "ask", id="dangerous-part-asks"),
    pytest.param("never", SCRIPT_RM, "forbid", id="dangerous-part-forbidden"),
    pytest.param("never", ["bash", "-lc", "rm -rf x <<EOF\nEOF"], "forbid", id="heredoc-rm"),
    pytest.param("on-request", ["bash", "-lc", "echo hi > out.txt"], "skip", id="redirect"),
    pytest.param("untrusted", ["bash", "-lc", ""], "ask", id="empty-script"),
    pytest.param("untrusted", HEREDOC_WRITE, "ask", id="heredoc-prefix-is-never-known-safe"),
]


@pytest.mark.parametrize(("policy", "argv", "expected"), COMPOUND)
def test_compound_commands(policy: str, argv: list[str], expected: str) -> None:
    sandbox = SandboxMode.WORKSPACE_WRITE
    commands, complex_parsed = exec_policy_commands(argv)
    requirement = exec_approval_requirement(
        ApprovalPolicy(policy), sandbox, commands, complex_parsed=complex_parsed, argv=argv
    )
    assert _summary(requirement, sandbox) == expected


def test_forbidden_reason_names_the_whole_command() -> None:
    requirement = exec_approval_requirement(
        ApprovalPolicy.NEVER, SandboxMode.WORKSPACE_WRITE, commands_of(SCRIPT_RM), argv=SCRIPT_RM
    )
    assert requirement == Forbidden("`bash -lc 'ls && rm -rf /tmp/x'` rejected: blocked by policy")


def test_needs_approval_carries_the_justification() -> None:
    requirement = exec_approval_requirement(
        ApprovalPolicy.UNTRUSTED,
        SandboxMode.WORKSPACE_WRITE,
        [["cargo", "build"]],
        justification="build it",
    )
    assert requirement == NeedsApproval("build it")


# Scripts the parser used to read as known-safe while bash runs something else (or
# splits the words differently). Judged under on-request with `require_escalated`, the
# model's way out of the sandbox: known-safe would run unasked outside it. Codex shares
# the rows so named: it keeps a word's source text (`utf8_text` in bash.rs, so
# `--out\put` is not `--output`) and skips git's -C / --git-dir / --work-tree
# (`find_git_subcommand` in is_dangerous_command.rs).
FOOLED = [
    P("echo hi\n\\touch /tmp/x", id="newline-then-escaped-command"),
    P("git status -\\\n-output=/tmp/x", id="line-continuation-inside-a-word"),
    P("git diff --out\\put=/tmp/x", id="escape-inside-an-option-codex-shares-this"),
    P("ls\vtouch x", id="vertical-tab"),
    P("ls\ftouch x", id="form-feed"),
    P("ls\rtouch x", id="carriage-return"),
    P("echo a\u00a0b", id="no-break-space"),
    P("echo a\u3000b", id="ideographic-space"),
    P("ls \\ -la", id="escaped-space-at-word-start"),
    P("rg x {--pre=sh,.}", id="brace-expansion-to-an-option"),
    P("rg x *", id="glob-that-may-expand-to-an-option"),
    P("git -C /tmp/repo status", id="git-C-codex-shares-this"),
    P("git --git-dir=/tmp/repo/.git log", id="git-git-dir-codex-shares-this"),
    P("git --work-tree=/tmp/w --git-dir=/tmp/g status", id="git-work-tree-codex-shares-this"),
]


def _escalated(argv: list[str], **place: Any) -> str:
    sandbox = SandboxMode.WORKSPACE_WRITE
    commands, complex_parsed = exec_policy_commands(argv)
    requirement = exec_approval_requirement(
        ApprovalPolicy.ON_REQUEST,
        sandbox,
        commands,
        SandboxPermissions.REQUIRE_ESCALATED,
        complex_parsed=complex_parsed,
        argv=argv,
        **place,
    )
    return _summary(requirement, sandbox)


@pytest.mark.parametrize("script", FOOLED)
def test_scripts_that_fooled_the_parser_ask(script: str) -> None:
    assert _escalated(["bash", "-lc", script]) == "ask+bypass"


def test_config_override_hooks_path_asks() -> None:
    """Already asked before: ``-c`` was refused by Codex's rule too."""
    assert _escalated(["bash", "-lc", "git -c core.hooksPath=/tmp/h status"]) == "ask+bypass"


def test_escalated_safe_script_still_skips() -> None:
    assert _escalated(["bash", "-lc", "ls -la && git status -s"]) == "skip+bypass"


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace where the model wrote an executable ``ls``; HOME is elsewhere."""
    ws = real(tmp_path / "ws")
    ws.mkdir()
    (ws / "ls").write_text("#!/bin/sh\ntouch /tmp/pwned\n")
    (ws / "ls").chmod(0o755)
    monkeypatch.setenv("HOME", str(tmp_path))
    return ws


PROGRAMS = [
    P(["./ls"], "ask+bypass", id="model-written-ls-codex-shares-this"),
    P(["bash", "-lc", "./ls -la"], "ask+bypass", id="model-written-ls-in-script-codex-shares-this"),
    P(["{ws}/ls"], "ask+bypass", id="model-written-ls-by-absolute-path-codex-shares-this"),
    P(["/bin/ls"], "skip+bypass", id="system-ls"),
    P(["bash", "-lc", "/bin/ls -la"], "skip+bypass", id="system-ls-in-script"),
    P(["ls"], "skip+bypass", id="ls-found-on-path"),
]


@pytest.mark.parametrize(("argv", "expected"), PROGRAMS)
def test_program_the_model_wrote_asks(workspace: Path, argv: list[str], expected: str) -> None:
    argv = [a.replace("{ws}", str(workspace)) for a in argv]
    assert _escalated(argv, cwd=workspace, writable_roots=[workspace]) == expected
