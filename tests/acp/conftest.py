"""What the ACP tests share: an environment of the test's own whose site policy file lies
where an administrator puts it (the agent runs with its python)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.teaching import site_python_in


@pytest.fixture(scope="module")
def site_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return site_python_in(tmp_path_factory.mktemp("site"))
