"""The plain-command parser against real bash, on generated scripts, and the named
differences between Codex's reading, ours and bash's.

:func:`parse_shell_script` reads a script as Codex does, with tree-sitter-bash's words.
For every script :func:`bash_script_words` gives words for (the words bash passes, where
it splits the script as tree-sitter does), bash must run the same commands with those
words: bash runs the script with ``PATH`` pointing nowhere and a
``command_not_found_handle`` that records each command's argv, NUL-separated. Command
names are made of letters no builtin or keyword is spelled with (the builtin ``[``,
which ``\\[`` spells, is disabled), so every command reaches the handler. The handler
answers 0 in one run and 1 in another, so that both sides of ``&&`` / ``||`` run in one
of them: each run must run only commands we read, and the two runs together all of
them. Globbing is off (``set -f``) and ``~`` is not generated: those change a word's
value, never where it ends; brace expansion stays on. A script
:func:`bash_script_words` refuses is fine (it is simply not known-safe);
``DIFFERENCES`` names how Codex and we read and decide such scripts.

``SHELL_DIFF_EXAMPLES`` raises the number of scripts (drawn at random, not the suite's
fixed ones) for a long local campaign.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode, SandboxPermissions
from agent_magics.tools.approval.requirement import Forbidden, command_approval_requirement
from agent_magics.tools.command_safety.parse import bash_script_words
from agent_magics.tools.command_safety.rules import (
    canonical_command,
    is_dangerous_command,
    is_known_safe_command,
    parse_shell_script,
)

BASH = shutil.which("bash")
CAMPAIGN = os.environ.get("SHELL_DIFF_EXAMPLES")
EXAMPLES = int(CAMPAIGN or "150")
RECORD_END = "\x01"
HANDLER = (
    "command_not_found_handle() { printf '%s\\0' \"$@\" $'\\1' >> \"$OUT\"; return $STATUS; }\n"
)
PRELUDE = "PATH=/nonexistent; set -f; enable -n [ test\n" + HANDLER

# Pieces a script is made of: names, arguments, quotes, separators, escapes, and the
# characters tree-sitter, bash and other shells disagree about.
PIECES = [
    "x", "y", "zq", "w", "-o", "--output=w", "a=b", "==", "1", "x,y",
    " ", " ", "  ", "\t", "\n", ";", " && ", "&&", " || ", "||", " | ", "|", "&", ">",
    "'q w'", "'", '"', '"x y"', '"a\\"b"', '"\\\\"', '"\\x"', '"a\\\nb"', "''", '""',
    "\\", "\\\n", "\\ ", "\\\t", "\\x", "\\'", '\\"', "\\\\", "\\$", "\\&", "\\;",
    "\v", "\f", "\r", "\u00a0", "\u2028", "\u3000", "\u0085", "\x1c",
    "{", "}", "{x,y}", "{}", "[", "]", "*", "?", "#", "$", "$x", "==",
    "then", "in", "if", "time", "é",
]  # fmt: skip

scripts = st.lists(st.sampled_from(PIECES), min_size=1, max_size=14).map("".join)


def bash_run(
    script: str, status: int, folder: Path, *, prelude: str = PRELUDE, cwd: Path | None = None
) -> tuple[list[list[str]], str]:
    """The argv of every command bash ran, in order, and what it wrote to stderr."""
    out = folder / f"argv-{status}"
    out.write_bytes(b"")
    assert BASH is not None
    env = {"OUT": str(out), "STATUS": str(status), "LC_ALL": "C.UTF-8", "HOME": str(folder)}
    done = subprocess.run(
        [BASH, "-c", prelude + script],
        env=env,
        cwd=cwd or folder,
        capture_output=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    records = out.read_bytes().decode("utf-8").split(RECORD_END + "\0")
    commands = [record.split("\0")[:-1] for record in records[:-1]]
    return commands, done.stderr.decode("utf-8", errors="replace")


def bash_commands(script: str) -> tuple[list[Counter[tuple[str, ...]]], str]:
    """The commands bash ran in each run (the handler answering 0, then 1), and the
    errors bash reported."""
    with tempfile.TemporaryDirectory() as tmp:
        runs: list[Counter[tuple[str, ...]]] = []
        errors = ""
        for status in (0, 1):
            commands, stderr = bash_run(script, status, Path(tmp))
            runs.append(Counter(tuple(c) for c in commands))
            errors += stderr
    return runs, errors


def disagreement(script: str) -> str | None:
    """Why our reading of ``script`` differs from bash's, or None when it does not: each
    run may skip commands (``&&``, ``||``) but runs no other, and together the runs
    reach every command we read."""
    ours = bash_script_words(script)
    if ours is None:
        return None
    assert parse_shell_script(script) is not None
    runs, errors = bash_commands(script)
    if errors:
        return f"we read {ours!r}; bash said {errors!r}"
    counts = Counter(tuple(c) for c in ours)
    reached = set().union(*runs)
    if any(run - counts for run in runs) or reached != set(counts):
        return f"we read {ours!r}; bash ran {[sorted(run.elements()) for run in runs]!r}"
    return None


pytestmark = pytest.mark.skipif(BASH is None, reason="needs bash")


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
    derandomize=CAMPAIGN is None,  # the same scripts on every run of the suite
)
@given(scripts)
def test_parser_agrees_with_bash(script: str) -> None:
    assert disagreement(script) is None


# Scripts where an earlier reading disagreed with bash; each is now refused or agrees.
FOUND = [
    pytest.param("x y\n\\zq w", id="newline-then-escaped-command"),
    pytest.param("x -\\\n-output=w", id="continuation-joins-words"),
    pytest.param("x\vy", id="vertical-tab"),
    pytest.param("x\fy", id="form-feed"),
    pytest.param("x\ry", id="carriage-return"),
    pytest.param("x \\ y", id="escaped-space-at-word-start"),
    pytest.param("x \\\ty", id="escaped-tab"),
    pytest.param('x "a"\\y', id="escape-after-quote"),
    pytest.param("x ] ]", id="lone-bracket-run"),
    pytest.param("x {y,w}", id="brace-expansion"),
    pytest.param("x --out\\put=w", id="escape-inside-option"),
    pytest.param("x\n\\\n-o", id="continuation-after-newline"),
    pytest.param("time\\\n==\t", id="continuation-inside-an-assignment"),
    pytest.param("ti\\\nme x", id="continuation-inside-a-keyword"),
]


@pytest.mark.parametrize("script", FOUND)
def test_found_disagreements_are_gone(script: str) -> None:
    assert disagreement(script) is None


P = pytest.param


def codex_known_safe(commands: list[list[str]] | None) -> bool:
    """Codex's decision: every command known-safe by tree-sitter's words alone."""
    return bool(commands) and all(is_known_safe_command(c) for c in commands or [])


# Where tree-sitter's words (Codex's, and so ours for approval keys and the policy)
# differ from the words bash passes. Each: the script, bash's commands (checked against
# real bash), Codex's commands, Codex's known-safe decision, ours.
DIFFERENCES = [
    # Refused as Codex refuses it (a tree-sitter error), though bash runs `ls`: asks.
    P("ls \\\n", [["ls"]], None, False, False, id="continuation-at-the-end"),
    # Backslashes kept as written: the approval key is Codex's, and both readings are
    # known-safe, as in Codex.
    P("ls a\\ b", [["ls", "a b"]], [["ls", "a\\ b"]], True, True, id="escaped-space"),
    P('cat "a\\"b"', [["cat", 'a"b']], [["cat", 'a\\"b']], True, True, id="escaped-quote"),
    P("ls 'it'\\''s'", [["ls", "it's"]], [["ls", "it\\'s"]], True, True, id="quote-in-quotes"),
    P('cat "a\\\nb"', [["cat", "ab"]], [["cat", "a\\\nb"]], True, True, id="quoted-continuation"),
    P("l\\\ns", [["ls"]], [["l", "s"]], False, False, id="continuation-in-a-name"),
    P("time ls", [["ls"]], [["time", "ls"]], False, False, id="reserved-word-time"),
    # Known-safe by tree-sitter's words, not by the words bash runs: Codex runs these
    # without asking; we ask.
    P("find . -\\delete", [["find", ".", "-delete"]], [["find", ".", "-\\delete"]], True, False,
      id="escaped-option"),
    P("rg --pr\\e=sh x", [["rg", "--pre=sh", "x"]], [["rg", "--pr\\e=sh", "x"]], True, False,
      id="escaped-rg-pre"),
    P("ls\n\\rm -f x", [["ls"], ["rm", "-f", "x"]], [["ls", "\n\\rm", "-f", "x"]], True, False,
      id="newline-before-an-escape"),
    P("find . {-delete,}", [["find", ".", "-delete"]], [["find", ".", "{-delete,}"]], True, False,
      id="brace-expansion"),
    P("ls \\ x", [["ls", " x"]], [["ls", "x"]], True, False, id="escaped-space-at-word-start"),
    P("ls\vx", [["ls\vx"]], [["ls", "x"]], True, False, id="vertical-tab"),
    P("ls ] ]", [["ls", "]", "]"]], [["ls", "] ]"]], True, False, id="lone-bracket-run"),
]  # fmt: skip
# Globs are expanded (no `set -f`) in a folder holding a file named like an option.
GLOBS = [
    P("find . *", [["find", ".", "-delete"]], [["find", ".", "*"]], True, False, id="glob"),
    P("ls *.py", [["ls", "-l.py"]], [["ls", "*.py"]], True, False, id="glob-with-suffix"),
]


def bash_reading(script: str, files: tuple[str, ...] = ()) -> list[list[str]]:
    """The commands bash runs (the handler answering 0); with ``files``, globbing on
    in a folder holding them."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        if not files:
            return bash_run(script, 0, folder)[0]
        (folder / "files").mkdir()
        for name in files:
            (folder / "files" / name).write_text("")
        prelude = "PATH=/nonexistent\n" + HANDLER
        return bash_run(script, 0, folder, prelude=prelude, cwd=folder / "files")[0]


@pytest.mark.parametrize(("script", "bash", "codex", "codex_safe", "safe"), DIFFERENCES + GLOBS)
def test_named_differences(
    script: str,
    bash: list[list[str]],
    codex: list[list[str]] | None,
    codex_safe: bool,
    safe: bool,
) -> None:
    files = ("-delete",) if script.startswith("find") else ("-l.py",)
    assert bash_reading(script, files if "*" in script else ()) == bash
    assert parse_shell_script(script) == codex
    assert codex_known_safe(codex) is codex_safe
    argv = ["bash", "-lc", script]
    assert is_known_safe_command(argv) is safe
    assert bash_script_words(script) in (bash, None)  # never other words than bash's
    single = codex is not None and len(codex) == 1
    assert canonical_command(argv) == (
        codex[0] if codex and single else ["__codex_shell_script__", "-lc", script]
    )


# Dangerous (`rm -f`) is judged by Codex's words and by bash's: bash runs `rm -f` here,
# where Codex's words (`r\\m`, `-\\f`) let the script through; ours keep it dangerous
# (refused under `never`, asked otherwise).
DANGEROUS = [
    P("r\\m -f x", [["rm", "-f", "x"]], [["r\\m", "-f", "x"]], True, id="escaped-rm"),
    P("rm -\\f x", [["rm", "-f", "x"]], [["rm", "-\\f", "x"]], True, id="escaped-force"),
    P("rm -f x", [["rm", "-f", "x"]], [["rm", "-f", "x"]], True, id="plain-rm"),
    P("rm x", [["rm", "x"]], [["rm", "x"]], False, id="rm-without-force"),
]


@pytest.mark.parametrize(("script", "bash", "codex", "dangerous"), DANGEROUS)
def test_dangerous_by_codex_words_or_bash_words(
    script: str, bash: list[list[str]], codex: list[list[str]], dangerous: bool
) -> None:
    assert bash_reading(script) == bash
    assert parse_shell_script(script) == codex
    assert is_dangerous_command(["bash", "-lc", script]) is dangerous
    assert is_known_safe_command(["bash", "-lc", script]) is False
    argv = ["bash", "-lc", script]
    never = command_approval_requirement(
        ApprovalPolicy.NEVER,
        SandboxMode.WORKSPACE_WRITE,
        argv,
        SandboxPermissions.USE_DEFAULT,
        None,
    )
    assert isinstance(never, Forbidden) is dangerous
