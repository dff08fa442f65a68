"""Shared fixtures: where the conformance material lives."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = ROOT.parent / "shared" / "conformance"


@pytest.fixture(scope="session")
def conformance() -> Path:
    if not CONFORMANCE.is_dir():
        pytest.skip("the shared conformance folder is not beside the repository")
    if str(CONFORMANCE) not in sys.path:
        sys.path.insert(0, str(CONFORMANCE))
    return CONFORMANCE
