"""What ``agent-magics exec`` prints is inert: escape sequences from the model, a tool
call or an MCP server never reach the terminal."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_magics.mcp._reasons import last_stderr_line
from agent_magics.testing import ScriptedResponsesServer, message
from agent_magics.text.inert import terminal_safe

OSC52 = "\x1b]52;c;cm0gLXJmIH4K\x07"  # writes "rm -rf ~" to the clipboard
OSC8 = "\x1b]8;;https://evil.example\x1b\\click\x1b]8;;\x1b\\"  # a hidden link
CLEAR = "\x1b[2J\x1b[H"  # erase the screen, cursor home
TITLE = "\x1b]0;pwned\x9c"  # window title, ended by an 8-bit ST
C1_CSI = "\x9b31m"  # CSI as one C1 character
DCS = "\x1bP+q544e\x1b\\"  # a terminfo query
# Whatever a terminal reads as the start of a control function.
ANY_CONTROL = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("plain text, tabs\tand\nnewlines", "plain text, tabs\tand\nnewlines",
                     id="plain"),
        pytest.param(f"before{OSC52}after", "beforeafter", id="osc52-bel"),
        pytest.param(f"a {OSC8} b", "a click b", id="osc8-st"),
        pytest.param(f"{CLEAR}text", "text", id="csi"),
        pytest.param("x\x1b[?1049hy", "xy", id="csi-private"),
        pytest.param(f"x{TITLE}y", "xy", id="osc-8bit-st"),
        pytest.param(f"x{C1_CSI}red", "xred", id="c1-csi"),
        pytest.param(f"x{DCS}y", "xy", id="dcs"),
        pytest.param("x\x1b(0y\x1bcz", "xyz", id="short-escapes"),
        pytest.param("x\x1b]52;c;never-ends", "x52;c;never-ends", id="unterminated-inert"),
        pytest.param("safe\rrm -rf /", "saferm -rf /", id="carriage-return"),
        pytest.param("line\r\nnext", "line\nnext", id="crlf"),
        pytest.param("bell\x07 back\x08 del\x7f nul\x00 c1\x85", "bell back del nul c1",
                     id="lone-controls"),
        pytest.param("über ✓ 日本", "über ✓ 日本", id="unicode-kept"),
    ],
)  # fmt: skip
def test_terminal_safe(text: str, expected: str) -> None:
    assert terminal_safe(text) == expected


def test_an_mcp_server_failure_line_has_no_controls(tmp_path: Path) -> None:
    log = tmp_path / "mcp.log"
    log.write_text(f"first\n{CLEAR}fatal: {OSC52}bad config\x07\n\n")
    assert last_stderr_line(log, 0) == "fatal: bad config"


def run_exec(tmp_path: Path, turns: list[Any]) -> tuple[bytes, bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(tmp_path), "OPENAI_API_KEY": "sk-terminal-test-0123456789"}
    argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
    with ScriptedResponsesServer(turns) as server:
        argv += ["--base-url", server.base_url, "-m", "m", "-C", str(tmp_path), "-a", "never"]
        done = subprocess.run(
            [*argv, "hello"], env=env, cwd=tmp_path, capture_output=True, timeout=120,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout, done.stderr


@pytest.mark.slow
def test_exec_prints_the_model_answer_and_tool_calls_without_escapes_codex_shares_this(
    tmp_path: Path,
) -> None:
    """Codex's ``codex exec`` prints the final message as it came
    (``println!("{message}")`` in event_processor_with_human_output.rs), escapes included."""
    # Raw control bytes in the arguments: what a model server may send, valid JSON or not.
    call = {
        "type": "function_call",
        "name": "exec_command",
        "arguments": f'{{"cmd": "echo hi{OSC52}{CLEAR}"}}',
        "call_id": "c1",
    }
    answer = f"Done.{OSC52}{CLEAR}{OSC8}{TITLE}{C1_CSI}{DCS} All\r\nclear."
    stdout, stderr = run_exec(tmp_path, [[call], [message(answer)]])
    assert stdout == b"Done.click All\nclear.\n"
    assert ANY_CONTROL.search(stdout) is None
    assert ANY_CONTROL.search(stderr.replace(b"\n", b"")) is None
    assert b'tool exec_command {"cmd": "echo hi' in stderr


def test_the_controls_pattern_sees_every_sample() -> None:
    """The byte check above would catch each sample if it got through."""
    for sample in (OSC52, OSC8, CLEAR, TITLE, C1_CSI, DCS, "\r"):
        assert ANY_CONTROL.search(sample.encode()), repr(sample)
