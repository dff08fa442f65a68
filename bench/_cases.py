"""The measurements behind the benchmarks in ``run.py``: each returns raw numbers
(candidate and baseline, in seconds or µs) and leaves the judging to the caller.

A measurement checks that candidate and baseline produced the same answer before its
numbers are trusted, and raises when they did not (that is a crash, not a miss).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from _gen import NEEDLE, TextFile, Tree
from _handlers import NoopHandler, SleepHandler

from agent_magics.protocol.approval import SandboxMode
from agent_magics.protocol.items import FunctionCallOutput
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import (
    FunctionPayload,
    SessionServices,
    ToolInvocation,
    ToolOutput,
    TurnContext,
)
from agent_magics.tools.handlers.ripgrep import find_rg
from agent_magics.tools.registry import ToolRegistry
from agent_magics.tools.router import ToolRouter, tool_call_from_item
from agent_magics.tools.runtime import run_calls


def _invocation(name: str, args: dict[str, object], cwd: Path) -> ToolInvocation:
    payload = FunctionPayload(json.dumps(args))
    return ToolInvocation("call_bench", name, payload, TurnContext(cwd=cwd), SessionServices())


def interleaved_times(runs: int, *fns: Callable[[], object]) -> list[list[float]]:
    """Every run's wall seconds of each function, run in turn after one warm-up of each."""
    times: list[list[float]] = [[] for _ in fns]
    for fn in fns:
        fn()
    for _ in range(runs):
        for fn, out in zip(fns, times, strict=True):
            t0 = time.perf_counter()
            fn()
            out.append(time.perf_counter() - t0)
    return times


def _interleaved(runs: int, *fns: Callable[[], object]) -> list[float]:
    """Median wall seconds of each function, run in turn after one warm-up of each."""
    return [statistics.median(t) for t in interleaved_times(runs, *fns)]


# -- no-op call overhead -----------------------------------------------------------------


def noop_overhead(
    cwd: Path, calls: int, batches: int, mode: SandboxMode = SandboxMode.DANGER_FULL_ACCESS
) -> tuple[float, float]:
    """(µs per call through parse + router + runtime + orchestrator, µs per direct await).
    Under ``workspace-write`` each call also works out its sandbox (roots and protected
    paths: a few ``stat`` calls)."""
    return asyncio.run(_noop_overhead(cwd, calls, batches, mode))


async def _noop_overhead(
    cwd: Path, calls: int, batches: int, mode: SandboxMode
) -> tuple[float, float]:
    handler = NoopHandler()
    registry = ToolRegistry()
    registry.register(handler.name, handler, handler.spec(ToolsConfig()))
    router = ToolRouter(registry, SessionServices())
    turn = TurnContext(cwd=cwd, sandbox_mode=mode)
    item = {
        "type": "function_call",
        "call_id": "call_bench",
        "name": handler.name,
        "arguments": "{}",
    }

    async def through_stack() -> object:
        call = tool_call_from_item(item)
        if call is None:
            raise RuntimeError("not a tool call")
        router.announce(call)
        outputs = await run_calls(
            [(call.name, router.is_parallel(call), lambda: router.dispatch(call, turn))]
        )
        if not outputs[0].success:
            raise RuntimeError(f"no-op call failed: {outputs[0].content}")
        return FunctionCallOutput(call_id=call.call_id, output=outputs[0].content)

    async def direct() -> object:
        return await handler.work()

    async def per_call_us(fn: Callable[[], Awaitable[object]]) -> float:
        samples = []
        for _ in range(batches):
            t0 = time.perf_counter_ns()
            for _ in range(calls):
                await fn()
            samples.append((time.perf_counter_ns() - t0) / calls / 1e3)
        return statistics.median(samples)

    for fn in (through_stack, direct):  # warm-up
        for _ in range(min(calls, 500)):
            await fn()
    return await per_call_us(through_stack), await per_call_us(direct)


# -- grep_files ------------------------------------------------------------------------


def grep_files(tree: Tree, runs: int) -> tuple[list[float], list[float], list[float]]:
    """Times in s of GrepFilesHandler, of raw ``rg --files-with-matches PATTERN DIR``, and
    of rg with exactly the handler's arguments (what is left is our own overhead)."""
    from agent_magics.tools.handlers.grep_files import GrepFilesHandler, rg_argv

    rg = find_rg()
    if rg is None:
        raise RuntimeError("ripgrep not found")
    handler = GrepFilesHandler()
    inv = _invocation(handler.name, {"pattern": NEEDLE, "limit": 2000}, tree.root)
    plain = [rg, "--files-with-matches", NEEDLE, str(tree.root)]
    same = rg_argv(rg, NEEDLE, None, str(tree.root))
    with asyncio.Runner() as runner:

        def candidate() -> ToolOutput:
            return runner.run(handler.handle(inv))

        def baseline(argv: list[str] = plain) -> bytes:
            return subprocess.run(argv, stdout=subprocess.PIPE, check=True).stdout

        got = sorted(candidate().text.splitlines())
        want = sorted(baseline().decode().splitlines())
        if got != want or len(got) != tree.matching:
            raise RuntimeError(f"grep_files found {len(got)} files, rg {len(want)}")
        cand, base, same_args = interleaved_times(runs, candidate, baseline, lambda: baseline(same))
    return cand, base, same_args


# -- read_file -------------------------------------------------------------------------

SLICE_LINES = 200


def slice_offset(f: TextFile) -> int:
    return int(f.lines * 0.9) + 1


def read_slice(f: TextFile, runs: int) -> tuple[list[float], list[float], int]:
    """(times in s of ReadFileHandler, of ``tail -n +A FILE | head -n N``, first line)."""
    from agent_magics.tools.handlers.read_file import ReadFileHandler

    start = slice_offset(f)
    handler = ReadFileHandler()
    inv = _invocation(
        handler.name, {"file_path": str(f.path), "offset": start, "limit": SLICE_LINES}, f.path
    )
    with asyncio.Runner() as runner:

        def candidate() -> ToolOutput:
            return runner.run(handler.handle(inv))

        got = candidate().text.splitlines()
        want = [f"L{start + i}: {line}" for i, line in enumerate(tail_head(f, start).splitlines())]
        if got != want or got[0] != f"L{start}: {f.line(start)}":
            raise RuntimeError("read_file and tail | head returned different lines")
        cand, base = interleaved_times(runs, candidate, lambda: tail_head(f, start))
    return cand, base, start


def tail_head(f: TextFile, start: int) -> str:
    """``tail -n +START FILE | head -n SLICE_LINES``, two processes joined by a pipe (no
    shell); returns once both have exited, as a shell pipeline does."""
    tail = subprocess.Popen(["tail", "-n", f"+{start}", str(f.path)], stdout=subprocess.PIPE)
    head = subprocess.Popen(
        ["head", "-n", str(SLICE_LINES)], stdin=tail.stdout, stdout=subprocess.PIPE
    )
    assert tail.stdout is not None
    tail.stdout.close()  # head holds the read end: tail gets SIGPIPE once head exits
    out, _ = head.communicate()
    tail.wait()
    return out.decode()


# Peak RSS growth of a read, in KB. On Linux the kernel's high-water mark (VmHWM) is reset
# to the current resident size just before the read (``/proc/self/clear_refs``), so the
# growth is the read's own peak above what the process held before it; elsewhere it is
# the growth of ``ru_maxrss`` (which may hide up to the import-time peak).
_RSS_CHILD = """
import asyncio, json, resource, sys
from pathlib import Path
from agent_magics.tools.context import FunctionPayload, SessionServices, ToolInvocation, TurnContext
from agent_magics.tools.handlers.read_file import ReadFileHandler

def status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])

def reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return status_kb("VmRSS"), lambda: status_kb("VmHWM")
    except OSError:
        scale = 1 / 1024 if sys.platform == "darwin" else 1
        peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale
        return peak(), peak

async def read(path, offset, limit):
    args = json.dumps({"file_path": path, "offset": offset, "limit": limit})
    inv = ToolInvocation("c", "read_file", FunctionPayload(args), TurnContext(cwd=Path(path)),
                         SessionServices())
    return await ReadFileHandler().handle(inv)

async def main():
    path, offset, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    await read(path, 2, 5)  # warm-up: imports, threads, models
    before, peak = reset_peak()
    out = await read(path, offset, limit)
    print(json.dumps({"growth_kb": peak() - before, "lines": len(out.text.splitlines())}))

asyncio.run(main())
"""


def read_rss_growth_kb(f: TextFile) -> float:
    """Peak RSS growth (KB) of a fresh process while read_file reads a slice deep in ``f``."""
    argv = [sys.executable, "-c", _RSS_CHILD, str(f.path), str(slice_offset(f)), str(SLICE_LINES)]
    cwd = Path(__file__).resolve().parents[1]  # so the package imports when not installed
    done = subprocess.run(argv, stdout=subprocess.PIPE, check=True, cwd=cwd)
    answer = json.loads(done.stdout)
    if answer["lines"] != SLICE_LINES:
        raise RuntimeError(f"read_file returned {answer['lines']} lines")
    return float(answer["growth_kb"])


# -- tool scheduling in a real Session ---------------------------------------------------


def session_tool_phase(cwd: Path, parallel: bool, calls: int, seconds: float, turns: int) -> float:
    """Median wall s from the first call proposed to the last call finished, over
    ``turns`` turns that each get one response with ``calls`` sleeper calls."""
    return asyncio.run(_session_tool_phase(cwd, parallel, calls, seconds, turns))


async def _session_tool_phase(
    cwd: Path, parallel: bool, calls: int, seconds: float, turns: int
) -> float:
    from agent_magics.agent.session import Session
    from agent_magics.config import SessionConfig
    from agent_magics.events import Event, ToolCallFinished, ToolCallProposed
    from agent_magics.testing import ScriptedResponsesServer, function_call, message

    name = "bench_sleep_parallel" if parallel else "bench_sleep_exclusive"
    script: list[list[dict[str, object]]] = []
    for t in range(turns):
        script.append([function_call(name, {}, f"call_{t}_{i}") for i in range(calls)])
        script.append([message("done")])
    proposed: list[float] = []
    finished: list[float] = []

    def sink(event: Event) -> None:
        if isinstance(event, ToolCallProposed):
            proposed.append(time.perf_counter())
        elif isinstance(event, ToolCallFinished):
            finished.append(time.perf_counter())

    phases: list[float] = []
    with ScriptedResponsesServer(script) as server:  # type: ignore[arg-type]
        config = SessionConfig(
            base_url=server.base_url, cwd=cwd, shell_type="disabled", apply_patch_tool_type=None
        )
        session = Session(config)
        handler = SleepHandler(name, parallel, seconds)
        session.registry.register(name, handler, handler.spec())
        session.subscribe(sink)
        try:
            for t in range(turns):
                proposed.clear()
                finished.clear()
                await session.run_turn("go")
                outputs = server.outputs(2 * t + 1)
                if len(finished) != calls or set(outputs.values()) != {"slept"}:
                    raise RuntimeError(f"turn {t}: {len(finished)} calls finished, {outputs}")
                phases.append(max(finished) - min(proposed))
        finally:
            await session.aclose()
    return statistics.median(phases)
