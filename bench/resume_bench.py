"""What resuming a long session costs: the CPU time of ``agent-magics exec --resume last``
(a real process, one turn against a scripted model on 127.0.0.1) for a session file of
``SHORT`` turns against one of ``LONG`` turns, (a) with no compaction and (b) with a
``compacted`` record near the end, after which the history is its replacement. The
ratio is long / short for each; after a compaction it should stay near 1 (the records
before it are only checked, not rebuilt), without one it grows with the history the
request carries.

    .venv/bin/python bench/resume_bench.py [--quick]

The files are written through the session's own writer (:class:`SessionLog`: redacted,
sealed and chained with the bench home's key), with the records a recorder writes for a
turn of one command: ``turn_started``, the prompt, the call, ``tool_finished``, its
output, the answer, ``turn_ended``. The value is the child's user + system CPU time
(``wait4``), the median of interleaved runs after one warm-up of each case, each round
in the other order (on a shared machine a run right after a long one costs some 10%
more); the ratio is that of the medians (the short runs vary as much as the difference
measured, so a ratio per run is noise). The bytecode is cached in a scratch folder, as
an installed package has it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, if not installed

from agent_magics.config import SessionConfig
from agent_magics.protocol.items import server_item
from agent_magics.store.log import COMPACTED, SessionLog
from agent_magics.store.paths import DEFAULT_SESSIONS_DIR
from agent_magics.store.signing import session_key
from agent_magics.testing import ScriptedResponsesServer, function_call, message

SHORT, LONG = 10, 1000
COMPACTED_BEFORE_END = 3  # turns after the compaction
RUNS, QUICK_RUNS = 9, 3
OUTPUT_BYTES = 600  # a command's output, about what an ``ls`` or a short test run gives
TARGET = 1.2  # long / short after a compaction
TIMEOUT_S = 300
API_KEY = "sk-bench-resume-0123456789"


def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _wire(item: dict[str, Any]) -> dict[str, Any]:
    """The item as the recorder writes it (parsed, then its wire JSON)."""
    return server_item(item).wire()


def write_session(ws: Path, home: Path, base_url: str, turns: int, compacted: bool) -> Path:
    """A session file of ``turns`` one-command turns in ``ws``'s sessions folder, sealed
    with ``home``'s key; with ``compacted``, a ``compacted`` record before the last
    :data:`COMPACTED_BEFORE_END` turns."""
    folder = ws / DEFAULT_SESSIONS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    config = SessionConfig(
        cwd=ws, model="m", base_url=base_url, provider="responses", api_key=API_KEY
    )
    log = SessionLog.open(folder, f"bench-{turns}", config, str, key=session_key(home))
    prompts: list[str] = []
    for turn in range(1, turns + 1):
        if compacted and turn == turns - COMPACTED_BEFORE_END + 1:
            kept = [_user(p) for p in prompts[-5:]]
            summary = _user("Summary of the work so far: " + "listed the files. " * 40)
            log.write(
                {
                    "type": COMPACTED,
                    "turn": turn - 1,
                    "summary": summary["content"][0]["text"],
                    "replacement_history": [_wire(i) for i in [*kept, summary]],
                    "trigger": "auto",
                    "phase": "post_turn",
                    "tokens_before": 200_000,
                }
            )
        prompt = f"step {turn}: list the files again"
        prompts.append(prompt)
        log.write({"type": "turn_started", "turn": turn, "time": "t", "prompt": prompt})
        call = function_call("exec_command", {"cmd": "ls"}, f"c{turn}")
        output = {"type": "function_call_output", "call_id": f"c{turn}", "output": "f\n" * 300}
        for record in (
            {"type": "item", "item": _wire(_user(prompt))},
            {"type": "item", "item": _wire(call)},
            {"type": "tool_finished", "call_id": f"c{turn}", "tool": "exec_command"},
            {"type": "item", "item": _wire(output)},
            {"type": "item", "item": _wire(message(f"done with step {turn}"))},
        ):
            log.write({**record, "turn": turn})
        log.write(
            {
                "type": "turn_ended",
                "turn": turn,
                "status": "done",
                "usage": {"total_tokens": 100},
                "error": None,
                "session_tokens": 100 * turn,
                "goal": None,
            }
        )
    log.close()
    return folder / f"bench-{turns}.jsonl"


def resume_cpu_s(ws: Path, home: Path, base_url: str, pycache: Path) -> float:
    """User + system CPU seconds of one ``exec --resume last`` turn in ``ws``."""
    argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
    argv += ["--base-url", base_url, "-m", "m", "-a", "never", "-s", "read-only"]
    argv += ["--resume", "last", "and once more"]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env |= {"HOME": str(home), "OPENAI_API_KEY": API_KEY, "PYTHONPYCACHEPREFIX": str(pycache)}
    env["PYTHONPATH"] = os.pathsep.join(
        [str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")]
    )
    proc = subprocess.Popen(
        argv,
        cwd=ws,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0 or b"Resuming session bench-" not in err:
        raise RuntimeError(f"exec --resume exited {proc.returncode}: {err[-2000:].decode()}")
    return usage.ru_utime + usage.ru_stime


PAIRS = {"no compaction": False, "compacted": True}


def measure(runs: int) -> dict[str, tuple[list[float], list[float]]]:
    """CPU ms of each run of a resume, per pair of :data:`PAIRS`: at ``SHORT`` turns and
    at ``LONG`` turns (interleaved after one warm-up of each)."""
    with tempfile.TemporaryDirectory() as tmp, ScriptedResponsesServer() as server:
        root = Path(tmp)
        pycache, home = root / "pycache", root / "home"
        places: dict[str, tuple[Path, Path]] = {}
        for n, (label, compacted) in enumerate(PAIRS.items()):
            pair = []
            for turns in (SHORT, LONG):
                ws = root / f"{n}-{turns}"
                ws.mkdir()
                write_session(ws, home, server.base_url, turns, compacted)
                pair.append(ws)
            places[label] = (pair[0], pair[1])
        for short, long in places.values():  # warm-up (and the bytecode)
            resume_cpu_s(short, home, server.base_url, pycache)
            resume_cpu_s(long, home, server.base_url, pycache)
        times: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in places}
        runs_in_order = [(k, i) for k in places for i in (0, 1)]
        for n in range(runs):  # each round the other way round: a run costs a little
            for label, i in runs_in_order[:: 1 if n % 2 else -1]:  # more after a long one
                ws = places[label][i]
                times[label][i].append(resume_cpu_s(ws, home, server.base_url, pycache) * 1e3)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    args = parser.parse_args()
    ratios = {}
    for label, (short_runs, long_runs) in measure(QUICK_RUNS if args.quick else RUNS).items():
        short, long = statistics.median(short_runs), statistics.median(long_runs)
        ratio = long / short
        ratios[label] = ratio
        per_turn = (long - short) / (LONG - SHORT)
        print(
            f"resume, {label:<13}: {short:7.1f} ms CPU at {SHORT} turns, {long:7.1f} ms at "
            f"{LONG}; ratio {ratio:.2f}; +{per_turn:.3f} ms a turn"
        )
    verdict = "met" if ratios["compacted"] <= TARGET else "missed"
    print(f"target after a compaction: ratio <= {TARGET} ({verdict})")


if __name__ == "__main__":
    main()
