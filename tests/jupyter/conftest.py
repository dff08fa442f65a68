"""What the Jupyter tests share: the process's IPython shell, its namespace as it was
once the test is over."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from IPython.core.interactiveshell import InteractiveShell


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    """The process's shell (no extension loaded); the names the test left in its
    namespace are gone after, the ones it changed restored."""
    ip = InteractiveShell.instance()
    before = dict(ip.user_ns)
    try:
        yield ip
    finally:
        ip.user_ns.clear()
        ip.user_ns.update(before)
