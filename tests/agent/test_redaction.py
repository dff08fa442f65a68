"""The API key (and every configured secret) never reaches the model, a log or the
terminal, even when the model goes looking for it.

End to end: ``python -m agent_magics exec`` against the scripted loopback model, with
``OPENAI_API_KEY`` set. Tools do not inherit the key, but the agent's own process still
has it in ``/proc/<pid>/environ`` (Python cannot take it out of there: deleting it from
``os.environ`` leaves the kernel's copy), and ``read_file`` runs inside that process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from agent_magics.agent.redaction import SessionRedactor, session_secrets
from agent_magics.config import SessionConfig
from agent_magics.events import McpServerFailed, ToolCallFinished, ToolOutputDelta
from agent_magics.mcp.config import McpServerConfig
from agent_magics.models.secret import MIN_PIECE, REDACTED, Scrubber
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.tools.context import ToolOutput
from tests.helpers.leaks import leaked
from tests.helpers.paths import MCP_SERVERS

KEY = "sk-proj-Zq8Xw3Lp9Vr2Tn6Yb4Hm7Kc5Jd1Fg0Ws"
GITHUB_TOKEN = "ghp_Uy6Rt5Ee4Ww3Qq2Aa1Ss0Dd9Ff8Gg7Hh"
SERVER_TOKEN = "tok-Mn3Bv5Cx7Zl9Kj2Hg4"  # shorter than pieces: matched whole
ENVIRON_SERVER = MCP_SERVERS / "environ_server.py"


def run_exec(
    tmp_path: Path, server: ScriptedResponsesServer, *extra: str
) -> subprocess.CompletedProcess[bytes]:
    # The key comes first so that read_file's first line (cut at 500 bytes) shows it.
    env = {"OPENAI_API_KEY": KEY, "GITHUB_TOKEN": GITHUB_TOKEN}
    env |= {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(tmp_path)}
    argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
    argv += ["--base-url", server.base_url, "-m", "m", "-C", str(tmp_path)]
    argv += ["-s", "danger-full-access", "-a", "never"]
    argv += ["-c", f"log_dir={json.dumps(str(tmp_path / 'logs'))}", *extra, "look around"]
    return subprocess.run(
        argv, env=env, cwd=tmp_path, capture_output=True, timeout=120,
        stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip


# The environment of the command's shell and of each process above it up to this test:
# the agent's own among them, and no process this test did not start (the machine's other
# processes may hold secrets of their own, and reading them all takes long on a busy one).
ANCESTORS_ENVIRON = (
    f"p=$$; while [ $p -gt 1 ] && [ $p -ne {os.getpid()} ]; do cat /proc/$p/environ; echo; "
    "while read -r k v; do [ $k = PPid: ] && p=$v; done < /proc/$p/status; done 2>/dev/null"
    " | tr '\\0' '\\n' | grep -a -e _KEY= -e _TOKEN="
)
SHELL_CALLS = {
    "unified_exec": function_call("exec_command", {"cmd": "cat /proc/$PPID/environ"}, "c2"),
    "shell": function_call("shell", {"command": ["bash", "-c", ANCESTORS_ENVIRON]}, "c2"),
    "shell_command": function_call("shell_command", {"command": ANCESTORS_ENVIRON}, "c2"),
}


@pytest.mark.slow
@pytest.mark.parametrize("shell_type", list(SHELL_CALLS))
def test_the_key_read_from_proc_environ_never_reaches_the_model_codex_shares_this(
    tmp_path: Path, shell_type: str
) -> None:
    """Commands read the agent's environ through /proc. Codex has the same hole: its
    read_file reads in its own process, which keeps OPENAI_API_KEY in its environment, and
    it filters no tool output (its only redaction, codex-secrets' redact_secrets, is
    applied to memories). Our read_file refuses the /proc entries of the processes running
    the agent; what a command prints of them is scrubbed."""
    calls = [
        function_call("read_file", {"file_path": "/proc/self/environ"}, "c1"),
        SHELL_CALLS[shell_type],
    ]
    if shell_type == "unified_exec":
        calls.append(function_call("exec_command", {"cmd": ANCESTORS_ENVIRON}, "c3"))
    with ScriptedResponsesServer([calls, [message("Nothing found.")]]) as server:
        done = run_exec(
            tmp_path,
            server,
            "-c",
            f'shell_type="{shell_type}"',
            "-c",
            'experimental_supported_tools=["read_file"]',
        )
    assert done.returncode == 0, done.stderr
    outputs = server.outputs(1)
    assert set(outputs) == {call["call_id"] for call in calls}
    assert "no tool of the agent reads" in outputs.pop("c1")
    # Each command did read the agent's environment (the key's name is there), not the key.
    for call_id, output in outputs.items():
        assert f"OPENAI_API_KEY={REDACTED}" in output, call_id
    text = json.dumps(outputs)
    assert "GITHUB_TOKEN=" in text
    assert leaked(text, KEY, GITHUB_TOKEN) == []
    assert leaked(json.dumps(server.requests), KEY, GITHUB_TOKEN) == []
    printed = (done.stdout + done.stderr).decode()
    assert leaked(printed, KEY, GITHUB_TOKEN) == []


def run_with_environ_server(
    tmp_path: Path, calls: list[dict[str, Any]], *server_args: str
) -> tuple[subprocess.CompletedProcess[bytes], ScriptedResponsesServer]:
    mcp = [
        "-c",
        f"mcp_servers.env.command={json.dumps(sys.executable)}",
        "-c",
        f"mcp_servers.env.args={json.dumps([str(ENVIRON_SERVER), *server_args])}",
        "-c",
        f'mcp_servers.env.env={{SERVICE_TOKEN="{SERVER_TOKEN}"}}',
        "-c",
        'shell_type="disabled"',
    ]
    with ScriptedResponsesServer([calls, [message("Seen.")]]) as server:
        done = run_exec(tmp_path, server, *mcp)
    return done, server


@pytest.mark.slow
def test_an_mcp_server_that_reads_our_environ_leaks_the_key_nowhere_codex_shares_this(
    tmp_path: Path,
) -> None:
    """The server reads the agent's /proc/PPID/environ, writes it to stderr (its log) and
    answers it as a tool result. Codex has the same hole: rmcp-client logs each stderr
    line of a server as it is (info!("MCP server stderr ...: {line}"))."""
    call = function_call("mcp__env__environ", {}, "c1")
    done, server = run_with_environ_server(tmp_path, [call])
    assert done.returncode == 0, done.stderr
    output = server.outputs(1)["c1"]
    assert f"OPENAI_API_KEY={REDACTED}" in output
    assert f"SERVICE_TOKEN={REDACTED}" in output  # the server's own `env` secret
    log = (tmp_path / "logs" / "mcp-env.log").read_text()
    assert f"OPENAI_API_KEY={REDACTED}" in log
    assert f"GITHUB_TOKEN={REDACTED}" in log
    secrets = (KEY, GITHUB_TOKEN, SERVER_TOKEN)
    assert leaked(output, *secrets) == []
    assert leaked(log, *secrets) == []
    assert leaked(json.dumps(server.requests), *secrets) == []
    assert leaked((done.stdout + done.stderr).decode(), *secrets) == []


@pytest.mark.slow
def test_the_failure_line_of_an_mcp_server_is_printed_without_the_key(tmp_path: Path) -> None:
    """A server that dies at start is reported with its last stderr line, which here is
    the key; the line is printed, redacted."""
    call = function_call("list_mcp_resources", {}, "c1")
    done, server = run_with_environ_server(tmp_path, [call], "--exit-at-start", "3")
    assert done.returncode == 0, done.stderr
    printed = done.stderr.decode()
    assert f"exited with code 3 while starting: key: {REDACTED}" in printed
    assert leaked(printed + done.stdout.decode(), KEY, GITHUB_TOKEN) == []
    assert leaked(json.dumps(server.requests), KEY, GITHUB_TOKEN) == []


# -- which secrets ------------------------------------------------------------------------


def test_the_session_secrets_are_the_key_mcp_credentials_and_secret_looking_variables() -> None:
    config = SessionConfig(
        api_key=SecretStr(KEY),
        mcp_servers={
            "a": McpServerConfig(command="x", env={"SERVICE_TOKEN": SERVER_TOKEN, "DEBUG": "1"}),
            "b": McpServerConfig(
                url="http://127.0.0.1:1/mcp",
                bearer_token_env_var="B_VAR",
                env_http_headers={"X-Thing": "H_VAR"},
                http_headers={"Authorization": "Basic dXNlcjpwYXNzd29yZA==", "X-Plain": "hello"},
            ),
        },
    )
    environ = {
        "B_VAR": "bearer-value-123",
        "H_VAR": "header-value-456",
        "GITHUB_TOKEN": GITHUB_TOKEN,
        "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG",
        "SSH_KEY_PATH": "/home/someone/.ssh/id_ed25519",  # a path, not a credential
        "API_KEY": "short",  # too short to hide without eating words
        "EDITOR": "vim-but-long-enough",
    }
    assert set(session_secrets(config, environ)) == {
        KEY,
        SERVER_TOKEN,
        "bearer-value-123",
        "header-value-456",
        "Basic dXNlcjpwYXNzd29yZA==",
        "dXNlcjpwYXNzd29yZA==",
        GITHUB_TOKEN,
        "wJalrXUtnFEMI/K7MDENG",
    }


def test_the_redactor_follows_settings_changes() -> None:
    settings = [SessionConfig(api_key=SecretStr(KEY))]
    redactor = SessionRedactor(lambda: settings[-1], environ={})
    assert redactor.text(f"a {KEY} b") == f"a {REDACTED} b"
    assert redactor.text(f"a {SERVER_TOKEN} b") == f"a {SERVER_TOKEN} b"
    server = McpServerConfig(command="x", env={"SERVICE_TOKEN": SERVER_TOKEN})
    settings.append(settings[0].model_copy(update={"mcp_servers": {"s": server}}))
    assert redactor.text(f"a {SERVER_TOKEN} b") == f"a {REDACTED} b"


def test_tool_outputs_and_events_lose_the_key_and_keep_images() -> None:
    redactor = SessionRedactor(lambda: SessionConfig(api_key=SecretStr(KEY)), environ={})
    image = {"type": "input_image", "image_url": "data:image/png;base64,AAAA"}
    items = [{"type": "input_text", "text": f"k={KEY}"}, image]
    assert redactor.output(ToolOutput(items, success=False)) == ToolOutput(
        [{"type": "input_text", "text": f"k={REDACTED}"}, image], success=False
    )
    finished = redactor.event(ToolCallFinished("c", "t", f"x {KEY}", True, 0.1))
    assert finished == ToolCallFinished("c", "t", f"x {REDACTED}", True, 0.1)
    delta = ToolOutputDelta("c", KEY[:20])  # a piece of the key in one chunk of a stream
    assert redactor.event(delta) == ToolOutputDelta("c", REDACTED)
    failed = McpServerFailed("s", f"exited: {KEY}", "/log")
    assert redactor.event(failed) == McpServerFailed("s", f"exited: {REDACTED}", "/log")


# -- the scrubber -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(f"OPENAI_API_KEY={KEY}\0HOME=/h", f"OPENAI_API_KEY={REDACTED}\0HOME=/h",
                     id="nul-separated-environ"),
        pytest.param(f"{KEY[:20]}", REDACTED, id="first-part-of-a-split-read"),
        pytest.param(f"{KEY[20:]}\n", f"{REDACTED}\n", id="second-part-of-a-split-read"),
        pytest.param(f"{KEY[:MIN_PIECE - 1]}", KEY[: MIN_PIECE - 1], id="shorter-than-a-piece"),
        pytest.param(f"{GITHUB_TOKEN} and {SERVER_TOKEN}.", f"{REDACTED} and {REDACTED}.",
                     id="several-secrets"),
        pytest.param(SERVER_TOKEN[:-1], SERVER_TOKEN[:-1], id="short-secret-whole-only"),
        pytest.param(f"{KEY}{GITHUB_TOKEN}", REDACTED * 2, id="two-secrets-touching"),
    ],
)  # fmt: skip
def test_the_scrubber_finds_secrets_and_their_pieces(text: str, expected: str) -> None:
    assert Scrubber(KEY, GITHUB_TOKEN, SERVER_TOKEN, None, "")(text) == expected


def test_a_scrubber_of_nothing_changes_nothing() -> None:
    scrub = Scrubber(None, "")
    assert not scrub
    assert scrub("anything") == "anything"
    assert scrub.data({"a": ["b"]}) == {"a": ["b"]}


def test_every_piece_of_a_long_secret_is_found_wherever_it_starts() -> None:
    scrub = Scrubber(KEY)
    for start in range(len(KEY) - MIN_PIECE + 1):
        piece = KEY[start : start + MIN_PIECE]
        assert scrub(f"<{piece}>") == f"<{REDACTED}>", start
