"""A command's wall time through the shell snapshot against ``bash -lc``, with a profile
that takes 0.3 s (what pyenv or conda set-up costs): each run spawns the command the
exec tools would spawn, interleaved, and waits for it to end.

    .venv/bin/python bench/shell_snapshot_bench.py
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from agent_magics.tools.unified_exec.command_line import command_env
from agent_magics.tools.unified_exec.snapshot import ShellSnapshot

PROFILE_SLEEP_S = 0.3
RUNS = 7
SCRIPT = 'echo "$PROFILE_VAR"'


def _run(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    start = time.perf_counter()
    out = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, check=True).stdout
    spent = time.perf_counter() - start
    if out != b"set by the profile\n":
        raise RuntimeError(f"unexpected output {out!r}")
    return spent


def snapshot_costs(runs: int = RUNS) -> dict[str, list[float]]:
    """Seconds per command, interleaved: through the snapshot, and ``bash -lc``."""
    old_home = os.environ.get("HOME")
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        (home / ".bash_profile").write_text(
            f"sleep {PROFILE_SLEEP_S}\nexport PROFILE_VAR='set by the profile'\n"
        )
        os.environ["HOME"] = str(home)
        try:
            env = command_env("bench", unified=True)
            snapshot = ShellSnapshot("/bin/bash", home, env).start()
            if not snapshot.wait(30):
                raise RuntimeError(f"no snapshot: {snapshot.failure}")
            login = ["/bin/bash", "-lc", SCRIPT]
            rewritten = snapshot.command(login, env)
            assert rewritten is not None
            ours, baseline = [], []
            for _ in range(runs):
                ours.append(_run(*rewritten, home))
                baseline.append(_run(login, env, home))
            snapshot.close()
        finally:
            if old_home is None:
                os.environ.pop("HOME", None)
            else:
                os.environ["HOME"] = old_home
    return {"candidate": ours, "baseline": baseline}


if __name__ == "__main__":
    got = snapshot_costs()
    for side, values in got.items():
        print(f"{side:>9}: median {statistics.median(values) * 1e3:.1f} ms")
