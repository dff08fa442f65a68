"""Jupyter's secrets never reach the model: the server's token and the kernels' signing
keys in Jupyter's runtime folder, and the signing key of the kernel a session runs in.

End to end: a scripted model on 127.0.0.1 has a sandboxed command ``cat`` the files, in
``agent-magics exec`` and in a real kernel, under bubblewrap (the folder is hidden: the
files are not there) and under Landlock (reading them is refused). Where Landlock cannot
hide them (a runtime folder in ``/tmp``, where commands create files), the secrets
are scrubbed from what the model receives, and the session says so once. Codex hides
nothing of Jupyter's (it does not run in a kernel).
"""

from __future__ import annotations

import base64
import json
import re
import secrets
import shutil
import tempfile
from pathlib import Path

import pytest

from agent_magics.agent.redaction import SessionRedactor, register_secrets
from agent_magics.agent.session import Session
from agent_magics.config import SessionConfig
from agent_magics.events import TextDelta, ToolCallFinished, ToolOutputDelta
from agent_magics.models.secret import REDACTED
from agent_magics.testing import (
    ConversationsServer,
    ScriptedResponsesServer,
    function_call,
    message,
)
from agent_magics.tools.sandbox.jupyter import runtime_secrets
from tests.helpers.kernels import KERNEL_PYTHONS, Kernel, agent_cell, kernel_manager
from tests.helpers.leaks import leaked
from tests.helpers.sandbox import LINUX_MECHANISMS, Arena, exec_calls, require_mechanism
from tests.helpers.sessions import config_for

SERVER_TOKEN = "jps" + secrets.token_hex(24)
OTHER_KERNEL_KEY = "k" + secrets.token_hex(16)
COOKIE_SECRET = "c" + secrets.token_hex(20)
WEAKNESS = "Sandboxed commands can read Jupyter's runtime files"
MULTI_AGENT = "multi_agent_v1"  # the namespace of the helpers' tools
HUB_TOKENS = ("JUPYTERHUB_API_TOKEN", "JPY_API_TOKEN", "JUPYTER_TOKEN")
LAYOUTS = ["named", "default", "workspace"]
"""``named``: ``JUPYTER_RUNTIME_DIR`` beside the workspace; ``default``:
``$HOME/.local/share/jupyter/runtime``; ``workspace``: ``JUPYTER_RUNTIME_DIR`` in the
working folder, where commands may write (not read)."""


def fill_runtime_folder(folder: Path) -> None:
    """What a running Jupyter server and one of its kernels leave there."""
    folder.mkdir(parents=True)
    server = {"url": "http://localhost:8888/", "token": SERVER_TOKEN, "pid": 4242}
    (folder / "jpserver-4242.json").write_text(json.dumps(server, indent=1))
    (folder / "jpserver-4242-open.html").write_text(
        f'<meta http-equiv="refresh" content="1;url=http://localhost:8888/tree?token={SERVER_TOKEN}">'
    )
    kernel = {"shell_port": 5555, "key": OTHER_KERNEL_KEY, "signature_scheme": "hmac-sha256"}
    (folder / "kernel-0a1b2c3d.json").write_text(json.dumps(kernel, indent=1))
    (folder / "jupyter_cookie_secret").write_text(COOKIE_SECRET + "\n")


def exec_turn(
    arena: Arena, mechanism: str, cmd: str, env: dict[str, str]
) -> tuple[str, str, ScriptedResponsesServer]:
    """``cmd`` as the model's only call in ``agent-magics exec``: (its output as the model
    got it, stderr, the server)."""
    call = function_call("exec_command", {"cmd": cmd}, "c1")
    run = exec_calls(arena, mechanism, [call], env=env, skip_env=("JUPYTER", "XDG_"))
    return str(run.outputs()["c1"]), run.done.stderr, run.server


@pytest.mark.slow  # real sandboxes and CLI runs
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_a_command_reads_no_jupyter_token(arena: Arena, mechanism: str, layout: str) -> None:
    require_mechanism(mechanism)
    if layout == "default":
        folder, env = arena.home / ".local" / "share" / "jupyter" / "runtime", {}
    else:
        folder = (arena.root if layout == "named" else arena.ws) / "runtime"
        env = {"JUPYTER_RUNTIME_DIR": str(folder)}
    fill_runtime_folder(folder)
    cmd = f"cd {folder} && cat jpserver-*.json kernel-*.json jpserver-*.html *secret; echo end"
    output, stderr, server = exec_turn(arena, mechanism, cmd, env)
    assert "end" in output  # the command ran
    secret = (SERVER_TOKEN, OTHER_KERNEL_KEY, COOKIE_SECRET)
    assert leaked(json.dumps(server.requests), *secret) == []
    assert leaked(stderr, *secret) == []
    # Hidden: bubblewrap shows an empty folder, Landlock refuses to read the files.
    assert ("No such file" if mechanism == "bwrap" else "Permission denied") in output, output
    assert REDACTED not in output, output
    assert WEAKNESS not in stderr


@pytest.mark.slow  # real sandboxes and CLI runs
@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_a_runtime_folder_where_commands_create_files(arena: Arena, mechanism: str) -> None:
    """The runtime folder in ``/tmp``, where commands create files: bubblewrap hides it;
    Landlock leaves it readable (hidden, every file a command made in ``/tmp`` would be
    unreadable to it: ``mktemp``, pip's build folders), scrubs the secrets, and the
    session says so once, naming the folder."""
    require_mechanism(mechanism)
    base = Path(tempfile.mkdtemp(prefix="agent-magics-runtime-", dir="/tmp"))
    try:
        folder = base / "runtime"
        fill_runtime_folder(folder)
        cmd = f"cat {folder}/jpserver-*.json; t=$(mktemp) && echo made-$$ > $t && cat $t; echo end"
        env = {"JUPYTER_RUNTIME_DIR": str(folder)}
        output, stderr, server = exec_turn(arena, mechanism, cmd, env)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert "end" in output and re.search(r"made-\d+", output), output  # it reads its own file
    assert leaked(json.dumps(server.requests) + stderr, SERVER_TOKEN) == []
    if mechanism == "bwrap":
        assert "No such file" in output, output
        assert WEAKNESS not in stderr
    else:
        assert f'"token": "{REDACTED}"' in output, output
        notices = [line for line in stderr.splitlines() if WEAKNESS in line]
        assert len(notices) == 1 and str(folder) in notices[0], stderr


@pytest.mark.slow  # real kernels and sandboxes
@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
@pytest.mark.parametrize("python", KERNEL_PYTHONS)
def test_the_kernel_signing_key_never_reaches_the_model(
    python: str, mechanism: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel's connection file lies outside Jupyter's runtime folder (as some
    front ends put it): only the kernel knows where, and it tells the sandbox and the
    redaction when the first ``%%agent`` runs."""
    require_mechanism(mechanism)
    monkeypatch.setenv("AGENT_MAGICS_SANDBOX_MECHANISM", mechanism)  # the kernel inherits it
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    connection = tmp_path / "connections" / "kernel-test.json"
    connection.parent.mkdir()
    km = kernel_manager(python, tmp_path / "specs")
    km.connection_file = str(connection)
    (tmp_path / "ws").mkdir()
    kernel = Kernel(km, tmp_path / "ws")
    try:
        key = json.loads(connection.read_text())["key"]
        assert len(key) >= 16
        pid = kernel.value("__import__('os').getpid()")
        cmd = f"cat /proc/{pid}/cmdline; echo; cat {connection}; echo end"
        script = [[function_call("exec_command", {"cmd": cmd}, "c1")], [message("done")]]
        kernel.run("%load_ext agent_magics")
        with ScriptedResponsesServer(script) as server:
            kernel.run(agent_cell(server.base_url, "-a never -s workspace-write"))
            kernel.wait_for(lambda: len(server.requests) >= 2, timeout=60)
            output = str(server.outputs(1)["c1"])
        assert "end" in output and str(connection) in output  # it ran, and found the file
        assert leaked(json.dumps(server.requests), key) == []
        # Hidden: bubblewrap shows an empty folder; Landlock refuses to read it (its way
        # from /tmp lies in folders granted entry by entry: the working folder is there).
        assert ("No such file" if mechanism == "bwrap" else "Permission denied") in output
        assert REDACTED not in output, output
    finally:
        kernel.close()


def test_the_redactor_learns_of_a_server_started_after_the_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runtime folder is read again at each refresh (a turn's start) when it
    changed; a registered secret counts from the moment it is registered."""
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    redactor = SessionRedactor(lambda: SessionConfig(), environ={}, found=runtime_secrets)
    text = f"token={SERVER_TOKEN} key={OTHER_KERNEL_KEY} cookie={COOKIE_SECRET}"
    assert redactor.text(text) == text
    fill_runtime_folder(tmp_path / "runtime")
    redactor.refresh()
    assert redactor.text(text) == f"token={REDACTED} key={REDACTED} cookie={REDACTED}"
    registered = "r" + secrets.token_hex(16)
    assert redactor.text(registered) == registered
    register_secrets(registered)
    assert redactor.text(f"[{registered}]") == f"[{REDACTED}]"


def test_a_tool_call_that_starts_a_server_has_its_token_scrubbed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call may start a server or kernel mid-turn: its output, as it streams and
    when the call finishes, asks the folder again, so the new token is taken out of it
    (and of what follows)."""
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    redactor = SessionRedactor(lambda: SessionConfig(), environ={}, found=runtime_secrets)
    assert redactor.event(TextDelta("m1", SERVER_TOKEN)) == TextDelta("m1", SERVER_TOKEN)
    fill_runtime_folder(tmp_path / "runtime")
    streamed = ToolOutputDelta("c1", f"token={SERVER_TOKEN}")
    assert redactor.event(streamed) == ToolOutputDelta("c1", f"token={REDACTED}")
    finished = ToolCallFinished("c1", "exec_command", f"token={SERVER_TOKEN}", True, 0.1)
    assert redactor.event(finished).output == f"token={REDACTED}"
    assert redactor.text(SERVER_TOKEN) == REDACTED


@pytest.mark.slow  # real sandboxes and CLI runs
@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_a_command_cannot_encode_a_hub_token_past_the_scrubber(
    arena: Arena, mechanism: str
) -> None:
    """The scrubber only knows a secret as it is written; so the hub's and the server's
    tokens are not in a command's environment at all (as the API key is not)."""
    require_mechanism(mechanism)
    tokens = {name: "t" + secrets.token_hex(20) for name in HUB_TOKENS}
    cmd = f"printenv {' '.join(HUB_TOKENS)} | base64; echo end"
    output, stderr, server = exec_turn(arena, mechanism, cmd, tokens)
    assert "end" in output  # the command ran
    encoded = [base64.b64encode(t.encode()).decode() for t in tokens.values()]
    assert leaked(json.dumps(server.requests), *tokens.values(), *encoded) == []
    assert leaked(stderr, *tokens.values()) == []


async def test_a_helper_scrubs_the_secrets_its_parent_was_handed(tmp_path: Path) -> None:
    """The front end hands its secrets to the session it makes; the helpers that
    session spawns keep them out of what they send too."""
    token = "h" + secrets.token_hex(20)
    (tmp_path / "notes.txt").write_text(f"token={token}\n")
    parent, child = "PARENT: delegate", "CHILD: read the notes"
    spawn = function_call("spawn_agent", {"message": child}, "s1") | {"namespace": MULTI_AGENT}
    scripts = {  # the parent's turn ends once its helper is done
        parent: [[spawn], [message("started a helper")], [message("done")]],
        child: [[function_call("exec_command", {"cmd": "cat notes.txt"}, "c1")], [message("ok")]],
    }
    with ConversationsServer(scripts) as server:
        config = config_for(
            tmp_path, server.base_url, shell_type="unified_exec", allow_login_shell=False
        )
        session = Session(config, secrets=lambda: (token,))
        await session.run_turn(parent)
        await session.aclose()
    [*_, last] = server.by_conversation[child]
    outputs = [i["output"] for i in last["input"] if i["type"] == "function_call_output"]
    assert outputs and f"token={REDACTED}" in str(outputs), outputs
    assert leaked(json.dumps(server.by_conversation), token) == []
