"""The shell's start-up files, end to end through ``agent-magics exec`` under both
sandbox mechanisms, with the shell snapshot on (the default).

* A home inside a writable root (the working folder is the home, as on Binder where the
  repository is cloned into it): its ``.bash_profile``, ``.profile`` and ``.bashrc`` may
  be the repository's, so none of them runs, neither for the snapshot at the session's
  start nor in a command, and a known-safe ``ls`` runs unasked under ``-a untrusted``.
* A home outside: the start-up files' output (pyenv's "cannot rehash" inside the
  read-only sandbox) does not reach a command's output, even the first command's, while
  the command's own stdout and stderr do.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.tools.sandbox.platform import MECHANISM_ENV
from tests.helpers.sandbox import KEY, LINUX_MECHANISMS, Arena, require_mechanism

pytestmark = pytest.mark.skipif(not Path("/bin/bash").exists(), reason="needs bash")

STARTUP = (".bash_profile", ".bash_login", ".profile", ".bashrc", ".zshenv")


def run(arena: Arena, mechanism: str, home: Path, policy: str, cmd: str) -> tuple[str, str]:
    """``cmd`` as the model's only call in ``agent-magics exec -a POLICY`` with ``HOME``
    at ``home``; the call's output and the run's stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(home), "SHELL": "/bin/bash", "OPENAI_API_KEY": KEY}
    env[MECHANISM_ENV] = mechanism
    call: dict[str, Any] = {"cmd": cmd, "yield_time_ms": 10_000}
    script = [[function_call("exec_command", call, "c1")], [message("done")]]
    with ScriptedResponsesServer(script) as server:
        argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
        argv += ["--base-url", server.base_url, "-m", "m", "-s", "workspace-write"]
        argv += ["-a", policy, "-c", "sessions_dir=false", "-C", str(arena.ws), "go"]
        done = subprocess.run(
            argv, env=env, cwd=arena.ws, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        output: str = server.outputs(1)["c1"]
    return output, done.stderr


def plant(home: Path, body: str) -> None:
    for name in STARTUP:
        (home / name).write_text(body.replace("NAME", name))


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_repository_startup_files_never_run_and_ls_runs_unasked(
    arena: Arena, mechanism: str
) -> None:
    """Binder's layout: the home is the working folder and its start-up files came with
    the repository. ``ls`` is known-safe again (it asked, and a headless run denied it,
    when a login shell would have run those files), and no start-up file ran: not for
    the snapshot at the session's start (unconfined), not in the command."""
    require_mechanism(mechanism)
    home = arena.ws
    plant(home, 'touch "$HOME/ran-NAME"\necho "startup noise" >&2\n')
    (home / "data.csv").write_text("a,b\n")
    output, stderr = run(arena, mechanism, home, "untrusted", "ls")
    assert "approval" not in stderr  # nobody was asked, nothing was denied
    assert "reads no start-up file" in stderr  # said once, with why
    assert "data.csv" in output and "Process exited with code 0" in output
    assert "startup noise" not in output
    assert sorted(p.name for p in home.glob("ran-*")) == []


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_repository_startup_files_do_not_run_in_a_command_that_runs(
    arena: Arena, mechanism: str
) -> None:
    """Under ``-a never`` every command runs unasked, in the sandbox; still none of the
    home's start-up files runs before it, though the command asked for a login shell."""
    require_mechanism(mechanism)
    home = arena.ws
    plant(home, 'touch "$HOME/ran-NAME"\n')
    output, _ = run(arena, mechanism, home, "never", "echo command-ran; python3 -V")
    assert "command-ran" in output and "Process exited with code 0" in output
    assert sorted(p.name for p in home.glob("ran-*")) == []


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_startup_noise_stays_out_of_the_first_command(arena: Arena, mechanism: str) -> None:
    """A home outside the writable roots whose profile writes to stderr (as pyenv does
    when its shims folder is read-only) and takes a moment: the first command, started
    before the snapshot is ready, shows its own stdout and stderr and none of the
    profile's; the profile still shapes the command (its exported variable is seen)."""
    require_mechanism(mechanism)
    home = arena.home
    (home / ".bash_profile").write_text(
        "sleep 1\n"
        'echo "pyenv: cannot rehash: $HOME/.pyenv/shims isn\'t writable" >&2\n'
        "echo profile-stdout\n"
        "export FROM_PROFILE=yes\n"
    )
    cmd = "echo out=$FROM_PROFILE; echo own-stderr >&2"
    output, stderr = run(arena, mechanism, home, "never", cmd)
    assert "reads no start-up file" not in stderr  # the home is the person's
    assert "out=yes" in output and "own-stderr" in output
    assert "cannot rehash" not in output and "profile-stdout" not in output
