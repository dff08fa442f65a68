"""A kernel environment of a test's own and its site policy file (the ``site_python``
fixtures of ``tests/teaching`` and ``tests/acp``)."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest


def site_file(python: Path, text: str) -> Path:
    """Write the site policy file of the environment of ``python``."""
    path = python.parents[1] / "etc" / "agent_magics" / "policy.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def site_python_in(folder: Path) -> Path:
    """The python of an environment in ``folder`` built over this one, so that its site
    file (``{sys.prefix}/etc/agent_magics/policy.toml``) is where an administrator puts
    it."""
    ours = sysconfig.get_paths()["purelib"]
    if any(Path(ours).is_relative_to(tmp) for tmp in ("/tmp", os.environ.get("TMPDIR") or "/tmp")):
        # The kernel of that environment imports our packages from a folder it does not
        # own; under /tmp the import guard rightly refuses them.
        pytest.skip("the project's venv lies under /tmp, where the import guard trusts no package")
    env = folder / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env)], check=True)
    python = env / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "parent_env.pth").write_text(f"import site; site.addsitedir({ours!r})\n")
    return python
