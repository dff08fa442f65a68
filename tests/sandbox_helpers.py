"""What the sandbox and approval tests share: a folder layout outside every writable root,
a way to pick the sandbox mechanism, and a recording approver."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from agent_magics.tools.approval import ApprovalRequest, ReviewDecision
from agent_magics.tools.context import SessionServices
from agent_magics.tools.sandbox import platform
from agent_magics.tools.sandbox.roots import real

LINUX_MECHANISMS = ("bwrap", "landlock")


def mechanism_problem(kind: str) -> str | None:
    """Why ``kind`` does not confine commands on this machine (``None``: it does)."""
    if not sys.platform.startswith("linux"):
        return f"{kind} is a Linux mechanism and this is {sys.platform}"
    if kind == "bwrap":
        from agent_magics.tools.sandbox import bwrap

        return bwrap.probe()
    from agent_magics.tools.sandbox import landlock

    return landlock.probe()


@contextmanager
def use_mechanism(monkeypatch: pytest.MonkeyPatch, kind: str) -> Iterator[None]:
    """Make this process's probe pick ``kind`` (``none``: no mechanism works)."""
    monkeypatch.setenv(platform.MECHANISM_ENV, kind)
    platform.probe.cache_clear()
    try:
        yield
    finally:
        monkeypatch.delenv(platform.MECHANISM_ENV)
        platform.probe.cache_clear()


def require_mechanism(kind: str) -> None:
    problem = mechanism_problem(kind)
    if problem is not None:
        pytest.skip(f"{kind} cannot confine commands here: {problem}")


def _outside_base() -> Path | None:
    """A folder for test data that no ``workspace-write`` root covers (/tmp, $TMPDIR)."""
    covered = [real(Path("/tmp"))]
    if os.environ.get("TMPDIR"):
        covered.append(real(Path(os.environ["TMPDIR"])))
    for candidate in (Path("/var/tmp"), Path.home()):
        base = real(candidate)
        inside = any(base == c or c in base.parents for c in covered)
        if base.is_dir() and os.access(base, os.W_OK) and not inside:
            return base
    return None


@dataclass
class Arena:
    """``root/ws`` is the workspace; ``root/outside`` and ``root/home`` must not change."""

    root: Path
    ws: Path
    outside: Path
    home: Path

    def fill(self, text: str) -> str:
        return text.format(outside=self.outside, root=self.root, python=sys.executable)

    def snapshot(self) -> dict[str, Any]:
        """Everything outside the workspace: kinds, modes, bytes and link targets."""
        seen: dict[str, Any] = {".": os.lstat(self.root).st_mode}
        for dirpath, dirnames, filenames in os.walk(self.root):
            here = Path(dirpath)
            if here == self.ws:
                dirnames[:] = []
                continue
            for name in [*dirnames, *filenames]:
                path = here / name
                if path == self.ws:
                    continue
                info = os.lstat(path)
                rel = str(path.relative_to(self.root))
                if path.is_symlink():
                    seen[rel] = ("link", os.readlink(path))
                elif path.is_file():
                    seen[rel] = ("file", info.st_mode, info.st_nlink, path.read_bytes())
                else:
                    seen[rel] = ("dir", info.st_mode)
        return seen


@pytest.fixture
def arena() -> Iterator[Arena]:
    base = _outside_base()
    if base is None:
        pytest.skip("no writable folder outside /tmp and $TMPDIR for the escape targets")
    root = Path(tempfile.mkdtemp(prefix="agent-magics-escape-", dir=base))
    found = Arena(root, root / "ws", root / "outside", root / "home")
    for folder in (found.ws, found.outside, found.home):
        folder.mkdir()
    (found.outside / "target.txt").write_text("original\n")
    (found.ws / "out_link").symlink_to(found.outside)
    (found.ws / ".git").mkdir()
    (found.ws / ".git" / "config").write_text("[core]\n")
    (found.ws / "victim.txt").write_text("victim\n")
    try:
        yield found
    finally:
        shutil.rmtree(root, ignore_errors=True)


@dataclass
class RecordingApprover:
    """Answers every request with ``decision`` and keeps what it was asked."""

    decision: ReviewDecision = ReviewDecision.APPROVED
    asked: list[ApprovalRequest] = field(default_factory=list)

    async def __call__(self, request: ApprovalRequest) -> ReviewDecision:
        self.asked.append(request)
        return self.decision


async def close(services: SessionServices) -> None:
    for state in services.all_state():
        closer = getattr(state, "close", None)
        if closer is not None:
            await closer()
