"""``list_dir`` on a big folder against reading and sorting its names in the same process.

The folder's empty files are created in a shuffled order, so that the order the system
lists them in is not already sorted (tmpfs lists in creation order, ext4 in hash order).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import statistics
import subprocess
from collections.abc import Callable
from pathlib import Path

from _cases import interleaved_times

from agent_magics.tools.context import (
    FunctionPayload,
    SessionServices,
    ToolInvocation,
    TurnContext,
)
from agent_magics.tools.handlers.list_dir import ListDirHandler

PAGE = 25  # entries shown, the handler's default limit


def make_flat_folder(root: Path, files: int) -> Path:
    """``files`` empty files in one folder, created in a shuffled order."""
    root.mkdir(parents=True, exist_ok=True)
    names = [f"file_{i:06d}.txt" for i in range(files)]
    random.Random(0).shuffle(names)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    for name in names:
        os.close(os.open(f"{root}/{name}", flags, 0o644))
    return root


def sorted_names(folder: Path) -> list[str]:
    return sorted(e.name for e in os.scandir(folder))


def sorted_walk(folder: Path, depth: int) -> list[str]:
    """The relative paths of everything within ``depth`` levels, sorted."""
    found: list[str] = []
    level = [(str(folder), "")]
    for _ in range(depth):
        below: list[tuple[str, str]] = []
        for path, prefix in level:
            for e in os.scandir(path):
                found.append(prefix + e.name)
                if e.is_dir(follow_symlinks=False):
                    below.append((e.path, f"{prefix}{e.name}/"))
        level = below
    return sorted(found)


def _call(runner: asyncio.Runner, folder: Path, depth: int) -> Callable[[], str]:
    handler = ListDirHandler()
    args = {"dir_path": str(folder), "offset": 1, "limit": PAGE, "depth": depth}
    inv = ToolInvocation(
        "call_bench",
        handler.name,
        FunctionPayload(json.dumps(args)),
        TurnContext(cwd=folder),
        SessionServices(),
    )
    return lambda: runner.run(handler.handle(inv)).text


def flat(folder: Path, runs: int) -> tuple[list[float], list[float], float]:
    """(times in s of the handler, of :func:`sorted_names`; median s of ``ls -f``)."""
    with asyncio.Runner() as runner:
        candidate = _call(runner, folder, 2)
        want = [f"Absolute path: {folder}", *sorted_names(folder)[:PAGE]]
        if candidate().split("\n")[: PAGE + 1] != want:
            raise RuntimeError("list_dir and sorted(os.scandir) disagree on the first page")
        cand, base = interleaved_times(runs, candidate, lambda: sorted_names(folder))
    ls_f = ["ls", "-f", str(folder)]
    (ls,) = interleaved_times(runs, lambda: subprocess.run(ls_f, stdout=subprocess.DEVNULL))
    return cand, base, statistics.median(ls)


def tree(folder: Path, depth: int, runs: int) -> tuple[float, float, int]:
    """(median s of the handler at ``depth``, of :func:`sorted_walk`; entries listed)."""
    with asyncio.Runner() as runner:
        candidate = _call(runner, folder, depth)
        cand, base = interleaved_times(runs, candidate, lambda: sorted_walk(folder, depth))
    return statistics.median(cand), statistics.median(base), len(sorted_walk(folder, depth))
