"""How ``agent-magics exec`` ends, as a CI job sees it: the exit status tells a job what
to do next. SIGTERM (a cancelled or timed-out job) stops the turn as Ctrl-C does: the
command it ran is killed, the saved session records the turn as aborted, one line says
so, and the status is 143 (130 for SIGINT). A model server that still fails after the
retries gives 75, which a job may retry, apart from 1 for what a person must fix. Real
CLI processes, real commands in the sandbox, a scripted server on 127.0.0.1."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_magics.testing import (
    HttpFailure,
    ScriptedResponsesServer,
    Turn,
    function_call,
    message,
)
from tests.helpers.tools import alive

pytestmark = pytest.mark.slow


def exec_argv(base_url: str, ws: Path, *options: str) -> list[str]:
    argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
    argv += ["--base-url", base_url, "-m", "m", "-C", str(ws), "-c", "allow_login_shell=false"]
    return [*argv, *options, "sleep a while"]


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    return env | {"HOME": str(home), "OPENAI_API_KEY": "sk-ending-0123456789", "NO_COLOR": ""}


def wait_for(what: object, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not what():  # type: ignore[operator]
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def sleeper(mark: str) -> str:
    """A command found in /proc by its argument (in the sandbox's pid namespace its
    ``$$`` is not the pid seen from here); ``mark``: this test's, so that a test beside it
    does not count."""
    return f"touch started; exec sleep {mark}"


def sleepers(mark: str) -> list[int]:
    """The pids of the commands :func:`sleeper` started with ``mark``."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[:2] == [b"sleep", mark.encode()] and alive(int(proc.name)):
            found.append(int(proc.name))
    return found


def turn_endings(ws: Path) -> list[dict[str, object]]:
    """The ``turn_ended`` records of the sessions saved in ``ws``."""
    records = []
    for path in (ws / ".agent_magics" / "sessions").glob("*.jsonl"):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            if record.get("type") == "turn_ended":
                records.append(record)
    return records


@pytest.mark.parametrize(
    ("sent", "status", "said"),
    [
        pytest.param(signal.SIGTERM, 143, "agent-magics: terminated (SIGTERM); ", id="sigterm"),
        pytest.param(signal.SIGINT, 130, "agent-magics: interrupted; ", id="sigint"),
    ],
)
def test_a_signal_stops_the_turn_kills_its_command_and_records_it_aborted(
    tmp_path: Path, sent: signal.Signals, status: int, said: str
) -> None:
    (ws := tmp_path / "ws").mkdir()
    mark = f"3{int(sent):02d}.{os.getpid()}"  # 300-odd seconds, unique to this test
    call = function_call("exec_command", {"cmd": sleeper(mark), "yield_time_ms": 30_000}, "c1")
    with ScriptedResponsesServer([[call], [message("never sent")]]) as server:
        run = subprocess.Popen(
            exec_argv(server.base_url, ws, "-a", "never"),
            env=environment(tmp_path), cwd=tmp_path, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        wait_for(lambda: (ws / "started").exists() and sleepers(mark))
        run.send_signal(sent)  # to the CLI only, as a runner's cancel does
        out, err = run.communicate(timeout=30)
    assert run.returncode == status, err
    assert not sleepers(mark)  # the command went with the turn
    assert out == ""  # no answer: the turn never finished
    lines = [line for line in err.splitlines() if line.startswith(said)]
    assert lines == [said + "the turn stopped and was recorded as aborted, its commands killed."]
    assert "Traceback" not in err
    (ended,) = turn_endings(ws)
    assert ended["status"] == "aborted"
    assert len(server.requests) == 1


def test_a_server_that_still_fails_after_the_retries_exits_75(tmp_path: Path) -> None:
    (ws := tmp_path / "ws").mkdir()
    failing: list[Turn] = [HttpFailure(503, '{"error": {"message": "overloaded"}}')] * 3
    with ScriptedResponsesServer(failing) as server:
        done = subprocess.run(
            exec_argv(server.base_url, ws, "-c", "request_max_retries=1"),
            env=environment(tmp_path), cwd=tmp_path, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 75, done.stderr
    assert len(server.requests) == 2  # the first try and one retry
    assert "kept answering with a server error (HTTP 503): overloaded" in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


def test_what_a_person_must_fix_still_exits_1(tmp_path: Path) -> None:
    """An unknown model (HTTP 404) is not worth retrying: 1, with its sentence."""
    (ws := tmp_path / "ws").mkdir()
    with ScriptedResponsesServer([HttpFailure(404, "no such model")]) as server:
        done = subprocess.run(
            exec_argv(server.base_url, ws),
            env=environment(tmp_path), cwd=tmp_path, stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "has no model 'm'" in done.stderr and "check --model and --base-url" in done.stderr
