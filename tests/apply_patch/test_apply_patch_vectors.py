"""Every vector of ``conformance/vectors/apply_patch_cases.json`` as a unit test.

Parser errors and hunks, single update chunks, hunk headers, ``seek_sequence``, the
standalone applier on small file sets, and the messages the model-facing tool produces.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_magics.apply_patch import (
    LARK_GRAMMAR,
    AddFile,
    DeleteFile,
    Hunk,
    PatchParseError,
    PatchVerificationError,
    UpdateFile,
    UpdateFileChunk,
    apply_patch_to_disk,
    parse_patch,
    seek_sequence,
    verify_patch,
)
from agent_magics.apply_patch.parser import parse_hunk, parse_update_chunk, rust_trim
from agent_magics.text.rust import rust_os_error
from tests.helpers.paths import CONFORMANCE as SHARED

VECTORS_FILE = SHARED / "vectors" / "apply_patch_cases.json"

VECTORS: dict[str, Any] = json.loads(VECTORS_FILE.read_text("utf-8"))


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:60]


def _params(group: str) -> list[Any]:
    params = []
    for index, vector in enumerate(VECTORS[group]):
        origin = vector.get("origin") or {}
        label = origin.get("test") or vector.get("situation") or ""
        params.append(pytest.param(vector, id=f"{index:02d}-{_slug(label)}"))
    return params


def chunk_as_dict(chunk: UpdateFileChunk) -> dict[str, Any]:
    return {
        "change_context": chunk.change_context,
        "old_lines": chunk.old_lines,
        "new_lines": chunk.new_lines,
        "is_end_of_file": chunk.is_end_of_file,
    }


def hunk_as_dict(hunk: Hunk) -> dict[str, Any]:
    if isinstance(hunk, AddFile):
        return {"type": "add", "path": hunk.path, "contents": hunk.contents}
    if isinstance(hunk, DeleteFile):
        return {"type": "delete", "path": hunk.path}
    assert isinstance(hunk, UpdateFile)
    return {
        "type": "update",
        "path": hunk.path,
        "move_path": hunk.move_path,
        "chunks": [chunk_as_dict(chunk) for chunk in hunk.chunks],
    }


def assert_parse_error(error: PatchParseError, expected: dict[str, Any]) -> None:
    assert error.kind == expected["kind"]
    assert error.message == expected["message"]
    assert error.line_number == expected["line_number"]


@pytest.mark.parametrize("vector", _params("parse_cases"))
def test_parse_case(vector: dict[str, Any]) -> None:
    strict = vector["mode"] == "strict"
    if "expected_error" in vector:
        with pytest.raises(PatchParseError) as caught:
            parse_patch(vector["patch"], strict=strict)
        assert_parse_error(caught.value, vector["expected_error"])
    else:
        patch = parse_patch(vector["patch"], strict=strict)
        assert [hunk_as_dict(hunk) for hunk in patch.hunks] == vector["expected_hunks"]


@pytest.mark.parametrize("vector", _params("update_chunk_cases"))
def test_update_chunk_case(vector: dict[str, Any]) -> None:
    args = (vector["lines"], vector["line_number"], vector["allow_missing_context"])
    if "expected_error" in vector:
        with pytest.raises(PatchParseError) as caught:
            parse_update_chunk(*args)
        assert_parse_error(caught.value, vector["expected_error"])
    else:
        chunk, consumed = parse_update_chunk(*args)
        expected = dict(vector["expected"])
        assert consumed == expected.pop("lines_consumed")
        assert chunk_as_dict(chunk) == expected


@pytest.mark.parametrize("vector", _params("hunk_header_cases"))
def test_hunk_header_case(vector: dict[str, Any]) -> None:
    with pytest.raises(PatchParseError) as caught:
        parse_hunk(vector["lines"], vector["line_number"])
    assert_parse_error(caught.value, vector["expected_error"])


@pytest.mark.parametrize("vector", _params("seek_sequence_cases"))
def test_seek_sequence_case(vector: dict[str, Any]) -> None:
    found = seek_sequence(vector["lines"], vector["pattern"], vector["start"], vector["eof"])
    assert found == vector["expected"]


def files_under(root: Path) -> dict[str, str | None]:
    return {
        path.relative_to(root).as_posix(): None if path.is_dir() else path.read_text("utf-8")
        for path in sorted(root.rglob("*"))
    }


@pytest.mark.parametrize("vector", _params("apply_cases"))
def test_apply_case(vector: dict[str, Any], tmp_path: Path) -> None:
    for name, text in vector["initial_files"].items():
        if text is None:
            (tmp_path / name).mkdir(parents=True)
        else:
            (tmp_path / name).write_bytes(text.encode("utf-8"))

    result = apply_patch_to_disk(vector["patch"], tmp_path)

    assert result.exit_code == vector["expected_exit_code"]
    assert result.stdout == vector["expected_stdout"]
    assert result.stderr == vector["expected_stderr"]
    assert files_under(tmp_path) == vector["expected_files_after"]


# ---------------------------------------------------------------- tool-level messages
# The vectors name a situation; the patch and workspace for each are built here.

PREFIX = "apply_patch verification failed: "


def _tool_output(patch: str, cwd: Path) -> str:
    """What the tool answers, up to the exec formatting done by the tool handler."""
    try:
        verified = verify_patch(patch, cwd)
    except PatchVerificationError as error:
        return PREFIX + str(error)
    if verified.is_empty:
        return "patch rejected: empty patch"
    return "Exit code: 0\nWall time: 0 seconds\nOutput:\n" + verified.apply()


def _update_missing(cwd: Path) -> str:
    name = "missing_custom_tool_apply_patch.txt"
    patch = f"*** Begin Patch\n*** Update File: {name}\n@@\n-old\n+new\n*** End Patch"
    return _tool_output(patch, cwd)


def _invalid_header(cwd: Path) -> str:
    (cwd / "foo").write_text("x\n")
    return _tool_output("*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch", cwd)


def _missing_context(cwd: Path) -> str:
    (cwd / "modify.txt").write_text("line1\nline2\n")
    patch = "*** Begin Patch\n*** Update File: modify.txt\n@@\n-missing\n+changed\n*** End Patch"
    return _tool_output(patch, cwd)


def _delete_missing(cwd: Path) -> str:
    return _tool_output("*** Begin Patch\n*** Delete File: missing.txt\n*** End Patch", cwd)


def _delete_directory(cwd: Path) -> str:
    (cwd / "dir").mkdir()
    (cwd / "dir" / "foo.txt").write_text("x\n")
    out = _tool_output("*** Begin Patch\n*** Delete File: dir\n*** End Patch", cwd)
    assert out == f"{PREFIX}Failed to read {cwd}/dir: Is a directory (os error 21)"
    assert (cwd / "dir" / "foo.txt").read_text() == "x\n"
    return out


def _empty_patch(cwd: Path) -> str:
    return _tool_output("*** Begin Patch\n*** End Patch", cwd)


def _path_traversal(cwd: Path) -> str:
    # Rejecting writes outside the project is the safety check's job (it needs the
    # sandbox policy); the library's part is to report the resolved paths it touches.
    patch = "*** Begin Patch\n*** Add File: ../escape.txt\n+x\n*** End Patch"
    verified = verify_patch(patch, cwd)
    assert verified.touched_paths == [cwd.parent / "escape.txt"]
    assert not (cwd.parent / "escape.txt").exists()
    return "patch rejected: writing outside of the project; rejected by user approval settings"


def _multiple_operations(cwd: Path) -> str:
    (cwd / "modify.txt").write_text("line1\nline2\n")
    (cwd / "delete.txt").write_text("obsolete\n")
    patch = (
        "*** Begin Patch\n*** Add File: nested/new.txt\n+created\n*** Delete File: delete.txt\n"
        "*** Update File: modify.txt\n@@\n-line2\n+changed\n*** End Patch"
    )
    out = _tool_output(patch, cwd)
    assert (cwd / "modify.txt").read_text() == "line1\nchanged\n"
    return out


def _later_hunk_fails(cwd: Path) -> str:
    patch = (
        "*** Begin Patch\n*** Add File: created.txt\n+hello\n"
        "*** Update File: missing.txt\n@@\n-old\n+new\n*** End Patch"
    )
    out = _tool_output(patch, cwd)
    assert list(cwd.iterdir()) == []
    return out


SITUATIONS: dict[str, Callable[[Path], str]] = {
    "verification: update of a missing file (any tool surface)": _update_missing,
    "invalid hunk header": _invalid_header,
    "missing context": _missing_context,
    "delete of a missing file": _delete_missing,
    "delete of a directory": _delete_directory,
    "empty patch (no hunks)": _empty_patch,
    "Add File ../escape.txt or Move to ../x under workspace-write sandbox with approval "
    "policy that cannot prompt": _path_traversal,
    "success (multi-op patch), tool list contains the freeform apply_patch tool": (
        _multiple_operations
    ),
    "verification failure in a later hunk": _later_hunk_fails,
}


@pytest.mark.parametrize("vector", _params("tool_level_messages"))
def test_tool_level_message(vector: dict[str, Any], tmp_path: Path) -> None:
    cwd = tmp_path / "ws"
    cwd.mkdir()
    out = SITUATIONS[vector["situation"]](cwd)
    expand = str(cwd).join
    if "expected_output" in vector:
        assert out == expand(vector["expected_output"].split("<CWD>"))
    for part in vector.get("expected_contains", []):
        assert part in out
    if "derived_full_text" in vector:
        assert out == expand(vector["derived_full_text"].split("<CWD>"))
    if "expected_regex" in vector:
        assert re.match(vector["expected_regex"], out)


def test_every_situation_is_covered() -> None:
    assert {vector["situation"] for vector in VECTORS["tool_level_messages"]} == set(SITUATIONS)


# ---------------------------------------------------------------- grammar and helpers


def test_grammar_is_the_one_codex_sends() -> None:
    specs = json.loads((SHARED / "codex_tool_specs.json").read_text("utf-8"))
    tools = specs if isinstance(specs, list) else specs["tools"]
    (tool,) = [tool for tool in tools if tool.get("name") == "apply_patch"]
    assert tool["format"] == {"type": "grammar", "syntax": "lark", "definition": LARK_GRAMMAR}


@pytest.mark.parametrize(
    ("error", "text"),
    [
        pytest.param(FileNotFoundError(2, "x"), "No such file or directory (os error 2)", id="2"),
        pytest.param(IsADirectoryError(21, "x"), "Is a directory (os error 21)", id="21"),
        pytest.param(PermissionError(13, "x"), "Permission denied (os error 13)", id="13"),
        pytest.param(NotADirectoryError(20, "x"), "Not a directory (os error 20)", id="20"),
        pytest.param(OSError("custom"), "custom", id="no-errno"),
    ],
)
def test_rust_os_error(error: OSError, text: str) -> None:
    assert rust_os_error(error) == text


def test_rust_os_error_from_a_real_failure(tmp_path: Path) -> None:
    with pytest.raises(OSError) as caught:
        os.open(tmp_path / "missing", os.O_RDONLY)
    assert rust_os_error(caught.value) == "No such file or directory (os error 2)"


def test_trim_uses_rust_white_space_not_python_strip() -> None:
    assert rust_trim("\u00a0\u1680x\u205f\u0085") == "x"
    assert "\x1cx\x1f".strip() == "x"  # Python would strip these; Rust does not
    assert rust_trim("\x1cx\x1f") == "\x1cx\x1f"


def test_seek_sequence_trims_with_rust_white_space() -> None:
    assert seek_sequence(["\u3000foo\u00a0"], ["foo"], 0, False) == 0
    assert seek_sequence(["\x1cfoo"], ["foo"], 0, False) is None
    assert seek_sequence(["say \u201chi\u201d \u2013 ok"], ['say "hi" - ok'], 0, False) == 0
