"""Binder builds its image from ``binder/`` with repo2docker; this test builds the same
environment in a fresh virtual environment and runs every notebook in it.

What repo2docker does, step for step (a ``binder/`` folder makes it ignore the root's
``pyproject.toml``): the Python that ``binder/runtime.txt`` names; ``pip install -r
binder/requirements.txt``; then ``binder/postBuild``, run from the repository root with
the image's own home. Here: ``python -m venv`` (no system site packages) of that
version, the same pip command (allowed to use pip's cache, which only saves downloads),
then ``binder/postBuild`` in a copy of the tracked files (what Binder clones), with an
empty home and the venv's ``bin`` first on ``PATH``.

Each notebook then runs with nbclient in a kernel of that venv, working in its folder of
its own copy, as JupyterLab starts it on Binder: no API key, no base URL, nothing of this
machine's agent settings. Binder's containers cannot make user namespaces, so bubblewrap
does not work there; the kernel gets Landlock, the sandbox that is left (when this
machine has it; test_notebooks.py covers bubblewrap).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from agent_magics.tools.sandbox import landlock
from agent_magics.tools.sandbox.platform import MECHANISM_ENV
from tests.helpers.kernels import write_kernelspec
from tests.helpers.notebooks import agent_cells, transcript
from tests.helpers.paths import ROOT

pytestmark = pytest.mark.slow

NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))
DROPPED = ("OPENAI_", "AGENT_MAGICS_", "JUPYTER", "JPY_", "IPYTHON", "XDG_", "PYTHON")
"""What Binder's environment does not have: keys, base URLs and agent settings of this
machine, its Jupyter and IPython folders, its Python paths."""
DROPPED_NAMES = ("VIRTUAL_ENV", "CONDA_PREFIX", "MPLBACKEND")
WHERE = """\
import sys, agent_magics
from agent_magics.tools.sandbox.platform import probe
print(agent_magics.__file__, sys.prefix, probe().kind, sep="\\n")
"""
"""The last cell: where the kernel's package and Python lie, and its sandbox mechanism."""


@dataclass(frozen=True)
class BinderImage:
    """The built environment: the checkout postBuild ran in, its home and its venv."""

    repo: Path
    home: Path
    venv: Path
    seconds: dict[str, float]

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"


def version_of(python: str) -> str:
    """``major.minor`` of ``python`` ("": it does not run, as a version manager's shim
    without a Python behind it)."""
    asked = "import sys; print('%d.%d' % sys.version_info[:2])"
    return subprocess.run([python, "-c", asked], capture_output=True, text=True).stdout.strip()


def runtime_python() -> str:
    """An interpreter of the version ``binder/runtime.txt`` names."""
    version = (ROOT / "binder" / "runtime.txt").read_text().strip().removeprefix("python-")
    for candidate in (sys.executable, shutil.which(f"python{version}")):
        if candidate and version_of(candidate) == version:
            return candidate
    why = f"binder/runtime.txt asks for Python {version}, which this machine does not have"
    if os.environ.get("CI"):
        pytest.fail(why)
    pytest.skip(why)


def pip_cache() -> str | None:
    """This machine's pip cache, found before the home changes (``None``: disabled)."""
    out = subprocess.run(
        [sys.executable, "-m", "pip", "cache", "dir"], capture_output=True, text=True
    )
    if out.returncode != 0:
        return None
    return out.stdout.strip() or None


def binder_environ(home: Path, venv: Path) -> dict[str, str]:
    """This process's environment as Binder would have it: its own home, the venv first
    on ``PATH``, none of this machine's agent, Jupyter or Python settings."""
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(DROPPED) and k not in DROPPED_NAMES
    }
    env["HOME"] = str(home)
    env["PATH"] = os.pathsep.join([str(venv / "bin"), os.environ.get("PATH", os.defpath)])
    return env


def clean_checkout(dest: Path) -> Path:
    """The tracked files of this repository (what Binder clones), copied to ``dest``."""
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if not source.exists() and not source.is_symlink():
            continue  # deleted in the working tree, not yet in git
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, dest / name, follow_symlinks=False)
    return dest


def run(argv: list[str], cwd: Path, env: dict[str, str], timeout: float = 900) -> float:
    """Run a build step; its duration in seconds (its output in the failure message)."""
    started = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{argv} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return time.monotonic() - started


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> BinderImage:
    """Build once what repo2docker builds, for all the notebooks."""
    base = tmp_path_factory.mktemp("binder")
    repo, home, venv = base / "repo", base / "home", base / "venv"
    home.mkdir()
    clean_checkout(repo)
    cache = pip_cache()
    env = binder_environ(home, venv)
    if cache:  # the empty home has no cache of its own
        env["PIP_CACHE_DIR"] = cache
    seconds = {"venv": run([runtime_python(), "-m", "venv", str(venv)], base, env)}
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install"]
    seconds["requirements"] = run([*pip, "-r", "binder/requirements.txt"], repo, env)
    seconds["postBuild"] = run(["./binder/postBuild"], repo, env)
    print(f"\nBinder environment built in {sum(seconds.values()):.0f} s: {seconds}")
    return BinderImage(repo, home, venv, seconds)


def binder_session(
    image: BinderImage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[Path, str]:
    """A fresh copy of the built checkout and home, this process's environment set as
    Binder's for the kernels it starts, and the kernelspec of the venv's Python."""
    repo, home = tmp_path / "repo", tmp_path / "home"
    shutil.copytree(image.repo, repo, symlinks=True)
    shutil.copytree(image.home, home, symlinks=True)
    for name in list(os.environ):
        if name.startswith(DROPPED) or name in DROPPED_NAMES:
            monkeypatch.delenv(name)
    for name, value in binder_environ(home, image.venv).items():
        monkeypatch.setenv(name, value)
    if landlock.probe() is None:  # bubblewrap cannot make user namespaces on Binder
        monkeypatch.setenv(MECHANISM_ENV, "landlock")
    specs = tmp_path / "specs"
    name = write_kernelspec(str(image.python), specs)
    monkeypatch.setenv("JUPYTER_PATH", str(specs))
    return repo, name


@pytest.mark.parametrize("notebook", NOTEBOOKS)
def test_notebook_runs_on_binder_offline(
    notebook: str, image: BinderImage, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, kernel = binder_session(image, tmp_path, monkeypatch)
    path = repo / "notebooks" / notebook
    assert path.exists(), f"notebooks/{notebook} is not tracked by git, so Binder lacks it"
    nb = nbformat.read(path, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(WHERE))  # which package the kernel runs
    resources = {"metadata": {"path": str(path.parent)}}  # JupyterLab's working folder
    started = time.monotonic()
    NotebookClient(nb, kernel_name=kernel, timeout=120, resources=resources).execute()
    print(f"\n{notebook} ran in {time.monotonic() - started:.1f} s")

    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors, [f"{e.ename}: {e.evalue}" for e in errors]
    texts = [o.get("text", "") for c in nb.cells for o in c.get("outputs", [])]
    # %load_ext in the notebook is the only loading: nothing loads it before
    assert not [t for t in texts if "extension is already loaded" in t]
    # the last cell's print, which may come in more than one stream message
    where = "".join(o.get("text", "") for o in nb.cells[-1].outputs if o.output_type == "stream")
    package, prefix, mechanism = where.split()
    assert Path(prefix) == image.venv and Path(package).is_relative_to(image.venv)
    assert os.environ.get(MECHANISM_ENV) in (None, mechanism)  # Landlock, as on Binder
    cells = agent_cells(nb)
    assert cells, f"{notebook} has no %%agent cell"
    for cell in cells:
        text = transcript(cell)  # its parts, each updated in place
        assert "*Tokens: " in text, text  # the turn ended inside its cell
        assert "Working…" not in text
