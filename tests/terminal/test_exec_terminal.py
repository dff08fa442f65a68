"""``agent-magics exec`` as a person sees it on stderr, through the real CLI and a scripted
model server: denials with nobody to ask are explained once and counted, commands read as
a shell needs them with their output trimmed, a patch is shown once, coloured only on a
terminal, and on a terminal (a real PTY) the questions are asked and answered."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent_magics.terminal.console import NO_ONE_TO_ASK
from agent_magics.testing import ScriptedResponsesServer, custom_tool_call, function_call, message

pytestmark = pytest.mark.slow

KEY = "sk-terminal-view-0123456789"
PTY_TIMEOUT_S = 60
NOTE = "file.txt"
REJECTED = (  # Codex's answer to the model for a denied command
    "exec_command failed: CreateProcess { message: "
    '"Rejected(\\"exec command rejected by user\\")" }'
)
ADD = f"*** Begin Patch\n*** Add File: {NOTE}\n+first line\n+second line\n*** End Patch\n"


def cli(tmp_path: Path, base_url: str, *options: str) -> list[str]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
    argv += ["--base-url", base_url, "-m", "m", "-C", str(ws), "-c", "allow_login_shell=false"]
    return [*argv, *options, "do it"]


def environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    return env | {"HOME": str(tmp_path), "OPENAI_API_KEY": KEY, "NO_COLOR": ""}


def run(tmp_path: Path, turns: list[Any], *options: str, stdin: Any) -> tuple[Any, Any]:
    """Run exec with ``stdin`` (``subprocess.DEVNULL`` or ``PIPE``); the server and result."""
    with ScriptedResponsesServer(turns) as server:
        done = subprocess.run(
            cli(tmp_path, server.base_url, *options), env=environment(tmp_path), cwd=tmp_path,
            capture_output=True, text=True, timeout=120,
            **({"input": ""} if stdin is subprocess.PIPE else {"stdin": stdin}),
        )  # fmt: skip
    return server, done


@pytest.mark.parametrize("stdin", [subprocess.DEVNULL, subprocess.PIPE], ids=["devnull", "pipe"])
def test_with_nobody_to_ask_the_first_denial_says_why_and_the_end_counts_them(
    tmp_path: Path, stdin: Any
) -> None:
    turns: list[Any] = [
        [function_call("exec_command", {"cmd": "touch one.txt"}, "c1")],
        [function_call("exec_command", {"cmd": "touch two.txt"}, "c2")],
        [message("Both were refused.")],
    ]
    server, done = run(tmp_path, turns, "-a", "untrusted", stdin=stdin)
    assert done.returncode == 0, done.stderr  # the turn finished; see the exec epilog
    assert done.stdout == "Both were refused.\n"
    assert done.stderr.count("approval denied") == 2
    assert done.stderr.count(NO_ONE_TO_ASK) == 1  # said once, in one sentence
    assert f"  approval denied: {NO_ONE_TO_ASK}\n" in done.stderr
    assert "`-a never`" in NO_ONE_TO_ASK and "`-s`" in NO_ONE_TO_ASK
    assert "2 tool calls denied: nobody could approve them here.\n" in done.stderr
    # what the model reads for a denied call is unchanged (the conformance tests pin it)
    assert server.outputs(1)["c1"] == REJECTED
    assert server.outputs(2)["c2"] == REJECTED
    assert not (tmp_path / "ws" / "one.txt").exists()


def test_commands_read_as_typed_output_is_trimmed_and_a_patch_shown_once_in_plain_text(
    tmp_path: Path,
) -> None:
    quoted = "printf '%s\\n' \"a b\" && seq 1 50"
    turns: list[Any] = [
        [function_call("exec_command", {"cmd": quoted}, "c1")],
        [custom_tool_call("apply_patch", ADD, "c2")],
        [function_call("exec_command", {"cmd": "exit 3"}, "c3")],
        [message("done")],
    ]
    _, done = run(tmp_path, turns, "-a", "never", stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    err = done.stderr
    assert "\x1b" not in err  # stderr is not a terminal: no colours
    assert f"exec {quoted}\n  succeeded in " in err  # the script itself, not bash -lc ...
    output = err.split(f"exec {quoted}\n")[1].split("apply_patch")[0].splitlines()[1:]
    # codex exec's 20 lines, as 10 head and 10 tail lines around a count of the rest
    assert output == [
        "  a b",
        *(f"  {n}" for n in range(1, 10)),
        "  … +31 lines",
        *(f"  {n}" for n in range(41, 51)),
    ]
    assert err.count("*** Begin Patch") == 1 and err.count("+second line") == 1
    assert f"apply_patch Add {NOTE}\n*** Begin Patch\n*** Add File: {NOTE}\n" in err
    assert "  applied in " in err
    assert "exec exit 3\n  exited 3 in " in err
    assert (tmp_path / "ws" / NOTE).read_text() == "first line\nsecond line\n"


def converse(
    argv: list[str], env: dict[str, str], cwd: Path, answers: list[str], pause_s: float = 0.0
) -> tuple[str, str]:
    """Run ``argv`` with stdin and stderr on a PTY; answer each question in turn, after
    ``pause_s`` (a person reading it). The terminal's text and stdout."""
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        argv, stdin=slave, stderr=slave, stdout=subprocess.PIPE, env=env, cwd=cwd
    )
    os.close(slave)
    seen, asked = b"", 0
    deadline = time.monotonic() + PTY_TIMEOUT_S
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
            while seen.count(b"abort turn: ") > asked and asked < len(answers):
                time.sleep(pause_s)
                os.write(master, answers[asked].encode() + b"\n")
                asked += 1
        stdout = proc.stdout.read() if proc.stdout else b""
        proc.wait(timeout=PTY_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if proc.stdout:
            proc.stdout.close()
        os.close(master)
    return seen.decode().replace("\r\n", "\n"), stdout.decode()


def test_on_a_terminal_questions_are_asked_and_the_diff_is_coloured(tmp_path: Path) -> None:
    turns: list[Any] = [
        [custom_tool_call("apply_patch", ADD, "c1")],
        [function_call("exec_command", {"cmd": "touch 'made here.txt'"}, "c2")],
        [message("Patched; the command was refused.")],
    ]
    with ScriptedResponsesServer(turns) as server:
        argv = cli(tmp_path, server.base_url, "-a", "untrusted")
        seen, stdout = converse(argv, environment(tmp_path), tmp_path, ["y", "n"])
        patch_output = server.outputs(1)["c1"]
        command_output = server.outputs(2)["c2"]
    assert stdout == "Patched; the command was refused.\n"
    assert "\x1b[32m+second line\x1b[0m" in seen  # additions green on a terminal
    assert seen.count("+second line") == 1  # the diff once: the question refers to it
    assert f"Apply this patch?\x1b[0m (Add {NOTE}, shown above)\n" in seen
    assert "Run this command?\x1b[0m\n  \x1b[1mtouch 'made here.txt'\x1b[0m\n" in seen
    assert NO_ONE_TO_ASK not in seen  # a person answered
    assert "1 tool call denied.\n" in seen
    assert (tmp_path / "ws" / NOTE).exists()
    assert patch_output.endswith(f"Success. Updated the following files:\nA {NOTE}\n")
    assert command_output == REJECTED
    assert not (tmp_path / "ws" / "made here.txt").exists()


def test_a_commands_run_time_is_told_apart_from_the_wait_for_the_answer(tmp_path: Path) -> None:
    turns: list[Any] = [
        [function_call("exec_command", {"cmd": "python3 -c 'print(1)'"}, "c1")],
        [message("ok")],
    ]
    with ScriptedResponsesServer(turns) as server:
        argv = cli(tmp_path, server.base_url, "-a", "untrusted")
        seen, _ = converse(argv, environment(tmp_path), tmp_path, ["y"], pause_s=2.5)
    found = re.search(r"succeeded in (\d+\.\d\d)s \(after waiting (\d+\.\d) s for you\)", seen)
    assert found, seen  # it read "succeeded in 2.6s", the wait counted as run time
    assert float(found.group(2)) >= 2.5 and float(found.group(1)) < float(found.group(2))


def test_the_demo_shows_the_turn_as_exec_does_and_ends_with_what_to_try_next(
    tmp_path: Path,
) -> None:
    from agent_magics.terminal.demo import NEXT_STEPS

    done = subprocess.run(
        [sys.executable, "-m", "agent_magics", "demo"], env=environment(tmp_path), cwd=tmp_path,
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "exec cat stats.py test_stats.py\n  succeeded in " in done.stderr
    assert "apply_patch Update stats.py\n*** Begin Patch\n" in done.stderr
    assert done.stderr.splitlines()[-2:] == list(NEXT_STEPS)
    assert "notebooks/quickstart.ipynb" in NEXT_STEPS[0]
    assert "OPENAI_API_KEY" in NEXT_STEPS[1] and "--base-url" in NEXT_STEPS[1]
