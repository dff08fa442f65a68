"""What the teaching tests share: a kernel environment of the test's own, whose site
policy file lies where an administrator puts it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.teaching import site_python_in


@pytest.fixture(scope="module")
def site_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kernel environment of the test's own (:func:`tests.helpers.teaching.site_python_in`)."""
    return site_python_in(tmp_path_factory.mktemp("site"))
