"""A git command in a test's repository, with an identity of its own (no global config
needed) and ``main`` as the first branch."""

from __future__ import annotations

import subprocess
from pathlib import Path

IDENTITY = ["-c", "user.name=A", "-c", "user.email=a@example.org", "-c", "init.defaultBranch=main"]


def git(repo: Path, *args: str) -> str:
    """Run ``git ARGS`` in ``repo``; its stdout, stripped (a failure fails the test)."""
    done = subprocess.run(["git", *IDENTITY, *args], cwd=repo, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()
