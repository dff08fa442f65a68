"""Nothing the package imports comes from the working folder (real kernels, both
ipykernel lines, a scripted model on 127.0.0.1).

A module or a package is planted in the kernel's working folder for every top-level name
the package's source imports (read from the source with ``ast``, not listed by hand), in
the three ways an attacker has: the model writes them with a sandboxed command (under
bubblewrap and under Landlock) or with a patch, or a cloned repository ships them. Each
planted file records that it ran. Then turns exercise every tool, the end-of-turn
rendering and the line commands: none of the planted files may run. The person's own
``import`` of a module of their folder keeps working.
"""

from __future__ import annotations

import ast
import json
import shlex
from pathlib import Path
from typing import Any

import pytest

import agent_magics
from agent_magics.testing import ScriptedResponsesServer, custom_tool_call, function_call, message
from agent_magics.tools.sandbox.platform import MECHANISM_ENV
from tests.helpers.kernels import KERNEL_PYTHONS, TURN_DONE, Kernel, agent_cell, kernel_manager
from tests.helpers.sandbox import LINUX_MECHANISMS, require_mechanism

pytestmark = pytest.mark.slow

PACKAGE = Path(agent_magics.__file__).resolve().parent


def imported_names() -> list[str]:
    """Every top-level module name the package's source imports (``import``, ``from``,
    and ``import_module("...")`` of a literal), its own name included."""
    names: set[str] = set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
            elif (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", getattr(node.func, "attr", None)) == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                names.add(node.args[0].value.split(".")[0])
    return sorted(names)


NAMES = imported_names()


def planted_source(marks: Path, name: str) -> str:
    """A module that writes, when it runs, which modules' frames imported it."""
    target = str(marks / name)
    return (
        "import sys as _sys\n"
        "_f, _seen = _sys._getframe(), []\n"
        "while _f is not None:\n"
        "    _seen.append(str(_f.f_globals.get('__name__')))\n"
        "    _f = _f.f_back\n"
        f"open({target!r}, 'w').write(' <- '.join(_seen))\n"
    )


def ran(marks: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(marks.iterdir())}


def patch_adding_module(marks: Path, name: str) -> str:
    lines = ["*** Begin Patch", f"*** Add File: {name}.py"]
    lines += [f"+{line}" for line in planted_source(marks, name).splitlines()]
    lines.append("*** End Patch")
    return "\n".join(lines) + "\n"


def command_adding_packages(marks: Path) -> str:
    """One shell script: a package folder per name in ``notebooks/``, its ``__init__.py``
    from a heredoc."""
    parts = ["cd notebooks"]
    for name in NAMES:
        source = planted_source(marks, name)
        parts.append(f"mkdir -p {name} && cat > {name}/__init__.py <<'EOF'\n{source}EOF")
    return "\n".join(parts)


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    folder = tmp_path / "ran"
    folder.mkdir()
    return folder


def prepare(kernel: Kernel, folder: Path) -> None:
    """A notebook, a text file and an image to work on in ``folder``, and a variable."""
    import nbformat
    from PIL import Image

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("total = 1 + 1", id="first")]
    nbformat.write(nb, folder / "analysis.ipynb")
    (folder / "notes.txt").write_text("alpha\nbeta\n")
    Image.new("RGB", (4, 4), "red").save(folder / "dot.png")
    kernel.run("sales = {'north': 12, 'south': 7}")


EDIT_NOTES = (
    "*** Begin Patch\n*** Update File: notes.txt\n@@\n alpha\n-beta\n+gamma\n*** End Patch\n"
)


def every_tool() -> list[dict[str, Any]]:
    insert = {"path": "analysis.ipynb", "cell_id": "first", "edit_mode": "insert",
              "cell_type": "code", "new_source": "print(total)"}  # fmt: skip
    plan = {"plan": [{"step": "look", "status": "in_progress"}]}
    return [
        function_call("exec_command", {"cmd": "echo hello"}, "t1"),
        function_call("read_file", {"file_path": "notes.txt"}, "t2"),
        function_call("list_dir", {"dir_path": "."}, "t3"),
        function_call("grep_files", {"pattern": "beta"}, "t4"),
        function_call("update_plan", plan, "t5"),
        function_call("view_image", {"path": "dot.png"}, "t6"),
        function_call("list_variables", {}, "t7"),
        function_call("inspect_variable", {"name": "sales"}, "t8"),
        function_call("read_notebook", {"path": "analysis.ipynb"}, "t9"),
        function_call("edit_notebook", insert, "t10"),
        function_call("run_python", {"code": "print(total if 'total' in dir() else 0)"}, "t11"),
        custom_tool_call("apply_patch", EDIT_NOTES, "t12"),
    ]


LINE_COMMANDS = ("status", "tools", "history", "context", "sessions")
WRITE = (
    "-a never -s workspace-write -c shell_type=unified_exec "
    "-c experimental_supported_tools=read_file,list_dir,grep_files"
)


def exercise(kernel: Kernel, server: ScriptedResponsesServer, requests: int, marks: Path) -> None:
    """Wait for the turn to end, then run the line commands and the exports; whatever
    happens, no planted file ran (a planted module that ran can also stall the turn)."""
    try:
        _exercise(kernel, server, requests)
    finally:
        assert ran(marks) == {}


def _exercise(kernel: Kernel, server: ScriptedResponsesServer, requests: int) -> None:
    kernel.wait_for(lambda: len(server.requests) == requests, timeout=60)
    if requests > 2:  # every tool ran and answered
        answers = server.outputs(2)
        calls = [c["call_id"] for c in every_tool()]
        assert set(calls) <= set(answers)
        unsupported = [c for c in calls if "unsupported call" in json.dumps(answers[c])]
        assert not unsupported, [answers[c] for c in unsupported]
    kernel.wait_for(lambda: kernel.shows(TURN_DONE), timeout=60)
    for word in LINE_COMMANDS:
        kernel.run(f"%agent {word}")
    for suffix in ("ipynb", "md", "html"):
        kernel.run(f"%agent export {shlex.quote(str(kernel.ws / f'out.{suffix}'))} --force")


def full_turn(first: list[dict[str, Any]]) -> list[Any]:
    """A turn that plants (``first``), then calls every tool, then answers in markdown."""
    return [first, every_tool(), [message("# Done\n\nThe **planted** files stayed put.")]]


def test_modules_a_cloned_repository_ships_never_run(kernel: Kernel, marks: Path) -> None:
    for name in NAMES:
        (kernel.ws / f"{name}.py").write_text(planted_source(marks, name))
    (kernel.ws / "mylocal.py").write_text("ANSWER = 42\n")
    with ScriptedResponsesServer([[message("nothing to do")]]) as server:
        kernel.run(agent_cell(server.base_url, "-a untrusted -s read-only", "hello"))
        exercise(kernel, server, 1, marks)
    assert ran(marks) == {}
    # the person's own imports keep Python's rules: their folder comes first
    assert kernel.value("__import__('mylocal').ANSWER") == 42


def test_modules_the_model_adds_with_a_patch_never_run(kernel: Kernel, marks: Path) -> None:
    """One patch per name: a name that shadows a module the kernel imports (the
    standard library's, one it has loaded) is refused outright; the others land, and
    the package's own imports never take them."""
    prepare(kernel, kernel.ws)
    patches = [custom_tool_call("apply_patch", patch_adding_module(marks, n), n) for n in NAMES]
    with ScriptedResponsesServer(full_turn(patches)) as server:
        kernel.run(agent_cell(server.base_url, WRITE))
        exercise(kernel, server, 3, marks)
        answers = {name: json.dumps(server.outputs(1)[name]) for name in NAMES}
    landed = {name for name in NAMES if (kernel.ws / f"{name}.py").is_file()}
    for name in set(NAMES) - landed:
        assert f"would shadow Python's '{name}' module" in answers[name]
    assert all("Success" in answers[name] for name in landed)
    assert {"json", "pathlib", "asyncio"}.isdisjoint(landed)
    assert "nbformat" in landed  # not loaded yet: it lands, and must not run
    assert ran(marks) == {}


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
@pytest.mark.parametrize("python", KERNEL_PYTHONS)
def test_packages_a_sandboxed_command_writes_never_run(
    python: str,
    mechanism: str,
    tmp_path: Path,
    marks: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The notebook lies in ``notebooks/`` of the project the agent works on (``-C``), so
    the kernel's first ``sys.path`` entry is a folder a sandboxed command may write under
    both mechanisms (Landlock cannot let a command add entries to the top of the
    working folder itself)."""
    require_mechanism(mechanism)
    monkeypatch.setenv(MECHANISM_ENV, mechanism)  # the kernel inherits it
    project = tmp_path / "project"
    (project / "notebooks").mkdir(parents=True)
    kernel = Kernel(kernel_manager(python, tmp_path / "specs"), project / "notebooks")
    try:
        kernel.run("%load_ext agent_magics")
        prepare(kernel, project)
        plant = {"cmd": command_adding_packages(marks), "yield_time_ms": 10000}
        script = full_turn([function_call("exec_command", plant, "x1")])
        options = f"{WRITE} -C {shlex.quote(str(project))}"
        with ScriptedResponsesServer(script) as server:
            kernel.run(agent_cell(server.base_url, options))
            exercise(kernel, server, 3, marks)
            assert "exited with code 0" in server.outputs(1)["x1"]
        assert (project / "notebooks" / "httpx" / "__init__.py").is_file()  # it did write
    finally:
        kernel.close()


def test_a_repositorys_package_metadata_picks_no_module_to_run(kernel: Kernel) -> None:
    """pydantic runs the plugins package metadata names; a ``*.dist-info`` in the working
    folder must not pick one (here ``this``, an installed module that prints when
    imported; another could break every model) when the package builds its models."""
    info = kernel.ws / "evil-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evil\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[pydantic]\nzen = this\n")
    assert "pydantic" not in kernel.value("sorted(__import__('sys').modules)")
    with ScriptedResponsesServer([[message("nothing to do")]]) as server:
        messages = kernel.run(agent_cell(server.base_url, "-a untrusted -s read-only", "hi"))
        kernel.wait_for(lambda: kernel.shows(TURN_DONE), timeout=60)
    printed = kernel.outputs_text([m for m in kernel.log if m["msg_type"] == "stream"])
    assert "Beautiful is better than ugly" not in printed + kernel.outputs_text(messages)
    # the person's own discovery still reads their folder, by Python's rules
    kernel.run("from importlib.metadata import entry_points")
    assert kernel.value("[e.value for e in entry_points(group='pydantic')]") == ["this"]
