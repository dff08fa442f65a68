"""Which files shadow a module Python imports (:mod:`agent_magics.tools.approval.shadowing`): the
pure rule as a table, the names it takes from this interpreter, the patch policy's rows,
and a real ``python -m ipykernel_launcher`` start showing what the rule protects against.
"""

from __future__ import annotations

import importlib.machinery
import json
import subprocess
import sys
from pathlib import Path

import pytest

from agent_magics.events import ModuleShadowed
from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode
from agent_magics.tools.approval.requirement import (
    Forbidden,
    NeedsApproval,
    Skip,
    patch_approval_requirement,
)
from agent_magics.tools.approval.shadowing import (
    module_names,
    planted_files,
    shadow_reason,
    shadowed_module,
    shadowing,
)
from agent_magics.transcript.model import NoticeBlock, Transcript

WS = Path("/project")  # a pure function of paths: the folder need not exist
NAMES = frozenset({"pathlib", "json", "types", "numpy", "ipykernel_launcher", "sitecustomize"})
EXT = importlib.machinery.EXTENSION_SUFFIXES[0]


@pytest.mark.parametrize(
    ("path", "module"),
    [
        pytest.param(WS / "pathlib.py", "pathlib", id="stdlib-module"),
        pytest.param(WS / "types.py", "types", id="types-is-stdlib"),
        pytest.param(WS / "json" / "__init__.py", "json", id="stdlib-package"),
        pytest.param(WS / "numpy" / "__init__.py", "numpy", id="loaded-package"),
        pytest.param(WS / "ipykernel_launcher.py", "ipykernel_launcher", id="the-launcher"),
        pytest.param(WS / "sitecustomize.py", "sitecustomize", id="sitecustomize"),
        pytest.param(WS / "pathlib.pyc", "pathlib", id="sourceless"),
        pytest.param(WS / f"json{EXT}", "json", id="extension-module"),
        pytest.param(WS / "json" / f"__init__{EXT}", "json", id="extension-package"),
        pytest.param(WS / "utils.py", None, id="utils-is-not-a-module-name"),
        pytest.param(WS / "test.py", None, id="test-is-not-in-the-stdlib-names"),
        pytest.param(WS / "notes.ipynb", None, id="notebook"),
        pytest.param(WS / "json.txt", None, id="other-suffix"),
        pytest.param(WS / "data" / "pathlib.py", None, id="in-a-subfolder"),
        pytest.param(WS / "json" / "decoder.py", None, id="namespace-portion-only"),
        pytest.param(WS / "json" / "sub" / "__init__.py", None, id="deeper-package"),
        pytest.param(Path("/elsewhere/pathlib.py"), None, id="another-folder"),
        pytest.param(WS / ".py", None, id="empty-stem"),
    ],
)
def test_shadowed_module(path: Path, module: str | None) -> None:
    assert shadowed_module(path, WS, NAMES) == module


def test_the_names_come_from_this_interpreter(tmp_path: Path) -> None:
    """The standard library's, the launcher's, and the loaded modules' top-level names;
    not a module the person keeps in the folder (their own ``mylocal.py``), and not
    ``test`` (CPython's test suite is left out of the standard library's names)."""
    (tmp_path / "mylocal_shadowing_probe.py").write_text("X = 1\n")
    sys.path.insert(0, str(tmp_path))
    try:
        __import__("mylocal_shadowing_probe")
        names = module_names(tmp_path.resolve())
        assert "mylocal_shadowing_probe" not in names
        assert "mylocal_shadowing_probe" in module_names(Path("/nowhere"))
    finally:
        sys.path.remove(str(tmp_path))
        del sys.modules["mylocal_shadowing_probe"]
    assert {"pathlib", "types", "asyncio", "ipykernel_launcher", "usercustomize"} <= names
    assert {"pytest", "agent_magics", "pydantic"} <= names  # loaded here, from elsewhere
    assert not {"test", "utils", "data"} & names


def test_links_and_folders_are_resolved(tmp_path: Path) -> None:
    """A link to a shadowing file writes it; the folder is compared by its real path."""
    (tmp_path / "real").mkdir()
    (tmp_path / "ws").symlink_to(tmp_path / "real")
    (tmp_path / "real" / "notes.txt").symlink_to(tmp_path / "real" / "pathlib.py")
    paths = [tmp_path / "ws" / "json.py", tmp_path / "ws" / "notes.txt", tmp_path / "ws" / "a.py"]
    found = shadowing(paths, [tmp_path / "ws"])
    assert found == [(paths[0], "json"), (paths[1], "pathlib")]


def test_the_reason_names_files_and_modules() -> None:
    one = shadow_reason([(WS / "pathlib.py", "pathlib")])
    assert one == (
        "'pathlib.py' would shadow Python's 'pathlib' module: the next kernel started in "
        "this folder, and any Python started there, would run it outside the sandbox"
    )
    two = shadow_reason([(WS / "pathlib.py", "pathlib"), (WS / "json" / "__init__.py", "json")])
    assert two.startswith("'pathlib.py' and 'json/__init__.py' would shadow Python's ")
    assert "'pathlib' and 'json' modules" in two and "would run them" in two
    many = shadow_reason([(WS / f"{m}.py", m) for m in ("os", "re", "io", "json", "ast")])
    assert many.startswith(
        "'os.py', 're.py', 'io.py' and 2 more files would shadow Python's 'os', 're', 'io' "
        "and 2 more modules: "
    )


WHY = "'pathlib.py' would shadow Python's 'pathlib' module"
P, S = ApprovalPolicy, SandboxMode


@pytest.mark.parametrize(
    ("policy", "sandbox", "shadows", "expected"),
    [
        pytest.param(P.NEVER, S.WORKSPACE_WRITE, None, Skip(), id="never-ordinary"),
        pytest.param(
            P.NEVER,
            S.WORKSPACE_WRITE,
            WHY,
            Forbidden(f"patch rejected: {WHY}; give the file another name"),
            id="never-refuses-with-the-sentence",
        ),
        pytest.param(P.ON_REQUEST, S.WORKSPACE_WRITE, WHY, NeedsApproval(WHY), id="on-request"),
        pytest.param(P.ON_FAILURE, S.WORKSPACE_WRITE, WHY, NeedsApproval(WHY), id="on-failure"),
        pytest.param(P.UNTRUSTED, S.WORKSPACE_WRITE, WHY, NeedsApproval(WHY), id="untrusted"),
        pytest.param(P.ON_REQUEST, S.READ_ONLY, WHY, NeedsApproval(WHY), id="read-only"),
        pytest.param(
            P.NEVER, S.DANGER_FULL_ACCESS, WHY, Skip(bypass_sandbox=True), id="full-access"
        ),
    ],
)
def test_patch_policy_with_a_shadowing_file(
    policy: ApprovalPolicy, sandbox: SandboxMode, shadows: str | None, expected: object
) -> None:
    assert patch_approval_requirement(policy, sandbox, True, shadows) == expected


def test_planted_files_sees_links_and_packages(tmp_path: Path) -> None:
    (tmp_path / "json.py").write_text("")
    (tmp_path / "csv.py").symlink_to(tmp_path / "later.py")  # a link, by its own name
    (tmp_path / "email").mkdir()
    (tmp_path / "email" / "__init__.py").write_text("")
    (tmp_path / "html").mkdir()  # a folder of data: no __init__, shadows nothing
    (tmp_path / "utils.py").write_text("")
    found = planted_files(tmp_path)
    assert {p.relative_to(tmp_path).as_posix(): m for p, (m, _) in found.items()} == {
        "json.py": "json",
        "csv.py": "csv",
        "email/__init__.py": "email",
    }


def test_the_transcript_shows_one_warning_line() -> None:
    t = Transcript()
    block = t.apply(ModuleShadowed("json.py", "json", True))
    assert block == NoticeBlock(
        "error",
        "'json.py' in the working folder now shadows Python's 'json' module: the next "
        "kernel started in this folder, and any Python started there, would run it, outside "
        "the sandbox; %agent undo removes it.",
    )
    assert isinstance(other := t.apply(ModuleShadowed("csv.py", "csv", False)), NoticeBlock)
    assert other.text.endswith("outside the sandbox; remove it before starting one.")


PLANTED = """\
import json, os
with open(os.environ["MARKS"], "a") as f:
    f.write(json.dumps([__name__, {where}]) + "\\n")
{then}
"""


def test_a_kernel_start_runs_what_the_rule_refuses(tmp_path: Path) -> None:
    """What the rule protects against, on this machine: Jupyter's ``python -m
    ipykernel_launcher`` in a folder runs an ``ipykernel_launcher.py`` found there, and
    the real launcher imports a ``pathlib.py`` found there before it takes the folder off
    ``sys.path``. Both are files :func:`shadowed_module` refuses."""
    ws, marks = tmp_path / "ws", tmp_path / "marks.jsonl"
    ws.mkdir()
    env = {"MARKS": str(marks), "PATH": "/usr/bin:/bin"}
    launch = [sys.executable, "-m", "ipykernel_launcher", "--version"]
    # the planted launcher: it runs instead of the real one
    (ws / "ipykernel_launcher.py").write_text(PLANTED.format(where="'launcher'", then=""))
    subprocess.run(launch, cwd=ws, env=env, check=True, capture_output=True, timeout=60)
    # the planted pathlib: it runs inside the real launcher, which then goes on
    (ws / "ipykernel_launcher.py").unlink()
    then = "del __import__('sys').modules['pathlib']; raise SystemExit('planted pathlib ran')"
    (ws / "pathlib.py").write_text(PLANTED.format(where="'pathlib'", then=then))
    done = subprocess.run(launch, cwd=ws, env=env, capture_output=True, timeout=60, text=True)
    assert "planted pathlib ran" in done.stderr
    seen = [json.loads(line) for line in marks.read_text().splitlines()]
    assert seen == [["__main__", "launcher"], ["pathlib", "pathlib"]]
    names = module_names(ws.resolve())
    assert shadowed_module(ws / "ipykernel_launcher.py", ws, names) == "ipykernel_launcher"
    assert shadowed_module(ws / "pathlib.py", ws, names) == "pathlib"
