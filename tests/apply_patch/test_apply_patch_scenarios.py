"""Codex's 23 apply_patch scenarios, run through ``python -m agent_magics.apply_patch``.

For each scenario ``input/`` is copied into an empty folder, the program runs there with
``patch.txt`` as its only argument, and the folder must then equal ``expected/`` byte for
byte (no extra files or folders), with the exit status, stdout and stderr of
``vectors/apply_patch_scenarios_expected.json``. A few more tests cover the program's
argument handling (stdin, usage, extra arguments, bytes that are not UTF-8).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.paths import CONFORMANCE as SHARED
from tests.helpers.paths import ROOT as REPO

pytestmark = pytest.mark.slow  # real sandboxes, servers or CLI runs per case

SCENARIOS = SHARED / "apply_patch_scenarios"

EXPECTED: dict[str, dict[str, Any]] = {
    entry["scenario"]: entry
    for entry in json.loads(
        (SHARED / "vectors" / "apply_patch_scenarios_expected.json").read_text("utf-8")
    )["scenarios"]
}
SCENARIO_DIRS = sorted(path for path in SCENARIOS.iterdir() if path.is_dir())


def run_cli(
    args: list[str | bytes], cwd: Path, stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    env = dict(
        os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    )
    return subprocess.run(
        [sys.executable, "-m", "agent_magics.apply_patch", *args],
        cwd=cwd,
        input=stdin if stdin is not None else b"",
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )


def copy_tree(source: Path, target: Path) -> None:
    """Copy files and folders with default permissions (the fixtures are read-only)."""
    target.mkdir(parents=True, exist_ok=True)
    if not source.is_dir():
        return
    for path in sorted(source.rglob("*")):
        destination = target / path.relative_to(source)
        if path.is_dir():
            destination.mkdir()
        else:
            destination.write_bytes(path.read_bytes())


def tree(root: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (``None``) under ``root``."""
    if not root.is_dir():
        return {}
    return {
        path.relative_to(root).as_posix(): None if path.is_dir() else path.read_bytes()
        for path in sorted(root.rglob("*"))
    }


def test_every_scenario_has_expected_results() -> None:
    assert len(SCENARIO_DIRS) == 23
    assert {path.name for path in SCENARIO_DIRS} == set(EXPECTED)


@pytest.mark.parametrize("scenario", SCENARIO_DIRS, ids=[path.name for path in SCENARIO_DIRS])
def test_scenario(scenario: Path, tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    copy_tree(scenario / "input", workspace)
    patch = (scenario / "patch.txt").read_text("utf-8")

    result = run_cli([patch], workspace)

    prefix = f"{workspace}{os.sep}"
    expected = EXPECTED[scenario.name]
    assert result.returncode == expected["expected_exit_code"]
    assert result.stdout.decode("utf-8").replace(prefix, "") == expected["expected_stdout"]
    assert result.stderr.decode("utf-8").replace(prefix, "") == expected["expected_stderr"]
    assert tree(workspace) == tree(scenario / "expected")


ADD_PATCH = "*** Begin Patch\n*** Add File: cli_test.txt\n+hello\n*** End Patch"


def test_patch_read_from_stdin(tmp_path: Path) -> None:
    result = run_cli([], tmp_path, stdin=ADD_PATCH.encode())
    assert (result.returncode, result.stderr) == (0, b"")
    assert result.stdout == b"Success. Updated the following files:\nA cli_test.txt\n"
    assert (tmp_path / "cli_test.txt").read_bytes() == b"hello\n"


def test_empty_stdin_prints_usage(tmp_path: Path) -> None:
    result = run_cli([], tmp_path, stdin=b"")
    assert result.returncode == 2
    assert result.stdout == b""
    assert result.stderr == b"Usage: apply_patch 'PATCH'\n       echo 'PATCH' | apply-patch\n"


def test_more_than_one_argument_is_refused(tmp_path: Path) -> None:
    result = run_cli([ADD_PATCH, "extra"], tmp_path)
    assert result.returncode == 2
    assert result.stderr == b"Error: apply_patch accepts exactly one argument.\n"
    assert list(tmp_path.iterdir()) == []


def test_argument_that_is_not_utf8(tmp_path: Path) -> None:
    result = run_cli([b"*** Begin Patch\xff"], tmp_path)
    assert result.returncode == 1
    assert result.stderr == b"Error: apply_patch requires a UTF-8 PATCH argument.\n"


def test_stdin_that_is_not_utf8(tmp_path: Path) -> None:
    result = run_cli([], tmp_path, stdin=b"\xff\xfe")
    assert result.returncode == 1
    assert result.stderr == (
        b"Error: Failed to read PATCH from stdin.\nstream did not contain valid UTF-8\n"
    )


def test_empty_argument_is_an_invalid_patch(tmp_path: Path) -> None:
    result = run_cli([""], tmp_path)
    assert result.returncode == 1
    assert result.stderr == b"Invalid patch: The last line of the patch must be '*** End Patch'\n"


def test_parse_error_writes_nothing(tmp_path: Path) -> None:
    patch = "*** Begin Patch\n*** Add File: a.txt\n+a\n*** Frobnicate: b\n*** End Patch"
    result = run_cli([patch], tmp_path)
    assert result.returncode == 1
    assert result.stderr.startswith(b"Invalid patch hunk on line 4: '*** Frobnicate: b' is not")
    assert list(tmp_path.iterdir()) == []


def test_update_of_a_file_that_is_not_utf8(tmp_path: Path) -> None:
    (tmp_path / "bin.dat").write_bytes(b"\xff\n")
    patch = "*** Begin Patch\n*** Update File: bin.dat\n@@\n-a\n+b\n*** End Patch"
    result = run_cli([patch], tmp_path)
    assert result.returncode == 1
    assert result.stderr == (
        b"Failed to read file to update bin.dat: stream did not contain valid UTF-8\n"
    )
    assert (tmp_path / "bin.dat").read_bytes() == b"\xff\n"
