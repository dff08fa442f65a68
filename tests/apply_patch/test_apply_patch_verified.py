"""The model-facing tool's path: ``verify_patch`` then ``VerifiedPatch.apply``.

The Codex goldens of the ``apply_patch`` and ``apply_patch_function`` groups are replayed
(output text and workspace afterwards), then the all-or-nothing behaviour is checked on
real files: a failing hunk writes nothing, and a write that fails half-way is undone.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agent_magics.apply_patch import (
    PatchApplyError,
    PatchVerificationError,
    verify_patch,
)
from tests.helpers.paths import CONFORMANCE as CONF

GROUPS = ("apply_patch", "apply_patch_function")
PREFIX = "apply_patch verification failed: "

# Goldens about how Codex routes a call rather than about the patch itself.
NOT_A_PATCH_GOLDEN = {
    "apply_patch/function_call_payload.json": "a function call to the freeform tool is "
    "answered 'aborted' by the router; no patch is applied",
}


def _golden_params() -> list[Any]:
    params = []
    for group in GROUPS:
        for path in sorted((CONF / "goldens" / group).glob("*.json")):
            key = f"{group}/{path.name}"
            marks = []
            if key in NOT_A_PATCH_GOLDEN:
                marks.append(pytest.mark.skip(reason=NOT_A_PATCH_GOLDEN[key]))
            params.append(pytest.param(key, id=key.removesuffix(".json"), marks=marks))
    return params


def _patch_of(call: dict[str, Any]) -> str:
    if "input" in call:
        return str(call["input"])
    arguments = call["arguments"]
    if isinstance(arguments, str):
        arguments = json.loads(arguments)
    return str(arguments["input"])


def materialize(workspace: Path, files: dict[str, Any]) -> None:
    """Create a case's files (text, or ``{"text": ...}`` / ``{"dir": true}`` entries)."""
    for name, spec in files.items():
        entry = {"text": spec} if isinstance(spec, str) else spec
        path = workspace / name
        if entry.get("dir") or name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(entry["text"].encode("utf-8"))


def golden_tree(workspace: Path) -> dict[str, Any]:
    """The workspace as the goldens record it; files written next to it appear as ``../x``."""
    out: dict[str, Any] = {}
    for path in sorted(workspace.parent.iterdir()):
        if path != workspace:
            key = "../" + path.name
            out[key + "/" if path.is_dir() else key] = (
                {"dir": True} if path.is_dir() else {"text": path.read_text("utf-8")}
            )
    for path in sorted(workspace.rglob("*")):
        rel = path.relative_to(workspace).as_posix()
        if path.is_dir():
            out[rel + "/"] = {"dir": True}
        else:
            out[rel] = {"text": path.read_bytes().decode("utf-8")}
    return dict(sorted(out.items()))


def _summary_of(output: str) -> str:
    """The applier's text inside Codex's output (exec format or JSON metadata)."""
    if output.startswith("{"):
        return str(json.loads(output)["output"])
    return output.split("\nOutput:\n", 1)[1]


@pytest.mark.parametrize("key", _golden_params())
def test_golden(key: str, tmp_path: Path) -> None:
    golden = json.loads((CONF / "goldens" / key).read_text("utf-8"))
    case = json.loads((CONF / "cases" / key).read_text("utf-8"))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    materialize(workspace, case.get("files") or {})
    ws = str(workspace)

    for turn in golden["turns"]:
        for call in turn:
            want = golden["outputs"][call["call_id"]]["output"].replace("{ws}", ws)
            patch = _patch_of(call).replace("{ws}", ws)
            try:
                verified = verify_patch(patch, workspace)
            except PatchVerificationError as error:
                assert PREFIX + str(error) == want
                continue
            assert verified.apply() == _summary_of(want)

    assert golden_tree(workspace) == golden["workspace"]


# ---------------------------------------------------------------- all or nothing


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(text.encode("utf-8"))


def snapshot(root: Path) -> dict[str, bytes | None]:
    return {
        path.relative_to(root).as_posix(): None if path.is_dir() else path.read_bytes()
        for path in sorted(root.rglob("*"))
    }


def test_failing_second_hunk_leaves_every_file_as_it_was(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "one\ntwo\n", "b.txt": "three\n", "gone.txt": "bye\n"})
    before = snapshot(tmp_path)
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n@@\n-one\n+ONE\n"
        "*** Update File: b.txt\n@@\n-not there\n+x\n"
        "*** Add File: new.txt\n+new\n*** Delete File: gone.txt\n*** End Patch"
    )
    with pytest.raises(PatchVerificationError) as caught:
        verify_patch(patch, tmp_path)
    assert str(caught.value) == f"Failed to find expected lines in {tmp_path}/b.txt:\nnot there"
    assert snapshot(tmp_path) == before


FAILING_PATCH = (
    "*** Begin Patch\n"
    "*** Add File: added.txt\n+added\n"
    "*** Update File: keep.txt\n@@\n-old\n+new\n"
    "*** Delete File: gone.txt\n"
    "*** Update File: src.txt\n*** Move to: moved/deep/dst.txt\n@@\n-src\n+dst\n"
    "*** Add File: {blocked}\n+never\n"
    "*** End Patch"
)
START = {"keep.txt": "old\n", "gone.txt": "bye\r\n", "src.txt": "src\n"}


def test_write_failure_rolls_back_earlier_changes(tmp_path: Path) -> None:
    write(tmp_path, {**START, "blocker": "a file, not a folder\n"})
    os.chmod(tmp_path / "keep.txt", 0o640)
    before = snapshot(tmp_path)
    verified = verify_patch(FAILING_PATCH.format(blocked="blocker/x.txt"), tmp_path)

    with pytest.raises(PatchApplyError) as caught:
        verified.apply()

    assert str(caught.value) == f"Failed to create parent directories for {tmp_path}/blocker/x.txt"
    assert snapshot(tmp_path) == before
    assert (tmp_path / "keep.txt").stat().st_mode & 0o777 == 0o640


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into read-only folders")
def test_read_only_folder_rolls_back_earlier_changes(tmp_path: Path) -> None:
    write(tmp_path, START)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        before = snapshot(tmp_path)
        verified = verify_patch(FAILING_PATCH.format(blocked="locked/x.txt"), tmp_path)
        with pytest.raises(PatchApplyError) as caught:
            verified.apply()
        assert str(caught.value) == f"Failed to write file {tmp_path}/locked/x.txt"
        assert snapshot(tmp_path) == before
    finally:
        locked.chmod(0o755)


def test_summary_lists_added_then_modified_then_deleted(tmp_path: Path) -> None:
    write(tmp_path, {"d.txt": "d\n", "m.txt": "m\n", "r.txt": "r\n"})
    patch = (
        "*** Begin Patch\n*** Delete File: d.txt\n*** Update File: m.txt\n@@\n-m\n+M\n"
        "*** Add File: a1.txt\n+a\n*** Update File: r.txt\n*** Move to: sub/r2.txt\n@@\n-r\n+R\n"
        "*** Add File: a2.txt\n+b\n*** End Patch"
    )
    verified = verify_patch(patch, tmp_path)

    summary = verified.apply()

    assert summary == (
        "Success. Updated the following files:\n"
        "A a1.txt\nA a2.txt\nM m.txt\nM sub/r2.txt\nD d.txt\n"
    )
    assert snapshot(tmp_path) == {
        "a1.txt": b"a\n",
        "a2.txt": b"b\n",
        "m.txt": b"M\n",
        "sub": None,
        "sub/r2.txt": b"R\n",
    }


# ---------------------------------------------------------------- what verification reports


def test_changes_diff_and_touched_paths(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "1\n2\n3\n4\n5\n", "old.txt": "x\n", "gone.txt": "g\n"})
    patch = (
        "  <<'EOF'\n*** Begin Patch\n*** Update File: a.txt\n@@\n 3\n-4\n+four\n"
        "*** Update File: old.txt\n*** Move to: new/name.txt\n@@\n-x\n+y\n"
        "*** Delete File: gone.txt\n*** Add File: /abs/elsewhere.txt\n+e\n*** End Patch\nEOF\n"
    )
    verified = verify_patch(patch, tmp_path)

    assert verified.patch == patch.strip().split("\n", 1)[1].rsplit("\n", 1)[0]
    assert verified.touched_paths == [
        tmp_path / "a.txt",
        tmp_path / "old.txt",
        tmp_path / "new" / "name.txt",
        tmp_path / "gone.txt",
        Path("/abs/elsewhere.txt"),
    ]
    update, move, delete, add = verified.changes
    assert (update.kind, update.old_content, update.new_content) == (
        "update",
        "1\n2\n3\n4\n5\n",
        "1\n2\n3\nfour\n5\n",
    )
    assert update.unified_diff == "@@ -3,3 +3,3 @@\n 3\n-4\n+four\n 5\n"
    assert (move.move_path, move.patch_move_path) == (tmp_path / "new" / "name.txt", "new/name.txt")
    assert (delete.kind, delete.old_content, delete.new_content) == ("delete", "g\n", None)
    assert (add.kind, add.path, add.patch_path) == (
        "add",
        Path("/abs/elsewhere.txt"),
        "/abs/elsewhere.txt",
    )
    assert snapshot(tmp_path) == {
        "a.txt": b"1\n2\n3\n4\n5\n",
        "gone.txt": b"g\n",
        "old.txt": b"x\n",
    }


@pytest.mark.parametrize(
    ("files", "patch", "message"),
    [
        pytest.param(
            {"dup.txt": "a\n"},
            "*** Update File: dup.txt\n@@\n-a\n+b\n*** Delete File: ./dup.txt",
            "invalid patch: multiple operations target {ws}/dup.txt",
            id="same-path-spelled-twice",
        ),
        pytest.param(
            {},
            "*** Update File: missing.txt\n@@\n-a\n+b\n*** Add File: x/../n.txt\n+1\n"
            "*** Add File: n.txt\n+2",
            "invalid patch: multiple operations target {ws}/n.txt",
            id="duplicates-found-before-reading-files",
        ),
        pytest.param(
            {"dir/f.txt": "x\n"},
            "*** Delete File: dir",
            "Failed to read {ws}/dir: Is a directory (os error 21)",
            id="delete-directory",
        ),
        pytest.param(
            {"bin.dat": "\udcff"},
            "*** Update File: bin.dat\n@@\n-a\n+b",
            "Failed to read file to update {ws}/bin.dat: stream did not contain valid UTF-8",
            id="not-utf8",
        ),
        pytest.param(
            {"f.txt": "a\n"},
            "*** Update File: f.txt\n@@ class Missing\n-a\n+b",
            "Failed to find context 'class Missing' in {ws}/f.txt",
            id="context-line-missing",
        ),
        pytest.param(
            {},
            "*** Update File: ../outside/x.txt\n@@\n-a\n+b",
            "Failed to read file to update {parent}/outside/x.txt: "
            "No such file or directory (os error 2)",
            id="parent-path-normalized",
        ),
    ],
)
def test_verification_errors(
    tmp_path: Path, files: dict[str, str], patch: str, message: str
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    for name, text in files.items():
        (workspace / name).parent.mkdir(parents=True, exist_ok=True)
        (workspace / name).write_bytes(text.encode("utf-8", "surrogateescape"))
    before = snapshot(tmp_path)

    with pytest.raises(PatchVerificationError) as caught:
        verify_patch(f"*** Begin Patch\n{patch}\n*** End Patch", workspace)

    assert str(caught.value) == message.format(ws=workspace, parent=tmp_path)
    assert snapshot(tmp_path) == before


def test_crlf_file_keeps_its_line_endings_and_context_lines(tmp_path: Path) -> None:
    write(tmp_path, {"c.txt": "  one\r\ntwo\r\nthree\r\n\r\n"})
    patch = "*** Begin Patch\n*** Update File: c.txt\n@@\n one\n-two\n+TWO\n+2b\n*** End Patch"

    verify_patch(patch, tmp_path).apply()

    assert (tmp_path / "c.txt").read_bytes() == b"  one\r\nTWO\r\n2b\r\nthree\r\n\r\n"


def test_empty_patch_is_reported_as_empty(tmp_path: Path) -> None:
    verified = verify_patch("*** Begin Patch\n*** End Patch", tmp_path)
    assert verified.is_empty
    assert verified.touched_paths == []
    with pytest.raises(PatchApplyError, match=r"^No files were modified\.$"):
        verified.apply()


def test_move_then_update_of_the_destination_applies_in_order(tmp_path: Path) -> None:
    write(tmp_path, {"a.txt": "a\n", "b.txt": "b\n"})
    patch = (
        "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n-a\n+A\n"
        "*** Update File: b.txt\n@@\n-b\n+B\n*** End Patch"
    )
    verified = verify_patch(patch, tmp_path)

    with pytest.raises(PatchApplyError) as caught:
        verified.apply()

    assert str(caught.value) == f"Failed to find expected lines in {tmp_path}/b.txt:\nb"
    assert snapshot(tmp_path) == {"a.txt": b"a\n", "b.txt": b"b\n"}
