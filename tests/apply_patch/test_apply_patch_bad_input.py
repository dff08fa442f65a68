"""Bad patch targets never end a turn, freeze it or fill its memory.

Each case goes through the real handler under ``workspace-write`` and under
``danger-full-access`` and must come back as text for the model. Codex shares the reads
that freeze: its verification reads every Update and Delete target with
``std::fs::read_to_string`` before the sandboxed write
(``codex-rs/apply-patch/src/invocation.rs``, ``lib.rs``), so ``Delete File: /dev/zero``
grows without bound there and an ``Update File:`` on a FIFO waits for a writer forever.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from agent_magics.apply_patch.files import MAX_FILE_BYTES
from agent_magics.apply_patch.verified import MAX_PATH_BYTES
from agent_magics.errors import RespondToModel
from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode
from agent_magics.tools.context import CustomPayload, SessionServices, ToolInvocation, TurnContext
from agent_magics.tools.handlers.apply_patch import ApplyPatchHandler

HANDLER = ApplyPatchHandler()
HANG_GUARD_SECONDS = 30
"""Only there so a regression fails instead of hanging the suite."""
DEEP = "/".join(["a"] * 3000) + "/x.txt"


def patch(body: str) -> str:
    return f"*** Begin Patch\n{body}\n*** End Patch"


async def answer(cwd: Path, text: str, mode: SandboxMode) -> str:
    turn = TurnContext(cwd=cwd, approval_policy=ApprovalPolicy.NEVER, sandbox_mode=mode)
    inv = ToolInvocation("c1", HANDLER.name, CustomPayload(text), turn, SessionServices())
    try:
        out = await asyncio.wait_for(HANDLER.handle(inv), HANG_GUARD_SECONDS)
    except RespondToModel as exc:
        return exc.message
    return out.text


MODES = [
    pytest.param(mode, id=mode.value)
    for mode in (SandboxMode.WORKSPACE_WRITE, SandboxMode.DANGER_FULL_ACCESS)
]

CASES = [
    pytest.param(patch("*** Add File: a\x00b.txt\n+x"), "unexpected NUL byte", id="nul-in-path"),
    pytest.param(
        patch("*** Update File: f.txt\n*** Move to: a\x00b.txt\n@@\n-x\n+y"),
        "unexpected NUL byte",
        id="nul-in-move",
    ),
    pytest.param(patch("*** Add File: a\udc80b.txt\n+x"), "lone surrogate", id="surrogate-path"),
    pytest.param(patch("*** Add File: ok.txt\n+\udc80"), "lone surrogate", id="surrogate-line"),
    pytest.param(patch(f"*** Add File: {DEEP}\n+x"), "File name too long", id="3000-deep-add"),
    pytest.param(
        patch(f"*** Update File: {DEEP}\n@@\n-x\n+y"), "File name too long", id="3000-deep-update"
    ),
    pytest.param(patch("*** Delete File: /dev/zero"), "not a regular file", id="delete-dev-zero"),
    pytest.param(
        patch("*** Update File: /dev/zero\n@@\n-x\n+y"), "not a regular file", id="update-dev-zero"
    ),
    pytest.param(
        patch("*** Update File: fifo\n@@\n-x\n+y"), "not a regular file", id="update-fifo"
    ),
    pytest.param(patch("*** Delete File: fifo"), "not a regular file", id="delete-fifo"),
    pytest.param(patch("*** Add File: fifo\n+y"), "Failed to write file", id="add-over-fifo"),
    pytest.param(
        patch("*** Update File: big.txt\n@@\n-x\n+y"), f"larger than {MAX_FILE_BYTES}", id="big"
    ),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("text", "expected"), CASES)
async def test_bad_target_is_answered_to_the_model(
    tmp_path: Path, mode: SandboxMode, text: str, expected: str
) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "f.txt").write_text("x\n")
    with open(tmp_path / "big.txt", "wb") as handle:
        handle.truncate(MAX_FILE_BYTES + 1)  # sparse: no disk used
    before = sorted(p.name for p in tmp_path.iterdir())
    out = await answer(tmp_path, text, mode)
    assert expected in out
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written
    assert (tmp_path / "f.txt").read_text() == "x\n"


def test_path_limit_is_the_kernels() -> None:
    assert os.pathconf("/", "PC_PATH_MAX") == MAX_PATH_BYTES
