"""apply_patch sent through a shell tool: detection, refusal of bare patches, and the
in-process application through exec_command, shell_command and shell."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agent_magics.errors import RespondToModel
from agent_magics.tools.context import (
    FunctionPayload,
    SessionServices,
    ShellInfo,
    ToolInvocation,
    TurnContext,
)
from agent_magics.tools.handlers.shell import ShellCommandHandler, ShellHandler
from agent_magics.tools.handlers.unified_exec import ExecCommandHandler
from agent_magics.tools.runtimes.intercept import IMPLICIT_PATCH, PatchCall, find_apply_patch
from agent_magics.tools.unified_exec import manager_for

PATCH = "*** Begin Patch\n*** Add File: d.txt\n+dd\n*** End Patch"
HEREDOC = f"apply_patch <<'EOF'\n{PATCH}\nEOF"
CWD = Path("/project/ws")


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        pytest.param(["apply_patch", PATCH], PatchCall(PATCH, CWD), id="direct"),
        pytest.param(["applypatch", PATCH], PatchCall(PATCH, CWD), id="direct-alias"),
        pytest.param(["bash", "-lc", HEREDOC], PatchCall(PATCH, CWD), id="bash-lc"),
        pytest.param(["/bin/zsh", "-c", HEREDOC], PatchCall(PATCH, CWD), id="zsh-path"),
        pytest.param(["sh", "-c", HEREDOC + "\n"], PatchCall(PATCH, CWD), id="trailing-newline"),
        pytest.param(
            ["bash", "-lc", HEREDOC.replace("'EOF'", '"EOF"')],
            PatchCall(PATCH, CWD),
            id="double-quoted-mark",
        ),
        pytest.param(
            ["bash", "-lc", HEREDOC.replace("'EOF'", "EOF")], PatchCall(PATCH, CWD), id="bare-mark"
        ),
        pytest.param(
            ["bash", "-lc", HEREDOC.replace("EOF", "PATCH")], PatchCall(PATCH, CWD), id="other-mark"
        ),
        pytest.param(
            ["bash", "-lc", "applypatch <<'EOF'\n" + PATCH + "\nEOF"],
            PatchCall(PATCH, CWD),
            id="heredoc-alias",
        ),
        pytest.param(
            ["bash", "-lc", "cd sub && " + HEREDOC], PatchCall(PATCH, CWD / "sub"), id="cd"
        ),
        pytest.param(
            ["bash", "-lc", "cd 'my dir' && " + HEREDOC],
            PatchCall(PATCH, CWD / "my dir"),
            id="cd-single-quoted",
        ),
        pytest.param(
            ["bash", "-lc", 'cd "a b" && ' + HEREDOC],
            PatchCall(PATCH, CWD / "a b"),
            id="cd-double-quoted",
        ),
        pytest.param(
            ["bash", "-lc", "cd /abs && " + HEREDOC],
            PatchCall(PATCH, Path("/abs")),
            id="cd-absolute",
        ),
        pytest.param(
            ["pwsh", "-NoProfile", "-Command", HEREDOC], PatchCall(PATCH, CWD), id="powershell"
        ),
        pytest.param(["cmd", "/c", HEREDOC], PatchCall(PATCH, CWD), id="cmd"),
        pytest.param(
            ["bash", "-lc", f"apply_patch <<'EOF'\n{PATCH}\n\n\nEOF"],
            PatchCall(PATCH, CWD),
            id="trailing-blank-lines",
        ),
        pytest.param(["bash", "-lc", HEREDOC + " && echo hi"], None, id="command-after-mark-line"),
        pytest.param(["bash", "-lc", HEREDOC + "\necho hi"], None, id="command-after-heredoc"),
        pytest.param(["bash", "-lc", "echo hi; " + HEREDOC], None, id="command-before"),
        pytest.param(["bash", "-lc", "cd a; " + HEREDOC], None, id="cd-with-semicolon"),
        pytest.param(["bash", "-lc", "cd a || " + HEREDOC], None, id="cd-with-or"),
        pytest.param(["bash", "-lc", "cd a b && " + HEREDOC], None, id="cd-two-args"),
        pytest.param(["bash", "-lc", "cd a && cd b && " + HEREDOC], None, id="two-cds"),
        pytest.param(
            ["bash", "-lc", "apply_patch -v <<'EOF'\n" + PATCH + "\nEOF"], None, id="argument"
        ),
        pytest.param(["bash", "-lc", "apply_patch <<'EOF'\n" + PATCH], None, id="unterminated"),
        pytest.param(["bash", "-lc", "echo hello"], None, id="other-command"),
        pytest.param(["fish", "-c", HEREDOC], None, id="unknown-shell"),
        pytest.param(["apply_patch"], None, id="no-patch"),
        pytest.param(["apply_patch", PATCH, "x"], None, id="extra-argument"),
    ],
)
def test_detection(argv: list[str], expected: PatchCall | None) -> None:
    assert find_apply_patch(argv, CWD) == expected


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param([PATCH], id="bare-argv"),
        pytest.param(["bash", "-lc", PATCH], id="bare-script"),
        pytest.param(["bash", "-lc", "<<'EOF'\n" + PATCH + "\nEOF"], id="heredoc-without-command"),
    ],
)
def test_bare_patch_is_refused(argv: list[str]) -> None:
    with pytest.raises(RespondToModel) as caught:
        find_apply_patch(argv, CWD)
    assert (
        caught.value.message
        == IMPLICIT_PATCH
        == (
            "apply_patch verification failed: patch detected without explicit call to apply_patch. "
            'Rerun as ["apply_patch", "<patch>"]'
        )
    )


# -- through the handlers -------------------------------------------------------------------


async def call(handler: Any, args: dict[str, Any], services: SessionServices, cwd: Path) -> str:
    turn = TurnContext(cwd=cwd, shell=ShellInfo("/bin/bash", "bash"))
    inv = ToolInvocation("c1", handler.name, FunctionPayload(json.dumps(args)), turn, services)
    try:
        return str((await handler.handle(inv)).content)
    except RespondToModel as exc:
        return f"ERROR {exc.message}"


async def test_exec_command_applies_the_patch_in_process(tmp_path: Path) -> None:
    services = SessionServices()
    text = await call(ExecCommandHandler(), {"cmd": HEREDOC}, services, tmp_path)
    assert re.fullmatch(
        r"Wall time: \d+\.\d{4} seconds\nOutput:\nExit code: 0\nWall time: \d+(\.\d)? seconds\n"
        r"Output:\nSuccess\. Updated the following files:\nA d\.txt\n",
        text,
    ), text
    assert (tmp_path / "d.txt").read_text() == "dd\n"
    assert services.pending_user_messages == []  # 0.169.0 leaves no note in history
    assert manager_for(services).session_ids == []


async def test_exec_command_with_cd_and_a_bad_patch(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    services = SessionServices()
    patch = "*** Begin Patch\n*** Update File: nope.txt\n@@\n-a\n+b\n*** End Patch"
    cmd = f"cd sub && apply_patch <<'EOF'\n{patch}\nEOF"
    text = await call(ExecCommandHandler(), {"cmd": cmd}, services, tmp_path)
    assert text == (
        "ERROR apply_patch verification failed: Failed to read file to update "
        f"{tmp_path}/sub/nope.txt: No such file or directory (os error 2)"
    )


async def test_shell_command_answers_with_the_patch_output(tmp_path: Path) -> None:
    services = SessionServices()
    text = await call(ShellCommandHandler(), {"command": HEREDOC}, services, tmp_path)
    data = json.loads(text)
    assert data["output"] == "Success. Updated the following files:\nA d.txt\n"
    assert data["metadata"]["exit_code"] == 0
    assert services.pending_user_messages == []


async def test_shell_argv_form(tmp_path: Path) -> None:
    services = SessionServices()
    text = await call(ShellHandler(), {"command": ["apply_patch", PATCH]}, services, tmp_path)
    assert json.loads(text)["metadata"]["exit_code"] == 0
    assert (tmp_path / "d.txt").read_text() == "dd\n"


async def test_bare_patch_through_exec_command(tmp_path: Path) -> None:
    text = await call(ExecCommandHandler(), {"cmd": PATCH}, SessionServices(), tmp_path)
    assert text == f"ERROR {IMPLICIT_PATCH}"
    assert not (tmp_path / "d.txt").exists()


async def test_not_an_apply_patch_runs_in_the_shell(tmp_path: Path) -> None:
    services = SessionServices()
    text = await call(ExecCommandHandler(), {"cmd": HEREDOC + " && echo hi"}, services, tmp_path)
    assert "Process exited with code 127" in text and "apply_patch: command not found" in text
    assert not (tmp_path / "d.txt").exists() and services.pending_user_messages == []
