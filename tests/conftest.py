"""Shared fixtures: where the conformance material lives, and a session's services whose
processes are closed after the test."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agent_magics.tools.context import SessionServices
from agent_magics.tools.exec import manager_for

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = ROOT / "tests" / "conformance"
"""Recorded Codex outputs and the harness that compares against them (see its README)."""


@pytest.fixture(scope="session")
def conformance() -> Path:
    if str(CONFORMANCE) not in sys.path:
        sys.path.insert(0, str(CONFORMANCE))
    return CONFORMANCE


@pytest.fixture
async def services() -> AsyncIterator[SessionServices]:
    """Session services whose process manager is closed after the test."""
    services = SessionServices()
    yield services
    await manager_for(services).close()
