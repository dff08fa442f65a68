"""The plain-command parser against real bash, on generated scripts.

For every script :func:`parse_shell_script` reads as plain commands, bash must run the
same commands with the same words: bash runs the script with ``PATH`` pointing nowhere
and a ``command_not_found_handle`` that records each command's argv, NUL-separated.
Command names are made of letters no builtin or keyword is spelled with, so every
command reaches the handler. The handler answers 0 in one run and 1 in another, so
that both sides of ``&&`` / ``||`` run in one of them: each run must run only commands
we read, and the two runs together all of them. Globbing is off (``set -f``) and
``~`` is not generated: those change a word's value, never where it ends; brace
expansion stays on. A script the parser refuses is fine (it is simply not known-safe).

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

from agent_magics.tools.command_safety.rules import parse_shell_script

BASH = shutil.which("bash")
CAMPAIGN = os.environ.get("SHELL_DIFF_EXAMPLES")
EXAMPLES = int(CAMPAIGN or "150")
RECORD_END = "\x01"
PRELUDE = (
    "PATH=/nonexistent; set -f\n"
    "command_not_found_handle() { printf '%s\\0' \"$@\" $'\\1' >> \"$OUT\"; return $STATUS; }\n"
)

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


def bash_run(script: str, status: int, folder: Path) -> tuple[list[list[str]], str]:
    """The argv of every command bash ran, in order, and what it wrote to stderr."""
    out = folder / f"argv-{status}"
    out.write_bytes(b"")
    assert BASH is not None
    env = {"OUT": str(out), "STATUS": str(status), "LC_ALL": "C.UTF-8", "HOME": str(folder)}
    done = subprocess.run(
        [BASH, "-c", PRELUDE + script],
        env=env,
        cwd=folder,
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
    ours = parse_shell_script(script)
    if ours is None:
        return None
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


# Scripts where the parser disagreed with bash (all but the assignment one before this
# change); each is now refused or agrees.
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
