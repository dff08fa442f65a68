"""``agent-magics`` run as a command in a folder, with the caller's environment cleaned of
our settings and keys, ``HOME`` in the folder, and the variables a test gives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ON_CLOCK = """\
import sys
from agent_magics import clock
clock.use(clock.Clock(float(sys.argv.pop(1))))
from agent_magics.terminal.cli import main
sys.exit(main())
"""
"""``python -m agent_magics`` with the agent's clock set first (its rate the first argument)."""


def agent_magics(
    cwd: Path, *args: str, env: dict[str, str], clock_rate: float = 1.0
) -> subprocess.CompletedProcess[str]:
    """Run ``python -m agent_magics ARGS`` in ``cwd`` (stdin closed, 120 s at most).
    ``clock_rate`` runs the agent's limits and backoffs that much faster
    (:mod:`agent_magics.clock`): the process is started with its clock set, by no
    setting, option or variable that the product reads."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    clean |= {"HOME": str(cwd), **env}
    start = ["-m", "agent_magics"] if clock_rate == 1 else ["-c", ON_CLOCK, str(clock_rate)]
    return subprocess.run(
        [sys.executable, *start, *args], env=clean, cwd=cwd, capture_output=True,
        text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
