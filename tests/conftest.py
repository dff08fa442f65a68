"""Shared fixtures: where the conformance material lives, real kernels with the extension
loaded, the in-process shell (``ip``), JupyterLab servers (``lab``, ``module_lab``), a
faster clock for the agent's limits, a session's services whose processes are closed
after the test, the sandbox tests' arena and runs, sessions against a fault server, and
a home with no settings of the machine's. What they are built from lives in
tests/helpers/."""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_magics import clock
from agent_magics.clock import Clock
from agent_magics.tools.context import SessionServices
from agent_magics.tools.unified_exec import manager_for
from tests.helpers.browser import CHROMIUM, Lab, require_browser
from tests.helpers.fault_run import fault_run
from tests.helpers.kernels import KERNEL_PYTHONS, Kernel, loaded_kernel
from tests.helpers.paths import CONFORMANCE
from tests.helpers.sandbox import LINUX_MECHANISMS, Arena, Run, outside_base, require_mechanism
from tests.helpers.shell import loaded_shell

_RUN_HOME = pytest.StashKey[str]()


def pytest_configure(config: pytest.Config) -> None:
    """The whole run gets a home of its own: no test reads the machine's dotfiles, key or
    settings, and no test writes to them. A login shell (``bash -lc``, the shell tools'
    default) then reads only the system's profile: a machine whose own ``~/.profile``
    is slow (a stale ``pyenv rehash`` lock waits 60 s) made every command time out.
    xdist's workers inherit the controller's home; the tests' own homes (the ``home``
    fixture, the sandbox arena's) still come on top."""
    config.addinivalue_line("markers", "home(folder, outside): where the home fixture is")
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
def speed_clock() -> Iterator[Callable[[float], Clock]]:
    """``speed_clock(rate)`` runs the agent's limits and backoffs ``rate`` times faster
    (:mod:`agent_magics.clock`) for the rest of the test, for a test whose scripted
    servers scale their own delays by the same clock (:meth:`Clock.real`). The texts
    still speak of the nominal seconds."""
    previous = clock.current()

    def speed(rate: float) -> Clock:
        clock.use(Clock(rate))
        return clock.current()

    try:
        yield speed
    finally:
        clock.use(previous)


@pytest.fixture
def lab_options() -> dict[str, Any]:
    """How ``lab`` starts its server (:class:`Lab`'s keywords); a module overrides this
    (a prefix and a token, the environment its kernels inherit)."""
    return {}


@pytest.fixture
def lab(tmp_path: Path, lab_options: dict[str, Any]) -> Iterator[Lab]:
    """JupyterLab in ``tmp_path`` for one test, started as ``lab_options`` says."""
    with Lab(tmp_path, **lab_options) as server:
        yield server


@pytest.fixture(scope="module")
def module_lab_options() -> dict[str, Any]:
    """How ``module_lab`` starts its server; a module overrides this."""
    return {}


@pytest.fixture(scope="module")
def module_lab(
    tmp_path_factory: pytest.TempPathFactory, module_lab_options: dict[str, Any]
) -> Iterator[Lab]:
    """One JupyterLab for every test of a module, in a home of its own (its kernels
    keep their sessions there), started as ``module_lab_options`` says."""
    root = tmp_path_factory.mktemp("lab")
    (root / "home").mkdir()
    options = dict(module_lab_options)
    env = {"HOME": str(root / "home"), "XDG_DATA_HOME": None, "XDG_CONFIG_HOME": None}
    env |= options.pop("env", {})
    with Lab(root, **options, env=env) as server:
        yield server


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
def ip_cwd(tmp_path: Path) -> Path:
    """The folder the ``ip`` shell works in (a module overrides it to work elsewhere)."""
    return tmp_path


@pytest.fixture
def ip(ip_cwd: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The process's IPython shell with ``agent_magics`` loaded, working in ``ip_cwd``
    (:func:`tests.helpers.shell.loaded_shell`)."""
    monkeypatch.chdir(ip_cwd)
    with loaded_shell() as shell:
        yield shell


@pytest.fixture
def home(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of the test's own, with no settings, key or server from the machine: only
    what the test puts there (``HOME`` is it, Jupyter's kernel specs are looked up in it,
    no ``AGENT_MAGICS_*`` or ``OPENAI_*`` variable is set). It is ``tmp_path`` unless the
    module is marked ``pytest.mark.home(...)``: ``folder=NAME`` for ``tmp_path / NAME``
    (``tmp_path`` is then free for a project), ``outside=True`` for a folder outside
    the roots the model's commands may write (/tmp is one), as a person's home is, so
    that bash (``SHELL``) reads a login profile there; skipped where there is none."""
    mark = request.node.get_closest_marker("home")
    options: dict[str, Any] = mark.kwargs if mark else {}
    for name in [k for k in os.environ if k.startswith(("AGENT_MAGICS_", "OPENAI_"))]:
        monkeypatch.delenv(name)
    if options.get("outside"):
        base = outside_base()
        if base is None:
            pytest.skip("no writable folder outside /tmp and $TMPDIR for the home")
        found = Path(tempfile.mkdtemp(prefix="agent-magics-home-", dir=base))
        request.addfinalizer(lambda: shutil.rmtree(found, ignore_errors=True))
        monkeypatch.setenv("SHELL", "/bin/bash")
    else:
        found = tmp_path / options.get("folder", "")
        found.mkdir(exist_ok=True)
    monkeypatch.setenv("HOME", str(found))
    monkeypatch.setenv("JUPYTER_PATH", str(found / "specs"))
    return found


__all__ = ["fault_run"]  # a fixture: pytest finds it here
