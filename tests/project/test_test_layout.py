"""The suite's own shape: the test folders mirror the package's, and a test module imports
no other test module. What two test files share lives in ``tests/helpers/`` (or a
``conftest.py``), so running, moving or deleting one test file never changes what another
one collects or does.

Imports are read from the source (``ast``), those inside functions too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.helpers.paths import PACKAGE, ROOT

TESTS = ROOT / "tests"
TEST_MODULES = sorted(p for p in TESTS.rglob("test_*.py") if "helpers" not in p.parts)


def _test_module(name: str) -> bool:
    """Whether the dotted ``name`` is one of the suite's test modules: ``tests.x.test_y``,
    or relative (``.test_y``, ``..x.test_y``)."""
    parts = name.split(".")
    inside = parts[0] in ("tests", "")  # "" : a relative name's leading dot
    return inside and any(p.startswith("test_") for p in parts[1:])


def imported_test_modules(source: str) -> list[str]:
    """The test modules ``source`` imports, as written (relative imports too)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names if _test_module(a.name)]
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            if _test_module(base):
                found.append(base)
                continue
            joined = (base if base.endswith(".") else base + ".") if node.level else base + "."
            found += [joined + a.name for a in node.names if _test_module(joined + a.name)]
    return found


def test_the_check_sees_each_way_of_importing_a_test_module() -> None:
    source = (
        "from tests.jupyter.test_kernel_stop import DEADLINE\n"
        "import tests.store.test_turn_changes\n"
        "from tests.store import test_turn_changes\n"
        "def f():\n    from .test_visible import read_back\n"
        "from tests.helpers.kernels import Kernel\n"
        "import testing\n"
    )
    assert imported_test_modules(source) == [
        "tests.jupyter.test_kernel_stop",
        "tests.store.test_turn_changes",
        "tests.store.test_turn_changes",
        ".test_visible",
    ]


@pytest.mark.parametrize("path", TEST_MODULES, ids=lambda p: str(p.relative_to(TESTS)))
def test_a_test_module_imports_no_test_module(path: Path) -> None:
    assert imported_test_modules(path.read_text("utf-8")) == []


NOT_PACKAGES = {"project"}
"""Test folders of the whole project (its README, layers, dependencies, benchmarks)."""
TEST_FOLDERS = sorted({p.parent.relative_to(TESTS) for p in TEST_MODULES} - {Path(".")})


@pytest.mark.parametrize("folder", TEST_FOLDERS, ids=str)
def test_a_test_folder_mirrors_a_package_folder(folder: Path) -> None:
    """``tests/tools/handlers/`` tests ``agent_magics/tools/handlers/``: whoever changes a
    subpackage finds its tests in the folder of the same name."""
    if folder.parts[0] in NOT_PACKAGES:
        return
    assert (PACKAGE / folder / "__init__.py").is_file(), f"no agent_magics/{folder}/"
    assert (TESTS / folder / "__init__.py").is_file(), f"tests/{folder}/ is not a package"
