"""What finding the files commands changed costs: the scan before a turn's first command
(stats, and the content of the small files) and the one at its end (stats only), against
a plain ``os.walk`` with ``lstat`` of the same tree, for a project of 2,000 and of 20,000
(the budget) files of 4 KB, plus a ``node_modules`` of 20,000 files the scan skips.

    .venv/bin/python bench/turn_scan_bench.py

The scans run on the kernel's loop, so their time is how long the kernel pauses once
before the first command of a turn and once at its end.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from agent_magics.store.scan import scan_folder

RUNS = 5
FILE_BYTES = 4096
PER_FOLDER = 100


def make_tree(root: Path, files: int) -> None:
    data = b"x" * (FILE_BYTES - 1) + b"\n"
    for n in range(files):
        folder = root / f"pkg{n // PER_FOLDER}"
        folder.mkdir(exist_ok=True)
        (folder / f"m{n}.py").write_bytes(data)


def walk(root: Path) -> int:
    count = 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "node_modules"]
        for name in names:
            os.lstat(os.path.join(folder, name))
            count += 1
    return count


def median_ms(task: Callable[[Path], object], root: Path) -> float:
    runs = []
    for _ in range(RUNS):
        start = time.perf_counter()
        task(root)
        runs.append(time.perf_counter() - start)
    return statistics.median(runs) * 1000


def scan_costs(root: Path, files: int, runs: int = RUNS) -> dict[str, float]:
    """Median ms of the first scan (contents kept), the end scan and the plain walk, on
    a tree of ``files`` files plus a skipped ``node_modules`` of as many."""
    global RUNS
    RUNS = runs
    make_tree(root, files)
    (root / "node_modules").mkdir()
    make_tree(root / "node_modules", files)
    assert len(scan_folder(root, keep=False).stats) == walk(root) == files
    return {
        "baseline": median_ms(walk, root),
        "candidate": median_ms(partial(scan_folder, keep=True), root),
        "end": median_ms(partial(scan_folder, keep=False), root),
    }


def main() -> None:
    for files in (2_000, 20_000):
        with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
            root = Path(tmp)
            make_tree(root, files)
            (root / "node_modules").mkdir()
            make_tree(root / "node_modules", 20_000)
            assert len(scan_folder(root, keep=False).stats) == walk(root) == files
            base = median_ms(walk, root)
            first = median_ms(partial(scan_folder, keep=True), root)
            end = median_ms(partial(scan_folder, keep=False), root)
            print(
                f"{files:>6} files: first scan {first:7.1f} ms ({first / base:4.1f}x walk), "
                f"end scan {end:7.1f} ms ({end / base:4.1f}x walk), os.walk {base:6.1f} ms"
            )


if __name__ == "__main__":
    main()
