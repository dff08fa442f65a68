"""The places the kernel takes code from stay read-only when they lie in the workspace:
the environment the agent runs from (a project's ``.venv``), the user site-packages,
the IPython folder (startup scripts), Jupyter's config folder and kernel specs. What is
written there runs unconfined, in this process or the next kernel.

End to end: ``agent-magics exec`` (run from a real virtual environment inside the
workspace, or with the workspace as its home) and a scripted model on 127.0.0.1 whose
command and patch try to plant files there, under bubblewrap and under Landlock. The
command also tries to rename the folders on the way away and plant a fresh copy.
Codex protects ``.git`` and ``.codex`` only; it runs no code of a kernel's environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from agent_magics.testing import custom_tool_call, function_call
from tests.helpers.sandbox import LINUX_MECHANISMS, Arena, exec_calls, require_mechanism

pytestmark = pytest.mark.slow  # real sandboxes and CLI runs

PYTHON_DIR = f"python{sys.version_info.major}.{sys.version_info.minor}"
CASES = ["venv", "home", "named"]
"""``venv``: exec runs from ``ws/.venv``; ``home``: the workspace is ``$HOME``;
``named``: ``IPYTHONDIR`` and ``JUPYTER_CONFIG_DIR`` name folders in the workspace."""


def make_venv(folder: Path) -> Path:
    """A real virtual environment (no pip) that sees this project's packages; its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    python = folder / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    link = f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n"
    (Path(purelib) / "agent_magics_test_link.pth").write_text(link)
    return python


def linked_packages_in_tmp() -> bool:
    """Whether this project's packages lie where the agent refuses to import from (/tmp,
    $TMPDIR): a workspace venv linked to them then fails at its first import."""
    purelib = os.path.realpath(sysconfig.get_paths()["purelib"])
    temporary = [os.path.realpath(t) for t in ("/tmp", os.environ.get("TMPDIR")) if t]
    return any(purelib == t or purelib.startswith(t + os.sep) for t in temporary)


def setup(arena: Arena, case: str) -> tuple[str, dict[str, str], list[str], list[str]]:
    """(python, environment, files to plant, folders to rename away) for ``case``."""
    ws = arena.ws
    if case == "venv":
        if linked_packages_in_tmp():
            pytest.skip(
                f"this project's packages lie in {sysconfig.get_paths()['purelib']}, under a "
                "temporary folder the agent may write, so a venv linked to them cannot import "
                "them (the case runs from a clone outside /tmp)"
            )
        python = make_venv(ws / ".venv")
        site = f".venv/lib/{PYTHON_DIR}/site-packages"
        return str(python), {}, [f"{site}/planted.pth", ".venv/bin/planted"], [".venv"]
    if case == "home":
        for folder in (".local/lib", ".local/share", ".ipython", ".jupyter"):
            (ws / folder).mkdir(parents=True)
        targets = [
            f".local/lib/{PYTHON_DIR}/site-packages/usercustomize.py",
            ".ipython/profile_default/startup/00-planted.py",
            ".jupyter/jupyter_server_config.py",
            ".local/share/jupyter/kernels/python3/kernel.json",
        ]
        return sys.executable, {"HOME": str(ws)}, targets, [".local", ".local/lib"]
    for folder in ("profiles", "jconf"):
        (ws / folder).mkdir()
    env = {"IPYTHONDIR": str(ws / "profiles"), "JUPYTER_CONFIG_DIR": str(ws / "jconf")}
    targets = ["profiles/profile_default/startup/00-planted.py", "jconf/jupyter_config.py"]
    return sys.executable, env, targets, ["profiles"]


def plant_command(targets: list[str], renamed: list[str]) -> str:
    steps = [f"mv {f} {f}-away" for f in renamed]
    steps += [f"mkdir -p $(dirname {t}) && echo planted > {t}" for t in targets]
    return "; ".join([*steps, "echo ok > src/ok.txt", "echo end"])


def plant_patch(targets: list[str]) -> str:
    adds = "".join(f"*** Add File: {t}\n+planted\n" for t in targets)
    return f"*** Begin Patch\n{adds}*** End Patch\n"


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_the_kernels_code_stays_read_only(arena: Arena, mechanism: str, case: str) -> None:
    require_mechanism(mechanism)
    python, extra_env, targets, renamed = setup(arena, case)
    (arena.ws / "src").mkdir()
    calls = [
        function_call("exec_command", {"cmd": plant_command(targets, renamed)}, "c1"),
        custom_tool_call("apply_patch", plant_patch(targets), "p1"),
    ]
    run = exec_calls(arena, mechanism, calls, env=extra_env, python=python)
    outputs, done = run.outputs(), run.done
    assert "end" in str(outputs["c1"])
    assert (arena.ws / "src" / "ok.txt").read_text() == "ok\n"  # the workspace is writable
    planted = [t for t in targets if (arena.ws / t).exists()]
    moved = [f for f in renamed if (arena.ws / f"{f}-away").exists()]
    assert (planted, moved) == ([], []), (outputs, done.stderr)
