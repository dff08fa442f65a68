"""A file that would shadow a module Python imports is not planted in the working folder
unasked, end to end through ``agent-magics exec`` (a scripted model on 127.0.0.1).

Jupyter's next kernel in that folder runs such a file outside the sandbox (see
:mod:`agent_magics.tools.approval.shadowing`). Before, ``*** Add File: pathlib.py`` went through
with no question under ``on-request`` and ``never`` alike, and a sandboxed command's
``json.py`` passed without a word. Now the patch is refused under ``never`` with one
sentence naming the module, asked about under ``on-request`` with that sentence shown,
and what commands leave is named at the turn's end.
"""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from agent_magics.testing import ScriptedResponsesServer, custom_tool_call, function_call, message
from tests.helpers.exec_cli import WAIT_S, answer_each_question, cli_env, exec_argv
from tests.helpers.sandbox import LINUX_MECHANISMS, Arena, require_mechanism

pytestmark = pytest.mark.slow

SHADOWS = (
    "'pathlib.py' would shadow Python's 'pathlib' module: the next kernel started in this "
    "folder, and any Python started there, would run it outside the sandbox"
)
PLANTED = "print('planted')\n"


def add_files(*names: str) -> str:
    added = [f"*** Add File: {name}\n+{PLANTED}" for name in names]
    return "*** Begin Patch\n" + "".join(added) + "*** End Patch\n"


def run(
    arena: Arena, mechanism: str, policy: str, script: list[Any], letters: list[str] | None = None
) -> tuple[str, ScriptedResponsesServer]:
    """One ``exec`` turn; with ``letters``, a person answers at a terminal."""
    script = [*script, [message("done")]]
    env = cli_env(arena, mechanism)
    with ScriptedResponsesServer(script) as server:
        argv = exec_argv(server, arena.ws, policy)
        if letters is not None:
            code, stderr = answer_each_question(argv, env, arena.ws, letters)
        else:
            done = subprocess.run(
                argv, env=env, cwd=arena.ws, capture_output=True, text=True, timeout=WAIT_S,
                stdin=subprocess.DEVNULL,
            )  # fmt: skip
            code, stderr = done.returncode, done.stderr
    assert code == 0, stderr
    return stderr, server


def test_never_refuses_the_patch_with_one_sentence(arena: Arena) -> None:
    """``-a never -s workspace-write``: refused, nothing written; ordinary names (and
    ``pathlib.py`` in a subfolder, which no ``sys.path`` entry is) go through."""
    ordinary = ("utils.py", "test.py", "data/pathlib.py", "notes.md")
    script = [
        [custom_tool_call("apply_patch", add_files("pathlib.py", "helper.py"), "p1")],
        [custom_tool_call("apply_patch", add_files(*ordinary), "p2")],
    ]
    _stderr, server = run(arena, "bwrap", "never", script)
    answer = server.outputs(1)["p1"]
    assert answer == f"patch rejected: {SHADOWS}; give the file another name"
    assert not (arena.ws / "pathlib.py").exists()
    assert not (arena.ws / "helper.py").exists()  # the patch is refused as a whole
    assert "Success" in server.outputs(2)["p2"]
    for name in ordinary:
        assert (arena.ws / name).read_text() == PLANTED


@pytest.mark.parametrize("answer", ["y", "n"])
def test_on_request_asks_with_the_reason_shown(arena: Arena, answer: str) -> None:
    """``-a on-request``: a person at a terminal is asked, with the reason; yes writes
    the file (and the turn's end says what it now shadows), no leaves nothing."""
    script = [[custom_tool_call("apply_patch", add_files("pathlib.py"), "p1")]]
    stderr, server = run(arena, "bwrap", "on-request", script, [answer])
    assert "Apply this patch? (Add pathlib.py, shown above)\n" in stderr
    assert f"  Reason: {SHADOWS}\n" in stderr
    warning = "warning: 'pathlib.py' in the working folder now shadows Python's 'pathlib'"
    if answer == "y":
        assert (arena.ws / "pathlib.py").read_text() == PLANTED
        assert "Success" in server.outputs(1)["p1"]
        assert warning in stderr
    else:
        assert not (arena.ws / "pathlib.py").exists()
        assert server.outputs(1)["p1"] == "patch rejected by user"
        assert warning not in stderr


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_a_sandboxed_command_that_plants_a_module_is_named_at_the_turns_end(
    arena: Arena, mechanism: str
) -> None:
    """Bubblewrap lets a command create ``json.py`` at the top of the working folder;
    Landlock does not, but lets it write into a folder there (``email/``, a data
    folder). Each planted module gets one warning line; a link (which the change scan
    does not follow, so undo cannot take it back) says to remove it."""
    require_mechanism(mechanism)
    (arena.ws / "email").mkdir()
    if mechanism == "bwrap":
        cmd, planted = "echo 'print(1)' > json.py && ln -s elsewhere.py csv.py", "json.py"
    else:
        cmd, planted = "echo 'print(1)' > email/__init__.py", "email/__init__.py"
    module = planted.split(".")[0].split("/")[0]
    script = [[function_call("exec_command", {"cmd": cmd}, "c1")]]
    stderr, server = run(arena, mechanism, "never", script)
    assert "Process exited with code 0" in server.outputs(1)["c1"]
    assert (arena.ws / planted).is_file()
    line = (
        f"warning: '{planted}' in the working folder now shadows Python's '{module}' "
        "module: the next kernel started in this folder, and any Python started there, "
        "would run it, outside the sandbox; %agent undo removes it.\n"
    )
    assert line in stderr
    if mechanism == "bwrap":
        assert "warning: 'csv.py' in the working folder now shadows Python's 'csv'" in stderr
        assert "outside the sandbox; remove it before starting one.\n" in stderr
    assert stderr.count("warning: ") == (2 if mechanism == "bwrap" else 1)
