"""Shared fixtures: where the conformance material lives, real kernels with the extension
loaded, a session's services whose processes are closed after the test, the sandbox
tests' arena and runs, sessions against a fault server, and a home with no settings of
the machine's. What they are built from lives in tests/helpers/."""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_magics.tools.context import SessionServices
from agent_magics.tools.unified_exec import manager_for
from tests.helpers.browser import CHROMIUM, require_browser
from tests.helpers.fault_run import fault_run
from tests.helpers.kernels import KERNEL_PYTHONS, Kernel, loaded_kernel
from tests.helpers.paths import CONFORMANCE
from tests.helpers.sandbox import LINUX_MECHANISMS, Arena, Run, outside_base, require_mechanism

_RUN_HOME = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """The whole run gets a home of its own: no test reads the machine's dotfiles, key or
    settings, and no test writes to them. A login shell (``bash -lc``, the shell tools'
    default) then reads only the system's profile: a machine whose own ``~/.profile``
    is slow (a stale ``pyenv rehash`` lock waits 60 s) made every command time out.
    xdist's workers inherit the controller's home; the tests' own homes (the ``home``
    fixture, the sandbox arena's) still come on top."""
    if "PYTEST_XDIST_WORKER" in os.environ:
        return
    # Outside /tmp, as a person's home is: start-up files inside a writable root are not
    # read by commands at all (tools/unified_exec/snapshot.py).
    home = tempfile.mkdtemp(prefix="agent-magics-home-", dir=outside_base())
    config.stash[_RUN_HOME] = os.environ["HOME"] = home


def pytest_unconfigure(config: pytest.Config) -> None:
    home = config.stash.get(_RUN_HOME, None)
    if home is not None:
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def conformance() -> Path:
    if str(CONFORMANCE) not in sys.path:
        sys.path.insert(0, str(CONFORMANCE))
    return CONFORMANCE


@pytest.fixture(params=KERNEL_PYTHONS)
def kernel(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Kernel]:
    """A real kernel per kernel interpreter (:mod:`tests.helpers.kernels`), the extension loaded,
    working in ``kernel.ws``."""
    with loaded_kernel(request.param, tmp_path) as k:
        yield k


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """One browser test at a time across pytest-xdist's workers: JupyterLab and Chromium
    on both cores at once starve each other. The lock is a file in the folder the workers
    share, held for one test's setup, call and teardown (so also while a module's lab or
    Chromium starts or stops), never between tests: a worker waiting for its next test
    while holding it would stall the other worker's browser test, and the run with it."""
    if "browser" not in getattr(item, "fixturenames", ()) or not os.environ.get(
        "PYTEST_XDIST_WORKER"
    ):
        return (yield)
    shared = item.config._tmp_path_factory.getbasetemp().parent  # type: ignore[attr-defined]
    with open(shared / "browser.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return (yield)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright (skips without them: tests/helpers/browser.py)."""
    sync_api = require_browser()
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
async def services() -> AsyncIterator[SessionServices]:
    """Session services whose process manager is closed after the test."""
    services = SessionServices()
    yield services
    await manager_for(services).close()


@pytest.fixture
def arena() -> Iterator[Arena]:
    base = outside_base()
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


@pytest.fixture(
    params=[
        pytest.param((driver, kind), id=f"{driver}-{kind}")
        for driver in ("cli", "orchestrator")
        for kind in LINUX_MECHANISMS
    ]
)
def run(request: Any, arena: Arena, monkeypatch: pytest.MonkeyPatch) -> Run:
    driver, kind = request.param
    require_mechanism(kind)
    return Run(driver, kind, arena, monkeypatch)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """No settings, key or server from the machine: only what the test's cells say."""
    for name in [k for k in os.environ if k.startswith(("AGENT_MAGICS_", "OPENAI_"))]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "specs"))
    return tmp_path


__all__ = ["fault_run"]  # a fixture: pytest finds it here
