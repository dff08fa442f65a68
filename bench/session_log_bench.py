"""What one session-file line costs: ``SessionLog.write`` (redact every string, dump the
JSON, one ``write``) against the same followed by ``os.fsync``, per line, for a typical
history item (a 1 KB tool output) and a large one (100 KB).

    .venv/bin/python bench/session_log_bench.py

A kill of the process loses nothing ``write`` handed to the operating system; ``fsync``
only adds safety against the machine itself crashing.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from agent_magics.agent.redaction import SessionRedactor
from agent_magics.config import SessionConfig
from agent_magics.store.log import SessionLog

LINES = 500
RUNS = 5


def per_line_us(folder: Path, size: int, sync: bool) -> float:
    config = SessionConfig(cwd=folder, api_key="sk-bench-0123456789abcdefghij")
    redact = SessionRedactor(lambda: config)
    log = SessionLog.open(folder, f"s{size}{sync}{time.monotonic_ns()}", config, redact.text)
    item = {"type": "function_call_output", "call_id": "c1", "output": "x" * size}
    fd = log._fd
    assert fd is not None
    start = time.perf_counter()
    for n in range(LINES):
        log.write({"type": "item", "turn": 1, "n": n, "item": item})
        if sync:
            os.fsync(fd)
    spent = time.perf_counter() - start
    log.close()
    return spent / LINES * 1e6


def floor_line_us(folder: Path, size: int) -> float:
    """The same record as one ``json.dumps`` and one ``os.write``, nothing else: the
    least any writer of a JSONL line pays."""
    import json

    item = {"type": "function_call_output", "call_id": "c1", "output": "x" * size}
    fd = os.open(folder / f"floor{size}{time.monotonic_ns()}.jsonl", os.O_WRONLY | os.O_CREAT)
    start = time.perf_counter()
    for n in range(LINES):
        record = {"type": "item", "turn": 1, "n": n, "item": item}
        os.write(fd, (json.dumps(record) + "\n").encode())
    spent = time.perf_counter() - start
    os.close(fd)
    return spent / LINES * 1e6


def line_costs(folder: Path, size: int, runs: int = RUNS) -> dict[str, float]:
    """Median µs per line: ours, ours with an fsync, and the floor (interleaved runs)."""
    ours, synced, floor = [], [], []
    for _ in range(runs):
        ours.append(per_line_us(folder, size, False))
        synced.append(per_line_us(folder, size, True))
        floor.append(floor_line_us(folder, size))
    return {
        "candidate": statistics.median(ours),
        "fsync": statistics.median(synced),
        "baseline": statistics.median(floor),
    }


def main() -> None:
    with tempfile.TemporaryDirectory(dir=Path.cwd()) as tmp:
        folder = Path(tmp)
        for size in (1_000, 100_000):
            for sync in (False, True):
                runs = [per_line_us(folder, size, sync) for _ in range(RUNS)]
                label = "write + fsync" if sync else "write"
                print(f"{size:>7} B item, {label:<13}: {statistics.median(runs):8.1f} us/line")


if __name__ == "__main__":
    main()
