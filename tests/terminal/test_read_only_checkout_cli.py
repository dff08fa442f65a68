"""``agent-magics exec`` in a read-only checkout under ``workspace-write`` (issue 34): the
sandbox starts with what it can, commands read the folder, and a write that fails there
reaches the model and the person as the command's own output, not as a debug dump.

The working folder is made read-only for real: a read-only bind mount of it, made in a
private mount namespace (``unshare -m``) that only the CLI runs in, so nothing is left
mounted when it ends. Permission bits would not do: these tests may run as root."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.tools.sandbox.platform import MECHANISM_ENV
from tests.helpers.sandbox import LINUX_MECHANISMS, require_mechanism

pytestmark = pytest.mark.slow

KEY = "sk-read-only-0123456789"
READ_ONLY_MOUNT = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'


def private_mounts_problem() -> str | None:
    """Why this process cannot make a read-only mount in a private namespace, or None."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return "no unshare or mount program"
    try:
        done = subprocess.run(
            ["unshare", "-m", "sh", "-c", 'mount -t tmpfs none "$0"', "/mnt"],
            capture_output=True, text=True, timeout=30,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if done.returncode == 0 else done.stderr.strip() or "unshare -m failed"


def run_read_only(tmp_path: Path, mechanism: str, turns: list[Any]) -> tuple[Any, Any, Path]:
    """Run exec (``-a never``) in ``tmp_path/ws`` mounted read-only; server, result, ws."""
    require_mechanism(mechanism)
    if (problem := private_mounts_problem()) is not None:
        pytest.skip(f"cannot mount the working folder read-only here: {problem}")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "data.txt").write_text("the data\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(tmp_path), "OPENAI_API_KEY": KEY, "NO_COLOR": "", MECHANISM_ENV: mechanism}
    with ScriptedResponsesServer(turns) as server:
        argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
        argv += ["--base-url", server.base_url, "-m", "m", "-C", str(ws), "-a", "never"]
        argv += ["-s", "workspace-write", "-c", "allow_login_shell=false", "look"]
        done = subprocess.run(
            ["unshare", "-m", "sh", "-c", READ_ONLY_MOUNT, str(ws), *argv], env=env,
            cwd=tmp_path, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip
    return server, done, ws


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_in_a_read_only_checkout_commands_run_and_a_failed_write_reads_as_its_output(
    tmp_path: Path, mechanism: str
) -> None:
    turns: list[Any] = [
        [function_call("exec_command", {"cmd": "cat data.txt"}, "c1")],
        [function_call("exec_command", {"cmd": "touch new.txt"}, "c2")],
        [function_call("exec_command", {"cmd": "mkdir .git"}, "c3")],
        [message("Read it; the folder is read-only.")],
    ]
    server, done, ws = run_read_only(tmp_path, mechanism, turns)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Read it; the folder is read-only.\n"
    read = server.outputs(1)["c1"]
    assert "Process exited with code 0" in read and read.endswith("Output:\nthe data\n")
    for call, n in (("c2", 2), ("c3", 3)):
        said = server.outputs(n)[call]
        assert "Process exited with code 1" in said, said
        assert "Read-only file system" in said
        assert "CreateProcess" not in said and "StreamOutput" not in said  # no dump
    err = done.stderr
    assert "bwrap:" not in err and "CreateProcess" not in err and "StreamOutput" not in err
    assert f"The working folder {ws} is read-only on this machine" in err  # said once
    assert "touch: cannot touch 'new.txt': Read-only file system" in err
    assert sorted(p.name for p in ws.iterdir()) == ["data.txt"]  # nothing made, no .git
