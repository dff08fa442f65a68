"""apply_patch cannot be raced out of the workspace.

A process flips ``ws/d`` between a real folder (holding ``x.txt``) and a symlink to a
folder outside every writable root, while a stream of patches writes ``d/x.txt``. The path
check sees a folder inside the workspace; a write that resolved the path again later would
follow the symlink out. Every write now walks down from an opened root with ``O_NOFOLLOW``
and checks what it reached, so nothing outside may change, whatever the timing.

The same stream is sent once through the real handler (patch kinds: add, update, delete,
move) and once through ``agent-magics exec -a never -s workspace-write``, where the model's
own ``exec_command`` starts the flipping process inside the sandbox. Codex does not share
this hole: it runs the write step as a child process inside the same sandbox as commands
(``codex-rs/core/src/tools/runtimes/apply_patch.rs`` builds a command for its own
executable), so the kernel refuses the redirected write.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_magics.apply_patch import PatchApplyError, verify_patch
from agent_magics.apply_patch.files import ConfinedFiles, OutsideWritableRoots
from agent_magics.errors import RespondToModel
from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode
from agent_magics.testing import ScriptedResponsesServer, custom_tool_call, function_call, message
from agent_magics.tools.context import CustomPayload, SessionServices, ToolInvocation, TurnContext
from agent_magics.tools.handlers.apply_patch import ApplyPatchHandler
from agent_magics.tools.sandbox.platform import MECHANISM_ENV
from agent_magics.tools.sandbox.roots import real
from tests.helpers.sandbox import Arena, close, require_mechanism

HANDLER = ApplyPatchHandler()
PATCHES_PER_KIND = 150
CLI_PATCHES = 300
KEY = "sk-dummy-R3x8P5m2T6"
ORIGINAL = "old\n"

PATCHES = {
    "add": "*** Begin Patch\n*** Add File: d/x.txt\n+pwned\n*** End Patch",
    "update": "*** Begin Patch\n*** Update File: d/x.txt\n@@\n-old\n+pwned\n*** End Patch",
    "delete": "*** Begin Patch\n*** Delete File: d/x.txt\n*** End Patch",
    "move": "*** Begin Patch\n*** Update File: d/x.txt\n*** Move to: d/y.txt\n@@\n-old\n+pwned\n"
    "*** End Patch",
    "add-git": "*** Begin Patch\n*** Add File: g/x.txt\n+pwned\n*** End Patch",
    "add-config": "*** Begin Patch\n*** Add File: m/config.toml\n+pwned\n*** End Patch",
}

# Swaps ``d`` (a folder holding x.txt) with ``d_alt`` (a symlink to argv[1]), ``g`` with
# a symlink to the protected ``.git`` and ``m`` with one to the guarded, missing
# ``.agent_magics``, atomically with renameat2(RENAME_EXCHANGE), until killed.
FLIPPER = textwrap.dedent(
    """\
    import ctypes, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    names = {"d": sys.argv[1], "g": ".git", "m": ".agent_magics"}
    for name, target in names.items():
        os.mkdir(name)
        os.symlink(target, name + "_alt")
    print("flipping", flush=True)
    n = 0
    while True:
        n += 1
        for name in names:
            libc.renameat2(-100, name.encode(), -100, (name + "_alt").encode(), 2)
        try:  # refill x.txt in the folder, wherever it is (so both states last as long)
            with open("d_alt/x.txt" if n % 2 else "d/x.txt", "w") as f:
                f.write("old\\n")
        except OSError:
            pass
        for _ in range(200):
            pass
    """
)


def reset_outside(arena: Arena) -> None:
    for entry in arena.outside.iterdir():
        entry.unlink()
    (arena.outside / "x.txt").write_text(ORIGINAL)


def outside_changed(arena: Arena) -> bool:
    entries = sorted(p.name for p in arena.outside.iterdir())
    return entries != ["x.txt"] or (arena.outside / "x.txt").read_text() != ORIGINAL


def git_changed(arena: Arena) -> bool:
    """Whether anything appeared in ``.git``, or a patch wrote a project config."""
    git = sorted(p.name for p in (arena.ws / ".git").iterdir())
    return git != ["config"] or os.path.lexists(arena.ws / ".agent_magics" / "config.toml")


@pytest.fixture
def flipper(arena: Arena) -> Iterator[subprocess.Popen[str]]:
    reset_outside(arena)
    script = arena.root / "flip.py"
    script.write_text(FLIPPER)
    proc = subprocess.Popen(
        [sys.executable, str(script), str(arena.outside)],
        cwd=arena.ws,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "flipping\n"
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


async def apply(cwd: Path, patch: str) -> str:
    turn = TurnContext(
        cwd=cwd,
        approval_policy=ApprovalPolicy.NEVER,
        sandbox_mode=SandboxMode.WORKSPACE_WRITE,
    )
    services = SessionServices()
    inv = ToolInvocation("c1", HANDLER.name, CustomPayload(patch), turn, services)
    try:
        return (await HANDLER.handle(inv)).text
    except RespondToModel as exc:
        return exc.message
    finally:
        await close(services)


@pytest.mark.slow
async def test_raced_patches_never_write_outside(
    arena: Arena, flipper: subprocess.Popen[str]
) -> None:
    escaped: dict[str, int] = {}
    applied: dict[str, int] = {}
    for kind, patch in PATCHES.items():
        escaped[kind] = applied[kind] = 0
        for _ in range(PATCHES_PER_KIND):
            text = await apply(arena.ws, patch)
            applied[kind] += "Success." in text
            if outside_changed(arena) or git_changed(arena):
                escaped[kind] += 1
                reset_outside(arena)
                for entry in (arena.ws / ".git").iterdir():
                    if entry.name != "config":
                        entry.unlink()
                shutil.rmtree(arena.ws / ".agent_magics", ignore_errors=True)
    assert escaped == dict.fromkeys(PATCHES, 0), (list(escaped.items()), applied)
    # The race was real: some patches found the folder and were applied.
    assert sum(applied.values()) > 0, applied


@pytest.mark.slow
def test_model_races_patches_through_exec(arena: Arena) -> None:
    """The model starts the flipper with exec_command (inside bubblewrap) and sends a
    stream of patches; nothing outside the workspace changes."""
    require_mechanism("bwrap")
    reset_outside(arena)
    (arena.ws / "flip.py").write_text(FLIPPER)
    start = function_call(
        "exec_command",
        {"cmd": f"{sys.executable} flip.py {arena.outside}", "yield_time_ms": 500},
        "flip",
    )
    kinds = list(PATCHES)
    calls: list[dict[str, Any]] = [
        custom_tool_call("apply_patch", PATCHES[kinds[i % len(kinds)]], f"p{i}")
        for i in range(CLI_PATCHES)
    ]
    script = [[start], calls, [message("done")]]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(arena.home), "OPENAI_API_KEY": KEY, MECHANISM_ENV: "bwrap"}
    with ScriptedResponsesServer(script) as server:
        argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
        argv += ["--base-url", server.base_url, "-m", "m", "-s", "workspace-write"]
        argv += ["-a", "never", "-C", str(arena.ws), "race it"]
        done = subprocess.run(
            argv, env=env, cwd=arena.ws, capture_output=True, text=True, timeout=300,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "flipping" in server.outputs(1)["flip"]
        outputs = server.outputs(2)
    assert not outside_changed(arena), sorted(p.name for p in arena.outside.iterdir())
    assert not git_changed(arena)
    # The race was met: some patches passed the path check and were then applied, or
    # refused at the write because the folder had become a symlink meanwhile.
    met = ("Success.", "Operation not permitted")
    assert any(word in str(out) for out in outputs.values() for word in met), outputs


def confined(arena: Arena) -> ConfinedFiles:
    ws = real(arena.ws)
    return ConfinedFiles((ws,), (ws / ".git",))


@pytest.mark.parametrize(
    ("link", "target"),
    [
        pytest.param("out_dir", "{outside}", id="absolute-link-out"),
        pytest.param("up", "../outside", id="relative-link-out"),
        pytest.param("git", ".git", id="link-to-git"),
        pytest.param("chain", "up", id="link-to-link-out"),
    ],
)
@pytest.mark.parametrize("op", ["add", "update", "delete"])
def test_confined_writes_refuse_a_symlinked_folder_out(
    arena: Arena, link: str, target: str, op: str
) -> None:
    """Without any race: a folder that is a symlink out of the root, or into ``.git``,
    is refused for every kind of change, and nothing there changes."""
    (arena.ws / "up").symlink_to("../outside")
    if link != "up":
        (arena.ws / link).symlink_to(arena.fill(target))
    (arena.outside / "x.txt").write_text(ORIGINAL)
    (arena.ws / ".git" / "x.txt").write_text(ORIGINAL)
    before = arena.snapshot()
    body = {
        "add": f"*** Add File: {link}/x.txt\n+pwned",
        "update": f"*** Update File: {link}/x.txt\n@@\n-old\n+pwned",
        "delete": f"*** Delete File: {link}/x.txt",
    }[op]
    verified = verify_patch(f"*** Begin Patch\n{body}\n*** End Patch", arena.ws)
    with pytest.raises(PatchApplyError, match="Operation not permitted"):
        verified.apply(confined(arena))
    assert arena.snapshot() == before
    assert (arena.ws / ".git" / "x.txt").read_text() == ORIGINAL


def test_confined_writes_follow_symlinks_that_stay_inside(arena: Arena) -> None:
    (arena.ws / "real").mkdir()
    (arena.ws / "real" / "f.txt").write_text(ORIGINAL)
    (arena.ws / "alias").symlink_to("real")
    (arena.ws / "abs").symlink_to(arena.ws / "real")
    (arena.ws / "file_link").symlink_to("real/f.txt")
    patch = (
        "*** Begin Patch\n*** Add File: alias/new/a.txt\n+a\n*** Add File: abs/b.txt\n+b\n"
        "*** Update File: file_link\n@@\n-old\n+new\n*** End Patch"
    )
    verify_patch(patch, arena.ws).apply(confined(arena))
    assert (arena.ws / "real" / "new" / "a.txt").read_text() == "a\n"
    assert (arena.ws / "real" / "b.txt").read_text() == "b\n"
    assert (arena.ws / "real" / "f.txt").read_text() == "new\n"
    assert (arena.ws / "file_link").is_symlink()


def test_confined_write_refuses_a_file_symlink_out(arena: Arena) -> None:
    (arena.outside / "x.txt").write_text(ORIGINAL)
    (arena.ws / "x.txt").symlink_to(arena.outside / "x.txt")
    with pytest.raises(OutsideWritableRoots):
        confined(arena).write(str(arena.ws / "x.txt"), b"pwned\n")
    assert (arena.outside / "x.txt").read_text() == ORIGINAL
