"""The site policy file of a kernel environment of a test's own (see the ``site_python``
fixture in ``tests/teaching/conftest.py``)."""

from __future__ import annotations

from pathlib import Path


def site_file(python: Path, text: str) -> Path:
    """Write the site policy file of the environment of ``python``."""
    path = python.parents[1] / "etc" / "agent_magics" / "policy.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
