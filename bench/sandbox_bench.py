"""Sandbox start cost: running ``true`` confined vs unconfined, as a ratio.

For each mechanism that works on this machine (bubblewrap, the Landlock launcher,
Seatbelt), ``true`` is spawned and waited for through ``SandboxSpec.wrap`` with a
``workspace-write`` spec (a workspace, ``/tmp``, network off), interleaved with plain
``true`` runs, after one warm-up of each. The workspace's ``.git`` and ``.agent_magics``
are protected as in a turn (missing: bubblewrap mounts placeholders, Landlock grants
the workspace entry by entry), and what a turn hides from commands is hidden (the
session signing key, Jupyter's runtime folder: bubblewrap mounts over those that exist,
Landlock grants reading entry by entry on the way to them; the note gives the number of
rules). Value = median milliseconds of the confined run; ratio = confined / unconfined
median. A mechanism that does not work here gives a
row with ``value`` None and the reason in ``note``.

    python bench/sandbox_bench.py [--quick]
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, if not installed

from agent_magics.protocol.approval import SandboxMode
from agent_magics.tools.sandbox import SandboxSpec
from agent_magics.tools.sandbox.platform import candidates, hidden
from agent_magics.tools.sandbox.roots import guarded_paths, writable_roots

TARGETS = {"bwrap": "<= 15", "landlock": "<= 40", "seatbelt": "<= 15"}
TRUE = shutil.which("true") or "/bin/true"


def _spawn_s(argv: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    return time.perf_counter() - started


def _measure(argv: list[str], runs: int) -> tuple[float, float]:
    """Medians (seconds) of ``argv`` and of plain ``true``, interleaved."""
    _spawn_s(argv), _spawn_s([TRUE])
    confined, plain = [], []
    for _ in range(runs):
        confined.append(_spawn_s(argv))
        plain.append(_spawn_s([TRUE]))
    return statistics.median(confined), statistics.median(plain)


def bench_sandbox_start(quick: bool) -> list[dict[str, Any]]:
    """One row per mechanism this operating system offers."""
    runs = 30 if quick else 200
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="sandbox-bench-") as tmp:
        roots = tuple(writable_roots(Path(tmp), SandboxMode.WORKSPACE_WRITE))
        for kind, check in candidates():
            name, target = f"sandbox_start_{kind}", TARGETS.get(kind, "")
            problem, describe = check()
            if problem is not None:
                rows.append(dict(name=name, value=None, unit="ms", ratio=None, target=target,
                                 note=f"not available here: {problem}"))  # fmt: skip
                continue
            protected = tuple(guarded_paths(roots[0]))  # .git, .agent_magics: missing
            spec = SandboxSpec(kind, roots, protected, network=False, hidden=hidden(roots[0]))
            argv = spec.wrap([TRUE])
            confined, plain = _measure(argv, runs)
            rules = f"; {argv.count('--read')} read and {argv.count('--rw')} write rules"
            rows.append(
                {
                    "name": name,
                    "value": round(confined * 1e3, 3),
                    "unit": "ms",
                    "ratio": round(confined / plain, 2),
                    "target": target,
                    "baseline": round(plain * 1e3, 3),
                    "note": f"{describe()}; `true` spawned and waited for; median of {runs}"
                    + (rules if kind == "landlock" else ""),
                }
            )
    return rows


if __name__ == "__main__":
    for row in bench_sandbox_start("--quick" in sys.argv[1:]):
        print(json.dumps(row))
