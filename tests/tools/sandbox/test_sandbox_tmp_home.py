"""Commands run in a kernel whose home, working folder and connection file all lie in
``/tmp`` (a JupyterHub or test set-up; ``jupyter_client`` and ``nbclient`` write the
connection file to ``/tmp``), under ``read-only`` and ``workspace-write``.

The connection file's folder is hidden whole when it is a folder of its own; ``/tmp``
holds the working folder and the home, so only the file is hidden there. Hidden whole,
the working folder vanished and bubblewrap could not mount the signing key's stand-in
inside the empty ``/tmp``: every ``read-only`` command failed with "Can't mkdir parents
for .../session_key". The key and the connection file stay hidden all the same
(bubblewrap mounts over them; Landlock refuses to read them, as ``/tmp``'s top level is
granted entry by entry already: it holds the home's ``.agent_magics``). End to end: a
real kernel, a scripted model on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_magics.models.secret import REDACTED
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.tools.sandbox import SandboxSpec, mount_points
from agent_magics.tools.sandbox.bwrap import wrap
from tests.helpers.kernels import Kernel, agent_cell, kernel_manager
from tests.helpers.leaks import leaked
from tests.helpers.sandbox import LINUX_MECHANISMS, require_mechanism

pytestmark = pytest.mark.slow  # real kernels and sandboxes

MODES = ("read-only", "workspace-write")


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder directly in ``/tmp`` (not ``$TMPDIR``): the home and working folder."""
    if not Path("/tmp").is_dir():
        pytest.skip("no /tmp here")
    found = Path(tempfile.mkdtemp(prefix="agent-magics-tmp-home-", dir="/tmp"))
    try:
        yield found
    finally:
        shutil.rmtree(found, ignore_errors=True)


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_commands_run_with_the_home_and_connection_file_in_tmp(
    mechanism: str, base: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    require_mechanism(mechanism)
    home, ws = base / "home", base / "ws"
    (home / ".agent_magics").mkdir(parents=True, mode=0o700)
    ws.mkdir()
    (ws / "data.txt").write_text("payload-in-the-working-folder\n")
    key = secrets.token_hex(32)
    key_file = home / ".agent_magics" / "session_key"
    key_file.write_text(key + "\n")
    os.chmod(key_file, 0o600)
    for name in [n for n in os.environ if n.startswith(("OPENAI_", "AGENT_MAGICS_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))  # the kernel inherits these
    monkeypatch.setenv("AGENT_MAGICS_SANDBOX_MECHANISM", mechanism)
    km = kernel_manager(sys.executable, base / "specs")
    km.connection_file = f"/tmp/{base.name}-kernel.json"  # as jupyter_client makes one
    cmd = f"cat data.txt; cat {key_file}; cat {km.connection_file}; echo end"
    script = []
    for i, _ in enumerate(MODES):
        script += [[function_call("exec_command", {"cmd": cmd}, f"c{i}")], [message("done")]]
    kernel = Kernel(km, ws)
    try:
        conn_key = json.loads(Path(km.connection_file).read_text())["key"]
        kernel.run("%load_ext agent_magics")
        with ScriptedResponsesServer(script) as server:
            for i, mode in enumerate(MODES):
                kernel.run(agent_cell(server.base_url, f"-a never -s {mode}"), timeout=90)
                output = str(server.outputs(2 * i + 1)[f"c{i}"])
                assert "payload-in-the-working-folder" in output, (mode, output)
                assert "end" in output, (mode, output)
                # bubblewrap: empty files in their places; Landlock: refused. Nothing
                # was read, so nothing to scrub.
                assert REDACTED not in output, (mode, output)
                if mechanism == "landlock":
                    assert output.count("Permission denied") == 2, (mode, output)
            sent = json.dumps(server.requests)
        assert leaked(sent, key, conn_key) == []
        assert key_file.read_text() == key + "\n"
    finally:
        kernel.close()


def test_nothing_is_mounted_inside_a_folder_hidden_whole(base: Path) -> None:
    """A hidden file in a hidden folder (a connection file in a runtime folder's
    subfolder, a key under a hidden home): the folder's empty stand-in hides it already,
    and bubblewrap cannot make a mount point in it; the command runs."""
    require_mechanism("bwrap")
    folder = base / "runtime"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "kernel-1.json").write_text('{"key": "secret"}\n')
    (folder / "jpserver-1.json").write_text('{"token": "secret"}\n')
    spec = SandboxSpec(
        "bwrap",
        network=False,
        hidden=(folder, folder / "sub", folder / "sub" / "kernel-1.json"),
    )
    argv = wrap(spec, ["/bin/sh", "-c", f"ls -A {folder}; echo end"])
    mount_points.started(argv)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    finally:
        mount_points.release(argv)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "end\n", done.stdout
