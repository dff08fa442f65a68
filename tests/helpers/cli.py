"""``agent-magics`` run as a command in a folder, with the caller's environment cleaned of
our settings and keys, ``HOME`` in the folder, and the variables a test gives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def agent_magics(cwd: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``python -m agent_magics ARGS`` in ``cwd`` (stdin closed, 120 s at most)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    clean |= {"HOME": str(cwd), **env}
    return subprocess.run(
        [sys.executable, "-m", "agent_magics", *args], env=clean, cwd=cwd, capture_output=True,
        text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
