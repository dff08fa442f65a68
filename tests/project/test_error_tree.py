"""One error tree, one voice: every exception class the package defines is in the
``AgentMagicsError`` tree, private (an underscore name: raised and caught inside one
subsystem), or kept on :data:`KEPT` with the reason; only :func:`errors.for_person`
writes who speaks (``agent: ``, ``agent-magics: ``) before a sentence for people; and
what a failed turn raises at the public entry points is caught by ``except
agent_magics.AgentMagicsError``, through a real IPython shell, a real kernel and the
real ``agent-magics exec``.

Classes and strings are read from the source (``ast``), as the layering test reads
imports, so a module no test imports is checked too."""

from __future__ import annotations

import ast
import builtins
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import agent_magics
from agent_magics.errors import AGENT, PROGRAM, for_person
from tests.helpers.kernels import KERNEL_PYTHONS, loaded_kernel
from tests.helpers.paths import PACKAGE, package_modules
from tests.helpers.shell import loaded_shell

ROOT_ERROR = "AgentMagicsError"
KEPT = {
    "StreamFailed": "models: the ModelClient protocol's failure; agent/sampling.py turns it "
    "into ModelError, ConnectionFailed or ContextWindowFull, so it never leaves a turn",
    "MalformedItem": "protocol: what cannot be read as an item; the stream turns it into "
    "StreamFailed, the store skips the record",
    "PatchError": "apply_patch's own family (parse, verify, apply), worded as Codex's "
    "apply_patch words it; tools/runtimes/apply_patch.py answers it to the model",
    "RustIoError": "an OSError by design: file code catches OSError, and io_error_text "
    "shows it in Rust's words inside apply_patch's model-facing text",
    "OutsideWritableRoots": "a PermissionError by design: a confined write is denied as the "
    "OS would deny it, and the patch text says so as Codex does",
    "SessionInUse": "an OSError by design: store/recorder.py runs the session unsaved and "
    "tells the person, as for any file that cannot be written",
    "CallsInterrupted": "tools/runtime.py hands agent/tool_round.py the outputs of calls a "
    "stop cut short; the round records them and ends the turn as aborted",
    "UnreadableImage": "an image the handlers cannot send: view_image answers the model, "
    "notebook outputs and exec --image fall back to text or a sentence of their own",
    "McpError": "an MCP request got no result; the MCP tool handlers answer the model in "
    "Codex's words",
}
"""Names outside the tree that are not private, and why (their subclasses inherit the
reason). Each is caught where it is raised or by the callers its module names; none
leaves a public entry point."""

SPEAKERS = tuple(f"{who}: " for who in (AGENT, PROGRAM))
LABELS = {
    "transcript/history.py": "the speaker label of the model's words beside `you: ` in a "
    "listing of turns, not the package speaking",
}
"""Modules where ``agent: `` starts a line for another reason than a sentence of ours."""


def _module_classes() -> dict[str, list[tuple[str, list[str]]]]:
    """Every class in the package: name -> [(module path, base names)]."""
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for path in package_modules():
        where = path.relative_to(PACKAGE).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = [ast.unparse(b).rpartition(".")[2] for b in node.bases]
                found.setdefault(node.name, []).append((where, bases))
    return found


CLASSES = _module_classes()
BUILTIN_ERRORS = {
    name
    for name, value in vars(builtins).items()
    if isinstance(value, type) and issubclass(value, BaseException)
}


def _ancestors(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
    """The names ``name`` derives from, through the package's classes (by name)."""
    out: set[str] = set()
    for _where, bases in CLASSES.get(name, []):
        for base in bases:
            if base not in seen:
                out |= {base, *_ancestors(base, seen | {name})}
    return out


def _is_exception(name: str) -> bool:
    """Derives from BaseException: a built-in one, or a base from another package named
    as exceptions are (``httpx.HTTPError``)."""
    return any(
        a in BUILTIN_ERRORS or (a not in CLASSES and a.endswith(("Error", "Exception")))
        for a in _ancestors(name)
    )


EXCEPTIONS = sorted(name for name in CLASSES if _is_exception(name))


def test_the_walk_finds_the_exceptions_it_must_judge() -> None:
    assert {ROOT_ERROR, "AgentTurnFailed", "PatchParseError", "_Recursive"} <= set(EXCEPTIONS)
    assert "SessionConfig" not in EXCEPTIONS and "ToolHandler" not in EXCEPTIONS


@pytest.mark.parametrize("name", EXCEPTIONS)
def test_each_exception_is_in_the_tree_private_or_kept_with_a_reason(name: str) -> None:
    lineage = {name, *_ancestors(name)}
    in_tree = ROOT_ERROR in lineage
    private = any(n.startswith("_") for n in lineage if n in CLASSES)
    kept = [n for n in lineage if n in KEPT]
    where = [w for w, _ in CLASSES[name]]
    assert in_tree or private or kept, (
        f"{name} ({', '.join(where)}) is outside the AgentMagicsError tree: put it in the "
        "tree if it can leave a public entry point, else give it an underscore name"
    )
    assert not (in_tree and kept), f"{name} is in the tree: take it off KEPT"


def test_every_kept_name_still_exists_outside_the_tree() -> None:
    for name in KEPT:
        assert name in EXCEPTIONS, f"{name} is kept but no longer defined"
        assert ROOT_ERROR not in _ancestors(name), name


def test_the_turn_a_cell_waited_for_fails_with_a_user_error() -> None:
    assert issubclass(agent_magics.AgentTurnFailed, agent_magics.UserError)
    failed = agent_magics.AgentTurnFailed("The model server cannot be reached.")
    assert str(failed) == "The model server cannot be reached."
    assert failed._render_traceback_() == [f"AgentTurnFailed: {failed}"]


def _speaker_strings(tree: ast.AST) -> list[tuple[int, str]]:
    """The literal text (whole strings, the literal parts of f-strings) in which a line
    starts with who speaks."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            lines = node.value.split("\n")
            if any(line.startswith(SPEAKERS) for line in lines):
                found.append((node.lineno, node.value))
    return found


def test_the_check_sees_a_hand_written_prefix() -> None:
    source = (
        'print("agent: done")\n'
        'say(f"agent-magics: {exc}")\n'
        'x = f"{settings}\\nagent: {answer}"\n'
        'fine = "the agent: a coding agent"\n'
    )
    assert sorted(line for line, _ in _speaker_strings(ast.parse(source))) == [1, 2, 3]


def test_only_for_person_writes_who_speaks() -> None:
    written = []
    for path in package_modules():
        where = path.relative_to(PACKAGE).as_posix()
        if where in ("errors.py", *LABELS):
            continue
        for line, text in _speaker_strings(ast.parse(path.read_text(encoding="utf-8"))):
            written.append(f"{where}:{line}: {text!r}")
    assert written == [], "write these with agent_magics.errors.for_person:\n" + "\n".join(written)


def test_for_person_puts_the_speaker_before_the_sentence_once() -> None:
    assert for_person("the conversation was reset.") == "agent: the conversation was reset."
    assert for_person(ValueError("bad value")) == "agent: bad value"
    assert for_person("the prompt is empty.", PROGRAM) == "agent-magics: the prompt is empty."
    assert for_person("could not run: {}").format("why") == "agent: could not run: why"


# -- end to end: what a failed turn raises, and what a terminal prints -----------------


def closed_port() -> int:
    """A 127.0.0.1 port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


QUICK = ["request_max_retries=0", "stream_max_retries=0", "allow_login_shell=false"]
CATCH = """
import agent_magics
try:
    {call}("go", base_url={url!r}, config={quick!r})
except agent_magics.AgentMagicsError as exc:
    caught = (type(exc).__name__, str(exc))
"""


def test_a_failed_turn_in_an_ipython_shell_is_an_agent_magics_error(home: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with loaded_shell() as shell:
        code = CATCH.format(call="agent_magics.ask", url=url, quick=QUICK)
        shell.user_ns.pop("caught", None)
        result = shell.run_cell(textwrap.dedent(code))
        assert result.error_in_exec is None, result.error_in_exec
        name, sentence = shell.user_ns.pop("caught")
    assert name == "AgentTurnFailed"
    assert sentence.startswith("Could not reach the model server at " + url)


@pytest.mark.slow
def test_a_failed_turn_in_a_kernel_is_an_agent_magics_error(home: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    with loaded_kernel(KERNEL_PYTHONS[0].values[0], home) as kernel:
        code = CATCH.format(call="await agent_magics.ask_async", url=url, quick=QUICK)
        messages = kernel.run(textwrap.dedent(code), timeout=120)
        assert not [m for m in messages if m["msg_type"] == "error"], messages
        name, sentence = kernel.value("caught")
    assert name == "AgentTurnFailed"
    assert sentence.startswith("Could not reach the model server at " + url)


def test_exec_against_an_unreachable_server_prints_the_one_sentence(home: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/v1"
    argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
    argv += ["--base-url", url, "-m", "m", "-C", str(home)]
    for setting in QUICK:
        argv += ["-c", setting]
    done = subprocess.run(
        [*argv, "go"],
        env=os.environ | {"HOME": str(home)},
        cwd=home,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 75, done.stderr  # EX_TEMPFAIL: worth retrying later
    assert done.stdout == ""
    said = [line for line in done.stderr.splitlines() if not line.startswith("session: ")]
    assert said == [
        f"agent-magics: Could not reach the model server at {url} (ConnectError); check "
        "--base-url and that the server runs."
    ]
