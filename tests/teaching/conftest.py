"""What the teaching tests share: a kernel environment of the test's own, whose site
policy file lies where an administrator puts it."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def site_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kernel environment of the test's own, built over this one, so that its site file
    (``{sys.prefix}/etc/agent_magics/policy.toml``) is where an administrator puts it."""
    ours = sysconfig.get_paths()["purelib"]
    if any(Path(ours).is_relative_to(tmp) for tmp in ("/tmp", os.environ.get("TMPDIR") or "/tmp")):
        # The kernel of that environment imports our packages from a folder it does not
        # own; under /tmp the import guard rightly refuses them.
        pytest.skip("the project's venv lies under /tmp, where the import guard trusts no package")
    env = tmp_path_factory.mktemp("site") / "env"
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
