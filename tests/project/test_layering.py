"""The package's shape: its public names, no import circles, imports that go one way.

Imports are read from the source (``ast``), every ``import`` in a module counted, also
those inside functions (a lazy import that closes a circle is still a circle at run
time) and those under ``if TYPE_CHECKING:`` (a module that names another's types depends
on it as much as one that calls it).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

import agent_magics
from tests.helpers.paths import package_modules

PACKAGE = Path(agent_magics.__file__).resolve().parent
JUPYTER = ("IPython", "ipywidgets", "ipykernel", "agent_magics.jupyter")
FRONT_ENDS = ("agent_magics.jupyter",)
BELOW_CONFIG = ("agent_magics.models", "agent_magics.tools")

PUBLIC_NAMES = [
    "AgentMagicsError",
    "AgentTurnFailed",
    "ApprovalPolicy",
    "ApprovalRequest",
    "Approver",
    "ArgumentError",
    "ConfigError",
    "ConnectionFailed",
    "Fatal",
    "ModelError",
    "RespondToModel",
    "ReviewDecision",
    "SandboxMode",
    "Session",
    "SessionConfig",
    "ToolHandler",
    "ToolInvocation",
    "ToolOutput",
    "TurnAborted",
    "TurnResult",
    "UserError",
    "__version__",
    "ask",
    "ask_async",
    "load_config",
    "load_ipython_extension",
    "registered_tools",
    "tool",
]


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in package_modules()}


def _imported(name: str, path: Path) -> Iterator[str]:
    """Every module ``name`` imports, as written (``from a import b`` gives ``a`` and
    ``a.b``), those under ``if TYPE_CHECKING:`` too."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]

    def visit(node: ast.AST) -> Iterator[str]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                yield from (alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*anchor, *([child.module] if child.module else [])])
                yield base
                yield from (f"{base}.{alias.name}" for alias in child.names)
            yield from visit(child)

    yield from visit(ast.parse(path.read_text("utf-8")))


IMPORTS = {name: sorted(set(_imported(name, path))) for name, path in MODULES.items()}


def _inside(name: str, prefixes: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def test_public_names_are_pinned() -> None:
    assert sorted(agent_magics.__all__) == PUBLIC_NAMES
    for name in PUBLIC_NAMES:
        assert hasattr(agent_magics, name), name


def test_no_import_circle() -> None:
    graph = {
        name: {m for m in imports if m in MODULES and m != name}
        for name, imports in IMPORTS.items()
    }
    circles: list[list[str]] = []
    done: set[str] = set()

    def walk(node: str, trail: list[str]) -> None:
        if node in trail:
            circles.append([*trail[trail.index(node) :], node])
            return
        if node in done:
            return
        for nxt in sorted(graph[node]):
            walk(nxt, [*trail, node])
        done.add(node)

    for name in sorted(graph):
        walk(name, [])
    assert circles == []


def _package(name: str) -> str:
    """The folder a module is in (a package's ``__init__`` is its package); a module at
    the package's root stands for itself, as a package of one would."""
    if MODULES[name].name == "__init__.py" or name.count(".") == 1:
        return name
    return name.rpartition(".")[0]


def test_no_import_circle_between_folders() -> None:
    """Folders are layers: if a module in one imports from another, nothing in that
    other one imports back (the root ``__init__``, which gathers the public names, and
    ``__main__`` aside)."""
    edges: dict[str, set[str]] = {}
    for name, imports in IMPORTS.items():
        if name in ("agent_magics", "agent_magics.__main__"):
            continue
        for target in imports:
            if target in MODULES and target != "agent_magics":
                here, there = _package(name), _package(target)
                if here != there:
                    edges.setdefault(here, set()).add(there)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo += edges.get(node, ())
        return False

    both_ways = sorted(f"{a} <-> {b}" for a in edges for b in edges[a] if a < b and reaches(b, a))
    assert both_ways == []


PROCESSES = ("agent_magics.tools.unified_exec", "agent_magics.tools.sandbox")
ABOVE_PROCESSES = (
    "agent_magics.tools.approval",
    "agent_magics.tools.runtimes",
    "agent_magics.tools.handlers",
)


@pytest.mark.parametrize("name", sorted(n for n in MODULES if _inside(n, PROCESSES)))
def test_the_processes_know_nothing_of_approvals(name: str) -> None:
    """The process manager and the sandbox run what they are given; who asked whom is
    the orchestrator's and the runtimes' business (one way down, as in Codex)."""
    assert [m for m in IMPORTS[name] if _inside(m, ABOVE_PROCESSES)] == []


@pytest.mark.parametrize(
    "name",
    # the package's __init__ hands %load_ext to the Jupyter front end, importing it then
    sorted(n for n in MODULES if not _inside(n, FRONT_ENDS) and n != "agent_magics"),
)
def test_only_the_front_ends_import_jupyter(name: str) -> None:
    assert [m for m in IMPORTS[name] if _inside(m, JUPYTER)] == []


@pytest.mark.parametrize("name", sorted(n for n in MODULES if _inside(n, BELOW_CONFIG)))
def test_models_and_tools_do_not_import_config(name: str) -> None:
    assert [m for m in IMPORTS[name] if _inside(m, ("agent_magics.config",))] == []


LOAD_EXT = """
import sys
from IPython.core.interactiveshell import InteractiveShell
InteractiveShell.instance().run_line_magic("load_ext", "agent_magics")
print(" ".join(sorted(sys.modules)))
"""
NOT_AT_LOAD = [
    "nbformat",  # with jsonschema's format checkers (JupyterLab brings them) about 1 s
    "agent_magics.jupyter.kernel.run_python",
    "agent_magics.jupyter.kernel.inspect_variable",
    "agent_magics.jupyter.kernel.live_notebook",
    "agent_magics.tools.handlers.edit_notebook",
    "agent_magics.tools.functions.handler",
]
HEAVY = ("pydantic", "httpx", "ipywidgets", "PIL", "certifi")
"""Packages a kernel that only loaded the extension, or a ``--help``, never needs."""
FIRST_USE = ("agent_magics.agent.session", "agent_magics.config", "agent_magics.tools.handlers")


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    import subprocess
    import sys

    script = f"import sys\n{code}\nprint('\\n' + ' '.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(out.stdout.splitlines()[-1].split())  # after what ``code`` printed


def _heavy(loaded: set[str]) -> list[str]:
    return sorted(m for m in loaded if _inside(m, HEAVY) or _inside(m, FIRST_USE))


def test_importing_the_package_imports_none_of_its_parts() -> None:
    """``import agent_magics`` (every kernel that loads the extension does it) defers
    each public name to its first use, which still works. Only the import guard comes
    first: the package's own first imports must already be guarded."""
    loaded = _modules_after("import agent_magics")
    assert sorted(m for m in loaded if m.startswith("agent_magics.")) == [
        "agent_magics.import_guard"
    ]
    assert _heavy(loaded) == []
    names = _modules_after("import agent_magics\nagent_magics.Session, agent_magics.tool")
    assert {"agent_magics.agent.session", "agent_magics.tools.functions.registered"} <= names


def test_loading_the_extension_imports_nothing_heavy() -> None:
    """``%load_ext`` in a real IPython shell: the settings, session, widgets, HTTP
    client and tools wait for the first ``%%agent``."""
    loaded = _modules_after(LOAD_EXT.replace("import sys", ""))
    assert "agent_magics.jupyter.magics" in loaded
    assert _heavy(loaded) == []


@pytest.mark.parametrize("argv", [["--help"], ["exec", "--help"]])
def test_the_cli_help_imports_nothing_heavy(argv: list[str]) -> None:
    code = (
        "from agent_magics.terminal.cli import main\n"
        f"try:\n    main({argv!r})\nexcept SystemExit:\n    pass\n"
    )
    assert _heavy(_modules_after(code)) == []


def test_the_magic_offers_the_providers_the_settings_know() -> None:
    """``PROVIDERS`` is written out so that ``%load_ext`` need not build the settings
    model; it must stay the settings' list."""
    from typing import get_args

    from agent_magics.config import SessionConfig
    from agent_magics.jupyter.magics import PROVIDERS

    settings = list(get_args(SessionConfig.model_fields["provider"].annotation))
    assert settings == PROVIDERS


def test_loading_the_extension_leaves_the_tools_for_the_first_turn() -> None:
    """``%load_ext`` runs in every kernel that loads the extension: the kernel's tools,
    nbformat and the function-tool handler are imported when a turn offers them."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", LOAD_EXT], capture_output=True, text=True, check=True
    )
    loaded = set(out.stdout.split())
    assert "agent_magics.jupyter.magics" in loaded
    assert [m for m in NOT_AT_LOAD if m in loaded] == []


HANDLERS = "agent_magics.tools.handlers"
HANDLER_MODULES = sorted(
    n for n in MODULES if _inside(n, (HANDLERS,)) and "def handle(" in MODULES[n].read_text()
)
"""The modules of ``tools/handlers`` that hold a handler (``toolset``, which gathers
them, and helpers such as ``ripgrep`` hold none)."""


@pytest.mark.parametrize("name", HANDLER_MODULES)
def test_no_handler_imports_another_handler(name: str) -> None:
    """What two tools share lives beside the runtimes or in ``tools``, not in a handler."""
    assert [m for m in IMPORTS[name] if m in HANDLER_MODULES and m != name] == []
