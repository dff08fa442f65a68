"""Whole turns side by side with the real Codex CLI: ``agent-magics exec`` vs ``codex exec``.

Both run the same scripted cases against the conformance mock server
(``tests/conformance/mock_server.py``, the server the recordings were made with), in a
fresh workspace, with ``HOME`` (and Codex's ``CODEX_HOME``) empty folders, no approvals
and no sandbox, each with its default features (Codex's shell snapshot included). A run
is timed from spawning the process to its exit; ours and Codex's runs alternate, after
one warm-up of each whose tool outputs are compared. The value is our median in ms, the
ratio ours / Codex's median. The note adds min/median/max of both sides, the median CPU
time of each (user + system from ``os.wait4``, the commands it ran included), the time
to the first model request (process start-up) and the peak RSS of each process.

    python bench/codex_bench.py --codex PATH [--quick]
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CONFORMANCE = Path(__file__).resolve().parents[1] / "tests" / "conformance"
sys.path.insert(0, str(CONFORMANCE))

import harness  # noqa: E402
import normalize  # noqa: E402
from mock_server import MockResponsesServer  # noqa: E402

TARGET = ""  # a report: ours / Codex's median wall time of the whole turn
TIMEOUT_S = 300  # one process run; the 200-call session takes Codex ~20 s here
SESSION_CALLS = 200  # calls of the long session (quick: QUICK_SESSION_CALLS)
QUICK_SESSION_CALLS = 20
STDERR_TAIL = 2000  # bytes of a failed run's stderr kept in the error
PATCHED = "".join(f"line {i}\n" for i in range(1, 41))
OURS = (
    f"{sys.executable} -m agent_magics exec --base-url {{base_url}} -m {{model}} -a never"
    " -s danger-full-access -c apply_patch_tool_type={apply_patch_tool_type}"
    " -c experimental_supported_tools={tools} -c sessions_dir=~/.agent_magics/sessions"
)


def _exec(call_id: str, cmd: str) -> dict[str, Any]:
    return {"call_id": call_id, "name": "exec_command", "arguments": {"cmd": cmd}}


def cases(session_calls: int) -> dict[str, dict[str, Any]]:
    """The five scripted turns, in the conformance case format."""
    patch = (
        "*** Begin Patch\n*** Update File: t.txt\n"
        "@@\n line 1\n-line 2\n+LINE 2\n line 3\n"
        "@@\n line 19\n-line 20\n+LINE 20\n line 21\n"
        "@@\n line 38\n-line 39\n+LINE 39\n line 40\n*** End Patch\n"
    )
    three = [_exec("c1", "echo one"), _exec("c2", "ls"), _exec("c3", "cat a.txt")]
    return {
        "echo": {"turns": [[_exec("c1", "echo hello")]]},
        "parallel_3": {"files": {"a.txt": "A\n"}, "turns": [three]},
        "patch_3_hunks": {
            "files": {"t.txt": PATCHED},
            "turns": [[{"call_id": "c1", "name": "apply_patch", "input": patch}]],
        },
        "output_1_3mb": {"turns": [[_exec("c1", "seq 1 200000")]]},
        "session_200_calls": {  # the name stays; --quick makes it shorter
            "turns": [[_exec(f"c{i}", f"echo {i}")] for i in range(1, session_calls + 1)]
        },
    }


@dataclass
class Run:
    seconds: float
    cpu_seconds: float  # user + system time of the process and the children it waited for
    to_first_request: float
    peak_rss_kb: int
    outputs: dict[str, Any] = field(default_factory=dict)
    workspace: dict[str, Any] = field(default_factory=dict)


def run_once(
    case: dict[str, Any], codex: str | None, pycache: Path, *, gnu_time: str | None = None
) -> Run:
    """One process run of ``case``: Codex's when ``codex`` is a path, else ours (with its
    bytecode cached under ``pycache``, as an installed package has it). With ``gnu_time``
    the run goes through GNU time, whose report gives the peak RSS (see :func:`measure`)."""
    cfg = dict(harness.DEFAULT_CONFIG, disable_features=[])
    root = Path(tempfile.mkdtemp(prefix="codex-bench-")).resolve()
    ws, home, codex_home = root / "ws", root / "home", root / "codex_home"
    for d in (ws, home, codex_home):
        d.mkdir()
    try:
        harness.materialize_files(str(ws), case.get("files") or {})
        catalog = harness.build_catalog(cfg)
        (root / "catalog.json").write_text(json.dumps(catalog))
        provider = harness.make_turn_provider(harness.build_turns(case, str(ws), cfg))
        arrivals: list[float] = []

        def timed(i: int, body: dict[str, Any]) -> Any:
            arrivals.append(time.perf_counter())
            return provider(i, body)

        server = MockResponsesServer(timed, catalog).start()
        try:
            prompt = "Run the scripted tool calls."
            argv, env = _command(codex, server.base_url, cfg, prompt, root)
            if gnu_time:
                argv = [gnu_time, "-f", "%M", "-o", str(root / "peak_kb"), *argv]
            if codex is None:
                env.pop("PYTHONDONTWRITEBYTECODE", None)
                env["PYTHONPYCACHEPREFIX"] = str(pycache)
            env.update({"HOME": str(home), "CODEX_HOME": str(codex_home)})
            with open(root / "stderr", "wb") as stderr:
                started = time.perf_counter()
                proc = subprocess.Popen(
                    argv,
                    cwd=ws,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=stderr,
                    start_new_session=True,
                )
                status, rss_kb, cpu = _wait(proc)
                seconds = time.perf_counter() - started
            if gnu_time and status == 0:
                rss_kb = int((root / "peak_kb").read_text().split()[-1])
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # what the run left behind
        finally:
            server.stop()
        who = "codex" if codex else "agent-magics"
        if status != 0:
            tail = (root / "stderr").read_bytes()[-STDERR_TAIL:].decode(errors="replace")
            raise RuntimeError(f"{who} exec exited with status {status}: {tail}")
        want = sum(len(turn) for turn in case["turns"])
        collected = harness.collect(case, server.requests, [(str(ws), "{ws}")])
        if len(collected["outputs"]) != want:
            raise RuntimeError(f"{who} answered {len(collected['outputs'])} of {want} calls")
        return Run(
            seconds,
            cpu,
            arrivals[0] - started if arrivals else seconds,
            rss_kb,
            {
                cid: normalize.normalize_output(o["output"])[0]
                for cid, o in collected["outputs"].items()
            },
            harness.snapshot_tree(
                str(ws), ("home", "codex_home", "catalog.json", "stderr", "peak_kb")
            )
            if case.get("files")
            else {},
        )
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _command(
    codex: str | None, base_url: str, cfg: dict[str, Any], prompt: str, root: Path
) -> tuple[list[str], dict[str, str]]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("CODEX_", "OPENAI_")) and k not in ("TERM", "NO_COLOR", "COLORTERM")
    }
    env.update({"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC"})
    if codex is None:
        env["OPENAI_API_KEY"] = "bench-dummy-key"
        return harness.candidate_argv(OURS, base_url, cfg, prompt), env
    env["PATH"] = os.pathsep.join([*harness.bundled_path_dirs(codex), env.get("PATH", "")])
    mock = (
        f'{{name="mock",base_url="{base_url}",wire_api="responses",'
        "request_max_retries=0,stream_max_retries=0}"
    )
    argv = [
        codex, "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
        "-c", "model_provider=mock", "-c", f"model_providers.mock={mock}",
        "-c", f"model_catalog_json={json.dumps(str(root / 'catalog.json'))}",
        "-m", harness.MODEL_SLUG, prompt,
    ]  # fmt: skip
    return argv, env


def _gnu_time() -> str | None:
    """GNU time's path, when ``time`` on the PATH is GNU's (BSD's takes other options)."""
    path = shutil.which("time")
    if path is None:
        return None
    try:
        said = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if "GNU" in said.stdout + said.stderr else None


def _wait(proc: subprocess.Popen[bytes]) -> tuple[int, int, float]:
    """Exit status, peak RSS (KB, Linux units) and CPU seconds (user + system, its
    waited-for children included) of ``proc``, killed after TIMEOUT_S."""
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            proc.returncode = os.waitstatus_to_exitcode(status)
            rss = usage.ru_maxrss // (1024 if sys.platform == "darwin" else 1)
            return proc.returncode, rss, usage.ru_utime + usage.ru_stime
        if time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            raise RuntimeError(f"no exit within {TIMEOUT_S} s")
        time.sleep(0.0005)


def _spread(values: list[float]) -> str:
    ms = sorted(v * 1e3 for v in values)
    return f"{ms[0]:.0f}/{statistics.median(ms):.0f}/{ms[-1]:.0f}"


def measure(
    name: str, case: dict[str, Any], codex: str, runs: int, pycache: Path
) -> dict[str, Any]:
    """One row: ``runs`` alternating runs of each side after a compared warm-up.

    The peak RSS comes from the warm-up runs, made through GNU time when it is installed:
    a child that this process starts (by vfork and exec) begins with this process's own
    peak as its peak, while GNU time's child begins with that of a small program."""
    gnu_time = _gnu_time()
    ours = run_once(case, None, pycache, gnu_time=gnu_time)
    theirs = run_once(case, codex, pycache, gnu_time=gnu_time)
    differ = sorted(c for c in theirs.outputs if ours.outputs.get(c) != theirs.outputs[c])
    if ours.workspace != theirs.workspace:
        raise RuntimeError(f"{name}: the workspace afterwards differs from Codex's")
    mine: list[Run] = []
    codex_runs: list[Run] = []
    for _ in range(runs):
        mine.append(run_once(case, None, pycache))
        codex_runs.append(run_once(case, codex, pycache))
    a = [r.seconds for r in mine]
    b = [r.seconds for r in codex_runs]
    first_a = statistics.median(r.to_first_request for r in mine)
    first_b = statistics.median(r.to_first_request for r in codex_runs)
    cpu_a = statistics.median(r.cpu_seconds for r in mine)
    cpu_b = statistics.median(r.cpu_seconds for r in codex_runs)
    cpu = f"CPU (user+sys) median ours {cpu_a * 1e3:.0f} ms, Codex {cpu_b * 1e3:.0f} ms" + (
        f" (ours / Codex's {cpu_a / cpu_b:.2f})" if cpu_b > 0 else ""
    )
    rss_a, rss_b = ours.peak_rss_kb >> 10, theirs.peak_rss_kb >> 10
    if not gnu_time:  # each peak is at least the bench process's own
        rss_a = max(rss_a, *(r.peak_rss_kb >> 10 for r in mine))
        rss_b = max(rss_b, *(r.peak_rss_kb >> 10 for r in codex_runs))
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss >> 10
    rss = (
        f"peak RSS ours {rss_a} MiB, Codex {rss_b} MiB"
        if gnu_time or min(rss_a, rss_b) > own
        else f"peak RSS hidden by the bench process's own ({own} MiB): install GNU time"
    )
    same = "tool outputs equal" if not differ else f"outputs differ from Codex's: {differ[:5]}"
    calls = sum(len(turn) for turn in case["turns"])
    return {
        "name": f"codex_turn_{name}",
        "value": round(statistics.median(a) * 1e3, 1),
        "unit": "ms",
        "ratio": round(statistics.median(a) / statistics.median(b), 3),
        "target": TARGET,
        "baseline": round(statistics.median(b) * 1e3, 1),
        "note": f"{calls} call(s); {runs} interleaved runs, ms min/median/max: ours"
        f" {_spread(a)}, Codex {_spread(b)}; {cpu}; to first request ours"
        f" {first_a * 1e3:.0f} ms, Codex {first_b * 1e3:.0f} ms; {rss}; {same}",
    }


def bench_codex(codex: str | None, quick: bool, only: str | None = None) -> list[dict[str, Any]]:
    """One row per case (only the case ``only`` when given); without a Codex binary every
    row is skipped with the reason."""
    calls = QUICK_SESSION_CALLS if quick else SESSION_CALLS
    chosen = {n: c for n, c in cases(calls).items() if only in (None, n)}
    rows: list[dict[str, Any]] = []
    if codex is None:
        note = "no Codex binary given (bench/run.py --codex PATH)"
        for name in chosen:
            rows.append(
                {"name": f"codex_turn_{name}", "value": None, "target": TARGET, "note": note}
            )
        return rows
    with tempfile.TemporaryDirectory(prefix="codex-bench-pyc-") as pycache:
        for name, case in chosen.items():
            runs = (2 if quick else 3) if name.startswith("session") else (3 if quick else 9)
            rows.append(measure(name, case, codex, runs, Path(pycache)))
    return rows


if __name__ == "__main__":
    args = sys.argv[1:]
    path = args[args.index("--codex") + 1] if "--codex" in args else None
    for row in bench_codex(path, "--quick" in args):
        print(json.dumps(row), flush=True)
