"""The project's benchmarks: each one against a baseline measured in the same run.

    python bench/run.py                 # a table
    python bench/run.py --json          # one JSON object per line
    python bench/run.py --quick         # smaller data, fewer repetitions (smoke test)
    python bench/run.py --only NAME     # one benchmark (repeatable)
    python bench/run.py --codex PATH    # also whole turns against this Codex binary

Benchmarks print, they never fail on a target: the exit status is 1 only when one
crashed. All data is generated into a temporary folder that is deleted afterwards.

Adding a benchmark: write ``def bench_x(ctx: Ctx) -> Result`` below and decorate it
with ``@benchmark("name", "target")``. A target with a unit (``"<= 100 us"``) bounds the
value; one without (``"<= 1.15"``) bounds the ratio candidate / baseline; an empty one
makes a reference row (a benchmark that returns rows gives each row its own target).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from operator import truediv
from pathlib import Path
from statistics import median
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench helpers
sys.path.insert(1, str(Path(__file__).resolve().parents[1]))  # the package, if not installed

import _cases
import _gen
from _report import Result, check_target, header, report, spread

from agent_magics.protocol.approval import SandboxMode

T = TypeVar("T")


@dataclass
class Ctx:
    """What a benchmark gets: the mode, a scratch folder, and shared generated data."""

    quick: bool
    tmp: Path
    codex: str | None = None  # a Codex CLI binary to compare whole turns with
    _fixtures: dict[str, Any] = field(default_factory=dict)

    def fixture(self, key: str, make: Callable[[], T]) -> T:
        """Data several benchmarks share, generated on first use."""
        if key not in self._fixtures:
            self._fixtures[key] = make()
        value: T = self._fixtures[key]
        return value

    def pick(self, full: T, quick: T) -> T:
        return quick if self.quick else full


@dataclass(frozen=True)
class Benchmark:
    name: str
    target: str
    run: Callable[[Ctx], Any]  # a Result, or rows (name, target, Result | None, note)


BENCHMARKS: list[Benchmark] = []


F = TypeVar("F", bound=Callable[[Ctx], Any])


def benchmark(name: str, target: str) -> Callable[[F], F]:
    check_target(target)

    def register(fn: F) -> F:
        BENCHMARKS.append(Benchmark(name, target, fn))
        return fn

    return register


# -- the benchmarks ---------------------------------------------------------------------


@benchmark("noop_tool_call_overhead", "<= 100 us")
def bench_noop(ctx: Ctx) -> Result:
    """Added µs per call of router + runtime + orchestrator around a handler that returns
    at once, vs awaiting the handler's attempt coroutine directly."""
    calls, batches = ctx.pick((20_000, 7), (2_000, 3))
    full_us, direct_us = _cases.noop_overhead(ctx.tmp, calls, batches)
    confined_us, _ = _cases.noop_overhead(ctx.tmp, calls // 4, batches, SandboxMode.WORKSPACE_WRITE)
    return Result(
        full_us - direct_us,
        "us",
        _ratio(full_us, direct_us),
        direct_us,
        f"{full_us:.1f} us per call through the stack, unconfined;"
        f" {confined_us - direct_us:.1f} us added under workspace-write (the call's sandbox"
        " roots and protected paths are worked out each call)",
    )


@benchmark("grep_files_50k", "<= 1.3")
def bench_grep(ctx: Ctx) -> Result:
    """GrepFilesHandler vs rg with Codex's arguments (newest first) on >= 50k small files."""
    tree = _tree(ctx)
    runs = ctx.pick(21, 3)
    candidate, plain, same_args = _cases.grep_files(tree, runs)
    return paired(
        candidate,
        same_args,
        f"{tree.files} files, {tree.matching} match; plain `rg --files-with-matches`:"
        f" {median(plain) * 1e3:.1f} ms, ours {median(map(truediv, candidate, plain)):.2f}x it",
    )


@benchmark("list_dir_100k", "<= 1.5")
def bench_list_dir(ctx: Ctx) -> Result:
    """ListDirHandler, first 25 entries of a folder of 100,000 files (depth 2), vs
    ``sorted(e.name for e in os.scandir(d))`` in the same process."""
    import list_dir_bench

    files = ctx.pick(100_000, 10_000)
    folder = list_dir_bench.make_flat_folder(ctx.tmp / "flat", files)
    candidate, baseline, ls_f = list_dir_bench.flat(folder, ctx.pick(15, 3))
    tree = _tree(ctx)
    deep, walk, entries = list_dir_bench.tree(tree.root, 2, ctx.pick(9, 2))
    return paired(
        candidate,
        baseline,
        f"{files} files; `ls -f`: {ls_f * 1e3:.1f} ms, ours"
        f" {median(candidate) / ls_f:.2f}x it; at depth 2 on the {tree.files}-file tree"
        f" ({entries} entries): {deep * 1e3:.1f} ms vs {walk * 1e3:.1f} ms for a sorted"
        " os.scandir walk",
    )


@benchmark("read_file_1gb_slice", "<= 2.5")
def bench_read_slice(ctx: Ctx) -> Result:
    """read_file: 200 lines from 90% into a ~1 GB file vs ``tail -n +A FILE | head -n 200``."""
    big = _big_file(ctx)
    runs = ctx.pick(9, 3)
    candidate, baseline, offset = _cases.read_slice(big, runs)
    return paired(
        candidate,
        baseline,
        f"{big.path.stat().st_size >> 20} MiB, lines {offset}..{offset + 199}",
    )


RSS_FLOOR_KB = 64.0  # the 10 MiB file's growth counts as at least this (no division by 0)


@benchmark("read_file_peak_rss_growth", "<= 2.0")
def bench_read_rss(ctx: Ctx) -> Result:
    """Peak RSS growth (KB) of a child process reading the big file vs the same read of a
    10 MiB file; ratio = big / max(small, RSS_FLOOR_KB)."""
    big = _big_file(ctx)
    small = ctx.fixture("small_file", lambda: _gen.make_text_file(ctx.tmp / "small.txt", 10 << 20))
    growth_big = _cases.read_rss_growth_kb(big)
    growth_small = _cases.read_rss_growth_kb(small)
    return Result(
        growth_big,
        "KB",
        growth_big / max(growth_small, RSS_FLOOR_KB),
        growth_small,
        f"{big.path.stat().st_size >> 20} MiB file vs 10 MiB file: {growth_big:.0f} KB vs"
        f" {growth_small:.0f} KB",
    )


@benchmark("parallel_8x200ms", "<= 0.25")
def bench_parallel(ctx: Ctx) -> Result:
    """Tool phase of one response with 8 parallel-safe 200 ms calls, vs 8 x 200 ms."""
    return _sleepers(ctx, parallel=True, turns=ctx.pick(5, 2))


@benchmark("exclusive_8x200ms", ">= 0.95")
def bench_exclusive(ctx: Ctx) -> Result:
    """The same with a handler that is not parallel-safe: the calls stay serial."""
    return _sleepers(ctx, parallel=False, turns=ctx.pick(3, 1))


@benchmark("subagent_rounds", "<= 1.5")
def bench_subagent(ctx: Ctx) -> Result:
    """A whole turn whose 20 command rounds a helper does (spawned and waited for), vs
    the parent doing them itself; the note gives the memory an open helper holds."""
    import asyncio

    from subagent_bench import _open_helpers, rounds

    helper, own = rounds(ctx.tmp, runs=ctx.pick(7, 2))
    per_helper_kb = asyncio.run(_open_helpers(ctx.tmp, 6))
    return Result(
        helper * 1e3,
        "ms",
        _ratio(helper, own),
        own * 1e3,
        f"20 exec_command rounds by a helper vs by the parent; peak RSS per open helper"
        f" {per_helper_kb:.0f} KB",
    )


@benchmark("acp_rounds", "<= 1.3")
def bench_acp(ctx: Ctx) -> Result:
    """A turn of 20 command rounds asked through ``agent-magics acp`` (the SDK's client
    over stdio) vs the same turn run by a session in this process."""
    from acp_bench import rounds as acp_rounds

    acp, own = acp_rounds(runs=ctx.pick(7, 2))
    return Result(
        acp * 1e3,
        "ms",
        _ratio(acp, own),
        own * 1e3,
        "20 exec_command rounds in one prompt through the ACP process vs a Session here",
    )


@benchmark("inspect_dataframe_10m", "<= 1000 ms")
def bench_inspect_frame(ctx: Ctx) -> Result:
    """inspect_variable on a 10M-row pandas frame vs ``df.head().to_string()``."""
    from inspect_bench import inspect_frame

    rows, runs = ctx.pick(10_000_000, 1_000_000), ctx.pick(7, 3)
    got = inspect_frame(rows, runs)
    return Result(
        got["candidate"] * 1e3,
        "ms",
        _ratio(got["candidate"], got["baseline"]),
        got["baseline"] * 1e3,
        f"{rows:,} rows x 6 dtypes; answer {got['chars']:.0f} chars; median of {runs};"
        f" list_variables {got['list'] * 1e3:.1f} ms",
    )


@benchmark("turn_scan_20k", "<= 5.0")
def bench_turn_scan(ctx: Ctx) -> Result:
    """The scan before a turn's first command (stats + small files' contents) of 20,000
    files, vs a plain ``os.walk`` + ``lstat`` of the same tree."""
    from turn_scan_bench import scan_costs

    files = ctx.pick(20_000, 2_000)
    root = ctx.tmp / "scan"
    root.mkdir(exist_ok=True)
    got = scan_costs(root, files, ctx.pick(5, 2))
    return Result(
        got["candidate"],
        "ms",
        _ratio(got["candidate"], got["baseline"]),
        got["baseline"],
        f"{files:,} files of 4 KB + a skipped node_modules of as many;"
        f" end-of-turn scan {got['end']:.1f} ms ({got['end'] / got['baseline']:.2f}x walk)",
    )


@benchmark("session_log_line_1kb", "<= 100 us")
def bench_session_line(ctx: Ctx) -> Result:
    """One session-file line of a 1 KB item (redaction, JSON, one write) vs
    ``json.dumps`` + ``os.write`` of the same record."""
    from session_log_bench import line_costs

    # on the disk the bench runs from, not tmpfs: an fsync there costs what it costs
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        got = line_costs(Path(tmp), 1_000, ctx.pick(5, 2))
    return Result(
        got["candidate"],
        "us",
        _ratio(got["candidate"], got["baseline"]),
        got["baseline"],
        f"per line, median of interleaved runs; with an fsync each line {got['fsync']:.0f} us"
        " (so one fsync per turn, not per line)",
    )


@benchmark("shell_snapshot_command", "<= 0.1")
def bench_shell_snapshot(ctx: Ctx) -> Result:
    """One ``echo`` sourcing the session's shell snapshot vs ``bash -lc`` rerunning a
    profile that takes 0.3 s."""
    from shell_snapshot_bench import PROFILE_SLEEP_S, snapshot_costs

    got = snapshot_costs(ctx.pick(7, 3))
    return paired(got["candidate"], got["baseline"], f"profile sleeps {PROFILE_SLEEP_S} s")


@benchmark("import_agent_magics", "<= 4.0")
def bench_import(ctx: Ctx) -> Result:
    """``python -c "import agent_magics"`` vs ``python -c pass``."""
    from import_bench import import_costs

    got = import_costs(ctx.pick(9, 3))
    return paired(got["candidate"], got["baseline"], "whole interpreter runs")


@benchmark("load_ext_kernel", "<= 120 ms")
def bench_load_ext(ctx: Ctx) -> Result:
    """An execute of ``%load_ext agent_magics`` in a fresh real kernel (jupyter_client)
    vs an execute of ``pass`` in the same kernel; the value is the difference."""
    from import_bench import load_ext_costs

    got = load_ext_costs(ctx.pick(7, 3))
    row = paired(got["candidate"], got["baseline"], "fresh kernel per run")
    added = median(c - b for c, b in zip(got["candidate"], got["baseline"], strict=True))
    return Result(added * 1e3, "ms", row.ratio, row.baseline, f"added by the load; {row.note}")


@benchmark("first_turn_request", "")
def bench_first_turn(ctx: Ctx) -> Result:
    """``Session.run_turn`` to its request reaching the scripted server: the first turn
    of a fresh process vs a later turn of the same session."""
    from import_bench import first_turn_costs

    got = first_turn_costs(ctx.pick(7, 3))
    return paired(got["candidate"], got["baseline"], "first turn vs third turn")


@benchmark("kernel_memory_per_turn", "<= 40 KB")
def bench_kernel_memory(ctx: Ctx) -> Result:
    """KB of RSS a real kernel keeps per ``%%agent`` turn (a command and a patch, both
    approved by a click) vs per plain cell, over as many of each in the same kernel."""
    from kernel_memory_bench import kernel_memory

    got = kernel_memory(ctx.pick(200, 30), ctx.tmp / "kernel_memory")
    return Result(
        got["per_turn_kb"],
        "KB",
        _ratio(got["per_turn_kb"], got["per_cell_kb"]),
        got["per_cell_kb"],
        f"{got['turns']} turns after {got['warmup']}, {got['clicks']} cards answered;"
        f" the conversation's JSON grew {got['history_kb']:.2f} KB a turn; widgets left"
        f" open: {got['widgets_left']}; {got['seconds_per_turn']:.2f} s a turn",
    )


def _rows(rows: list[dict[str, Any]]) -> list[tuple[str, str, Result | None, str]]:
    """Rows of a benchmark module that measures several things at once."""
    out: list[tuple[str, str, Result | None, str]] = []
    for row in rows:
        value = row.get("value")
        result = None
        if value is not None:
            result = Result(
                float(value),
                str(row.get("unit", "")),
                row.get("ratio"),
                row.get("baseline"),
                str(row.get("note", "")),
            )
        out.append((str(row["name"]), str(row.get("target", "")), result, str(row.get("note", ""))))
    return out


@benchmark("sandbox_start", "")
def bench_sandbox(ctx: Ctx) -> list[tuple[str, str, Result | None, str]]:
    """Start cost of a sandboxed ``true`` vs a plain one, per working mechanism."""
    from sandbox_bench import bench_sandbox_start

    return _rows(bench_sandbox_start(ctx.quick))


@benchmark("streaming_20k_deltas", "")
def bench_stream(ctx: Ctx) -> list[tuple[str, str, Result | None, str]]:
    """20k streamed text deltas through client and session vs a json.loads per payload."""
    from stream_bench import bench_streaming

    return _rows(bench_streaming(ctx.quick))


@benchmark("truncate_output", "")
def bench_truncate(ctx: Ctx) -> list[tuple[str, str, Result | None, str]]:
    """A large command output cut to 10,000 tokens (Codex's header included) vs bare
    UTF-8 byte slicing of its head and tail."""
    from truncate_bench import bench_truncation

    return _rows(bench_truncation(ctx.quick))


@benchmark("live_notebook_vs_peer", "")
def bench_live_notebook(ctx: Ctx) -> list[tuple[str, str, Result | None, str]]:
    """read_notebook, an inserted cell and run_cell on the open notebook at 20, 200 and
    1,000 cells vs jupyter-mcp-server 2.2.4's read_notebook, insert_cell and execute_cell
    over MCP, same Jupyter server, notebook and kernel; skipped rows without the peer's
    venv."""
    from live_notebook_bench import bench_live_notebook as run

    return _rows(run(ctx.quick))


CODEX_CASES = ("echo", "parallel_3", "patch_3_hunks", "output_1_3mb", "session_200_calls")


def _codex_turn(case: str) -> Callable[[Ctx], list[tuple[str, str, Result | None, str]]]:
    def run(ctx: Ctx) -> list[tuple[str, str, Result | None, str]]:
        """A whole ``agent-magics exec`` turn vs ``codex exec`` on the same scripted case;
        skipped without ``--codex``."""
        from codex_bench import bench_codex

        return _rows(bench_codex(ctx.codex, ctx.quick, only=case))

    return run


for _case in CODEX_CASES:
    benchmark(f"codex_turn_{_case}", "")(_codex_turn(_case))


def _sleepers(ctx: Ctx, parallel: bool, turns: int) -> Result:
    calls, seconds = 8, 0.2
    # a folder of its own: the scratch folder holds the grep tree, whose scan before a
    # turn's first call (see turn_scan_20k) is not what this row measures
    work = ctx.tmp / "sleepers"
    work.mkdir(exist_ok=True)
    phase = _cases.session_tool_phase(work, parallel, calls, seconds, turns)
    serial = calls * seconds
    return Result(
        phase * 1e3,
        "ms",
        phase / serial,
        serial * 1e3,
        f"tool phase in a real Session; median of {turns} turns",
    )


def _tree(ctx: Ctx) -> _gen.Tree:
    files = ctx.pick(50_000, 5_000)
    return ctx.fixture("tree", lambda: _gen.make_tree(ctx.tmp / "tree", files))


def _big_file(ctx: Ctx) -> _gen.TextFile:
    size = ctx.pick(1 << 30, 128 << 20)
    return ctx.fixture("big_file", lambda: _gen.make_text_file(ctx.tmp / "big.txt", size))


def paired(candidate: list[float], baseline: list[float], note: str) -> Result:
    """A row from interleaved runs in seconds: value and baseline are medians in ms, ratio
    the median of the runs' own ratios (a run of each side back to back sees the same
    load); the note adds min/median/max of both sides."""
    return Result(
        median(candidate) * 1e3,
        "ms",
        median(c / b for c, b in zip(candidate, baseline, strict=True)),
        median(baseline) * 1e3,
        f"{note}; {len(candidate)} interleaved runs, ms min/median/max:"
        f" ours {spread(candidate, 1e3)}, baseline {spread(baseline, 1e3)}",
    )


def _ratio(candidate: float, baseline: float) -> float | None:
    return candidate / baseline if baseline > 0 else None


# -- running ----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the agent_magics benchmarks.")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("--quick", action="store_true", help="smaller data, fewer runs")
    parser.add_argument(
        "--only", action="append", metavar="NAME", help="run only this benchmark (repeatable)"
    )
    parser.add_argument("--tmpdir", metavar="DIR", help="where to generate the data")
    parser.add_argument(
        "--codex", metavar="PATH", help="a Codex CLI binary: compare whole turns with it"
    )
    args = parser.parse_args(argv)
    names = [b.name for b in BENCHMARKS]
    unknown = [n for n in args.only or () if n not in names]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)}; known: {', '.join(names)}")
    chosen = [b for b in BENCHMARKS if not args.only or b.name in args.only]

    crashed = False
    started = time.monotonic()
    parent = args.tmpdir or _gen.scratch_parent(args.quick)
    tmp = Path(tempfile.mkdtemp(prefix="agent_magics_bench_", dir=parent))
    try:
        ctx = Ctx(quick=args.quick, tmp=tmp, codex=args.codex)
        if not args.json:
            header()
        for b in chosen:
            t0 = time.monotonic()
            try:
                result = b.run(ctx)
            except Exception as exc:
                crashed = True
                traceback.print_exc(file=sys.stderr)
                report(
                    b.name,
                    b.target,
                    None,
                    time.monotonic() - t0,
                    args.json,
                    f"{type(exc).__name__}: {exc}",
                )
                continue
            secs = time.monotonic() - t0
            if isinstance(result, Result):
                report(b.name, b.target, result, secs, args.json)
                continue
            for name, target, row, note in result:
                report(name, target, row, secs, args.json, skipped="" if row else note)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not args.json:
        mode = "quick" if args.quick else "full"
        took = time.monotonic() - started
        print(f"\n{len(chosen)} benchmark(s), {mode} run, data in {tmp.parent}, {took:.1f} s")
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
