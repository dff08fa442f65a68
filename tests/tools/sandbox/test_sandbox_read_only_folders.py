"""Folders the sandbox cannot set up as asked (issue 34): a writable root that does not
exist, a protected path whose mount point cannot be made (its folder is read-only here).
bubblewrap starts all the same, and never with less protection than the folder has."""

from __future__ import annotations

import subprocess
from pathlib import Path

from agent_magics.tools.sandbox import SandboxSpec, bwrap
from agent_magics.tools.sandbox.roots import unwritable
from tests.helpers.sandbox import require_mechanism


def test_a_protected_path_with_no_mount_point_keeps_its_folder_read_only() -> None:
    ws = Path("/project/ws")
    spec = SandboxSpec("bwrap", (ws,), (ws / ".git", ws / ".agent_magics"), False)
    unmade = [ws / ".git", ws / ".agent_magics"]
    bound = ["--bind", "/project/ws", "/project/ws"]
    read_only = ["--ro-bind", "/project/ws", "/project/ws"]  # once: nothing can be made there
    assert bwrap.bwrap_args(spec, unmade=unmade)[-6:] == [*bound, *read_only]
    deep = Path("/project/ws/.venv/lib")
    spec = SandboxSpec("bwrap", (ws,), (deep,), False)
    assert bwrap.bwrap_args(spec, unmade=[deep])[-3:] == ["--ro-bind", "/project/ws", "/project/ws"]


def test_a_writable_root_that_does_not_exist_is_left_out(tmp_path: Path) -> None:
    require_mechanism("bwrap")
    ws, gone = tmp_path / "ws", tmp_path / "gone"
    ws.mkdir()
    spec = SandboxSpec("bwrap", (gone, ws), (ws / ".git",), network=False)
    assert unwritable(spec.writable_roots) == [gone]
    argv = bwrap.wrap(spec, ["/bin/sh", "-c", "echo hi > note.txt && ! mkdir .git"])
    try:
        done = subprocess.run(argv, cwd=ws, capture_output=True, text=True, timeout=60)
    finally:
        bwrap.mount_points.release(argv)
    assert done.returncode == 0, done.stderr
    assert (ws / "note.txt").read_text() == "hi\n"
    assert not (ws / ".git").exists() and not gone.exists()
