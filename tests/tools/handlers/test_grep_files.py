"""grep_files: Codex's vectors with the real ripgrep, then paths, limits and failures."""

from __future__ import annotations

import asyncio
import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_magics.errors import RespondToModel
from agent_magics.tools.handlers.grep_files import (
    GrepFilesHandler,
    join_path,
    parse_rg_output,
    rg_argv,
    run_rg,
)
from agent_magics.tools.handlers.ripgrep import RG_NAME, find_rg
from tests.helpers.tools import assert_codex_parameters, call_tool, vectors

needs_rg = pytest.mark.skipif(find_rg() is None, reason="ripgrep is not installed")


async def call(cwd: Path, arguments: str | dict[str, Any]) -> tuple[str, bool]:
    return await call_tool(GrepFilesHandler(), cwd, arguments)


def _vectors(section: str) -> list[Any]:
    return vectors("grep_files_cases", section)


@pytest.mark.parametrize("case", _vectors("parse_results_cases"))
def test_parse_vector(case: dict[str, Any]) -> None:
    assert parse_rg_output(case["stdout"].encode(), case["limit"]) == case["expected"]


def test_parse_skips_blank_and_non_utf8_lines() -> None:
    stdout = b"/a\n\n/b\xff\n/c\n/d\n"
    assert parse_rg_output(stdout, 2) == ["/a", "/c"]


@needs_rg
@pytest.mark.parametrize("case", _vectors("search_cases"))
async def test_search_vector(case: dict[str, Any], tmp_path: Path) -> None:
    for rel, content in case["files"].items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(content)
    arguments: dict[str, Any] = {"pattern": case["pattern"]}
    arguments["path"] = case.get("path", "<D>").replace("<D>", str(tmp_path))
    for key in ("include", "limit"):
        if case.get(key) is not None:
            arguments[key] = case[key]
    text, success = await call(tmp_path, arguments)
    if "expected_tool_output" in case:
        assert text == case["expected_tool_output"]
    count = case.get("expected_count", 0)
    assert success == case.get("expected_success", count > 0)
    if count:
        paths = text.split("\n")
        assert len(paths) == count
        assert all(Path(p).is_absolute() and Path(p).is_file() for p in paths)
        if "expected_file_names" in case:
            assert sorted(Path(p).name for p in paths) == sorted(case["expected_file_names"])


@pytest.mark.parametrize("case", _vectors("handler_validation_cases"))
async def test_validation_vector(case: dict[str, Any], tmp_path: Path) -> None:
    missing = str(tmp_path / "missing")
    arguments = {
        k: v.replace("<ABS_NONEXISTENT>", missing) if isinstance(v, str) else v
        for k, v in case["arguments"].items()
    }
    text, success = await call(tmp_path, arguments)
    if "expected_error" in case:
        assert text == case["expected_error"]
    else:
        assert text.startswith(case["expected_error_prefix"].replace("<ABS_NONEXISTENT>", missing))
    assert not success


def _tree(root: Path) -> None:
    for i, name in enumerate(["old.txt", "mid.txt", "new.txt"]):
        (root / name).write_text("needle\n")
        os.utime(root / name, (1_700_000_000 + i, 1_700_000_000 + i))
    (root / "sub").mkdir()
    (root / "sub" / "deep.py").write_text("needle = 1\n")
    os.utime(root / "sub" / "deep.py", (1_600_000_000, 1_600_000_000))


@needs_rg
@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param({}, ["new.txt", "mid.txt", "old.txt", "sub/deep.py"], id="newest-first"),
        pytest.param({"limit": 2}, ["new.txt", "mid.txt"], id="limit"),
        pytest.param(
            {"limit": 10**6},
            ["new.txt", "mid.txt", "old.txt", "sub/deep.py"],
            id="huge-limit-clamped",
        ),
        pytest.param({"include": "  *.py  "}, ["sub/deep.py"], id="include-trimmed"),
        pytest.param(
            {"include": " \t "},
            ["new.txt", "mid.txt", "old.txt", "sub/deep.py"],
            id="blank-include-ignored",
        ),
        pytest.param(
            {"pattern": "  need\\w+ \n"},
            ["new.txt", "mid.txt", "old.txt", "sub/deep.py"],
            id="pattern-trimmed",
        ),
        pytest.param({"path": "sub"}, ["sub/deep.py"], id="relative-path"),
    ],
)
async def test_search_forms(tmp_path: Path, arguments: dict[str, Any], expected: list[str]) -> None:
    _tree(tmp_path)
    text, success = await call(tmp_path, {"pattern": "needle", **arguments})
    assert (text, success) == ("\n".join(f"{tmp_path}/{e}" for e in expected), True)


@pytest.mark.parametrize(
    ("cwd", "path", "joined"),
    [
        pytest.param("/w", "", "/w/", id="empty-path-gets-a-slash"),
        pytest.param("/w", "./sub", "/w/./sub", id="dot-segment-kept"),
        pytest.param("/", "sub", "/sub", id="root-cwd"),
        pytest.param("/w", "/abs//x/", "/abs//x/", id="absolute-as-is"),
    ],
)
def test_join_path_like_rust(cwd: str, path: str, joined: str) -> None:
    assert join_path(cwd, path) == joined


async def test_missing_path_is_shown_as_joined(tmp_path: Path) -> None:
    text, success = await call(tmp_path, {"pattern": "x", "path": "./nope/"})
    assert text == f"unable to access `{tmp_path}/./nope/`: No such file or directory (os error 2)"
    assert not success


@needs_rg
async def test_bad_regex_reports_rg_failure(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x\n")
    text, success = await call(tmp_path, {"pattern": "(unclosed"})
    assert text.startswith("rg failed: ")
    assert "regex parse error" in text
    assert not success


@needs_rg
async def test_unicode_whitespace_is_trimmed_like_rust(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("\x1cneedle\n")
    # U+001C is not White_Space for Rust, so it stays part of the pattern and matches.
    text, success = await call(tmp_path, {"pattern": "\u3000\x1cneedle\u2003"})
    assert (text, success) == (f"{tmp_path}/f", True)


async def test_missing_rg_is_a_launch_failure(tmp_path: Path) -> None:
    with pytest.raises(RespondToModel) as info:
        await run_rg([str(tmp_path / "no-such-rg")], str(tmp_path))
    assert info.value.message == (
        "failed to launch rg: No such file or directory (os error 2). "
        "Ensure ripgrep is installed and on PATH."
    )


def test_argv_is_codex_without_the_sort() -> None:
    # Codex passes --sortr=modified, which makes ripgrep single-threaded; we order the
    # files ourselves, and read them NUL-terminated so that no name can split in two.
    assert rg_argv("rg", "a b", None, "/w") == [
        "rg",
        "--files-with-matches",
        "--null",
        "--regexp",
        "a b",
        "--no-messages",
        "--",
        "/w",
    ]
    assert rg_argv("rg", "-x", "*.py", "/w")[5:] == ["--no-messages", "--glob", "*.py", "--", "/w"]


def test_find_rg_prefers_the_environment_scripts(tmp_path: Path) -> None:
    found = find_rg()
    if found is None:
        pytest.skip("ripgrep is not installed")
    assert Path(found).name == RG_NAME
    assert os.access(found, os.X_OK)
    beside = Path(sys.executable).parent / RG_NAME
    if beside.is_file():
        assert found == str(beside)


async def test_timeout_kills_rg(tmp_path: Path) -> None:
    script = tmp_path / "slow-rg"
    script.write_text("#!/bin/sh\nexec sleep 30\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    with pytest.raises(RespondToModel, match=r"^rg timed out after 30 seconds$"):
        await run_rg([str(script)], str(tmp_path), timeout=0.2)


async def test_cancel_kills_rg(tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    script = tmp_path / "slow-rg"
    script.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 30\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    task = asyncio.create_task(run_rg([str(script)], str(tmp_path)))
    while not pid_file.exists() or not pid_file.read_text().strip():
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_spec_has_codex_parameters() -> None:
    assert_codex_parameters(GrepFilesHandler(), "grep_files")
