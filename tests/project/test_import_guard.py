"""The import guard's decision, in this process: an import asked for by the package's
code skips the working folder, the person's imports keep Python's rules, and a module
that exists nowhere is simply not found (libraries probe with ``find_spec``).

Code "of the package" is code whose globals name a module of the package, as the guard
reads it from the stack; the end-to-end proof is tests/jupyter/ui/test_kernel_planted_modules.py.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_magics import import_guard


@pytest.fixture
def planted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A working folder first on ``sys.path`` holding ``zz_planted.py``, which records
    that it ran in ``ran``."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "zz_planted.py").write_text(f"open({str(tmp_path / 'ran')!r}, 'w').close()\n")
    monkeypatch.chdir(ws)
    monkeypatch.syspath_prepend("")
    yield tmp_path / "ran"
    sys.modules.pop("zz_planted", None)


def run_as(module: str, code: str) -> dict[str, object]:
    namespace: dict[str, object] = {"__name__": module}
    exec(code, namespace)
    return namespace


def test_the_package_does_not_import_a_planted_module(planted: Path) -> None:
    with pytest.raises(ModuleNotFoundError, match=r"found only in .*zz_planted\.py"):
        run_as("agent_magics.some_part", "import zz_planted")
    assert not planted.exists()
    assert "zz_planted" not in sys.modules


def test_the_persons_import_keeps_pythons_rules(planted: Path) -> None:
    run_as("__main__", "import zz_planted")
    assert planted.exists()


def test_the_persons_function_called_by_the_package_keeps_pythons_rules(planted: Path) -> None:
    """A function of the person's own module (not ``__main__``), as a registered tool."""
    person = run_as("person_tools", "def load():\n    import zz_planted\n")
    code = "from agent_magics.import_guard import call_person_code\ncall_person_code(load)"
    exec(code, {"__name__": "agent_magics.some_part", "load": person["load"]})
    assert planted.exists()


def test_a_module_found_nowhere_is_not_found_as_usual(planted: Path) -> None:
    found = run_as(
        "agent_magics.some_part",
        "import importlib.util\nspec = importlib.util.find_spec('zz_found_nowhere')",
    )
    assert found["spec"] is None
    with pytest.raises(ModuleNotFoundError, match="No module named 'zz_found_nowhere'"):
        run_as("agent_magics.some_part", "import zz_found_nowhere")


def test_the_interpreters_own_environment_is_trusted_inside_the_working_folder() -> None:
    writable = (str(Path(sys.prefix).resolve().parent),)
    assert not import_guard.untrusted(sys.prefix, writable)
    assert import_guard.untrusted(str(Path(sys.prefix).resolve().parent), writable)
    assert import_guard.untrusted("", ())
