"""``python`` in the agent's commands is the kernel's (or, in ``agent-magics exec``, the
one that runs it): real venvs (the project's and the ipykernel-6 one), real kernels,
``agent-magics exec`` started from the venv, a scripted model on 127.0.0.1, bash login
shells whose profile sets ``PATH`` anew (as Debian's ``/etc/profile`` does), with the
shell snapshot and without, under both sandbox mechanisms.

Jupyter starts a kernel by its interpreter's path, so nothing puts the venv on the
``PATH`` the kernel inherits: here it is a plain system ``PATH``, and ``VIRTUAL_ENV``
names another venv, as in a terminal where a different one is active.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.tools.sandbox.platform import MECHANISM_ENV
from tests.helpers.kernels import IPYKERNEL6, KERNEL_PYTHONS, TURN_DONE, Kernel, kernel_manager
from tests.helpers.sandbox import LINUX_MECHANISMS, require_mechanism

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not Path("/bin/bash").exists(), reason="needs bash"),
    pytest.mark.home(outside=True),
]

KEY = "sk-kernel-python-secret-13579"
PROFILE = """\
echo run >> "$PROFILE_RUNS"
PATH=/usr/bin:/bin; export PATH
VIRTUAL_ENV=/from/the/profile; export VIRTUAL_ENV
"""
PROBE = (
    "command -v python python3 pip; python -c 'import sys; print(sys.prefix)'; "
    'echo "VIRTUAL_ENV=$VIRTUAL_ENV"'
)


def expected(venv: Path) -> list[str]:
    bins = venv / "bin"
    return [
        str(bins / "python"),
        str(bins / "python3"),
        str(bins / "pip"),
        str(venv),
        f"VIRTUAL_ENV={venv}",
    ]


def seen(output: str) -> list[str]:
    """The probe's lines in an exec_command answer."""
    return output.split("Output:\n", 1)[1].splitlines()


def runs(home: Path) -> int:
    """How often the profile ran (counted in the workspace: sandboxed commands may not
    write in the home)."""
    file = Path(os.environ["PROFILE_RUNS"])
    return len(file.read_text().splitlines()) if file.exists() else 0


@pytest.fixture(autouse=True)
def login_profile(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A login profile in the home (outside the roots commands may write, or it would
    not be read at all) that resets ``PATH``; a ``PATH`` without any venv."""
    (home / ".bash_profile").write_text(PROFILE)
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "profile_runs").touch()  # Landlock: commands add no top entries
    monkeypatch.setenv("PROFILE_RUNS", str(tmp_path / "ws" / "profile_runs"))
    monkeypatch.setenv("PATH", "/usr/local/bin:/usr/bin:/bin")
    monkeypatch.setenv("VIRTUAL_ENV", str(tmp_path / "another-venv"))


def ended(kernel: Kernel) -> int:
    """How many turns the kernel's cells show as ended."""
    return sum(TURN_DONE in v for v in kernel.html_values())


def probe_cell(base_url: str, snapshot: bool) -> str:
    flag = "true" if snapshot else "false"
    return (
        f"%%agent --base-url {base_url} -a on-request -s workspace-write "
        f"-c shell_type=unified_exec -c shell_snapshot={flag}\nwhich python?"
    )


WAIT_FOR_SNAPSHOT = (
    "__import__('agent_magics.tools.unified_exec.snapshot', fromlist=['x']).snapshot_of("
    "get_ipython().magics_manager.registry['AgentMagics'].session.services).wait(30)"
)


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
@pytest.mark.parametrize("python", KERNEL_PYTHONS)
def test_commands_run_the_kernels_python_in_a_login_shell(
    python: str, mechanism: str, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_mechanism(mechanism)
    monkeypatch.setenv(MECHANISM_ENV, mechanism)
    venv = Path(python).parent.parent
    ws = tmp_path / "ws"
    kernel = Kernel(kernel_manager(python, tmp_path / "specs"), ws)
    turns: list[Any] = [
        [function_call("exec_command", {"cmd": PROBE}, "off")],
        [message("done without the snapshot")],
        [message("the snapshot is on")],
        [function_call("exec_command", {"cmd": PROBE}, "on")],
        [message("done with the snapshot")],
    ]
    try:
        kernel.run("%load_ext agent_magics")
        with ScriptedResponsesServer(turns) as server:
            kernel.run(probe_cell(server.base_url, snapshot=False))
            kernel.wait_for(lambda: ended(kernel) == 1, timeout=90)
            assert seen(server.outputs(1)["off"]) == expected(venv)
            assert runs(home) == 1  # the login shell read the profile
            kernel.run(probe_cell(server.base_url, snapshot=True))
            kernel.wait_for(lambda: ended(kernel) == 2, timeout=90)
            assert kernel.value(WAIT_FOR_SNAPSHOT) is True
            assert runs(home) == 2  # read once more, for the snapshot
            kernel.run(probe_cell(server.base_url, snapshot=True))
            kernel.wait_for(lambda: ended(kernel) == 3, timeout=90)
            assert seen(server.outputs(4)["on"]) == expected(venv)
            assert runs(home) == 2  # the command replayed the snapshot
            # The model is told which interpreter `python` is.
            opening = str(server.requests[0]["input"])
            assert f"<python>{python} (Python " in opening
    finally:
        kernel.close()


SHELLS = {
    "login": ["-c", "shell_snapshot=false"],
    "login-snapshot": ["-c", "shell_snapshot=true"],
    "no-login": ["-c", "allow_login_shell=false"],
}


@pytest.mark.parametrize("shell", list(SHELLS))
@pytest.mark.parametrize("how", ["script", "module"])
def test_agent_magics_exec_runs_the_python_it_was_started_from(
    how: str, shell: str, home: Path, tmp_path: Path
) -> None:
    """``agent-magics exec`` from the ipykernel-6 venv, by its script and by ``-m``."""
    if not IPYKERNEL6.exists():
        pytest.skip("no ipykernel 6 venv (see tests/helpers/kernels.py)")
    venv = IPYKERNEL6.parent.parent
    ws = tmp_path / "ws"
    first = [function_call("exec_command", {"cmd": PROBE}, "c1")]
    with ScriptedResponsesServer([first, [message("done")]]) as server:
        start = (
            [str(venv / "bin" / "agent-magics")]
            if how == "script"
            else [str(IPYKERNEL6), "-m", "agent_magics"]
        )
        argv = [*start, "exec", "--provider", "responses", "--base-url", server.base_url]
        argv += ["-m", "m", "-a", "never", "-s", "workspace-write", "-c", "sessions_dir=false"]
        argv += [*SHELLS[shell], "-C", str(ws), "go"]
        env = {**os.environ, "OPENAI_API_KEY": KEY}
        done = subprocess.run(
            argv, env=env, cwd=ws, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert seen(server.outputs(1)["c1"]) == expected(venv)
