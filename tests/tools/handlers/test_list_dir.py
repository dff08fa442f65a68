"""list_dir: Codex's unit vectors, then names, kinds, sorting and error edge cases."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest

from agent_magics.tools.handlers.list_dir import ListDirHandler
from tests.helpers.tools import assert_codex_parameters, call_tool, vectors


async def call(cwd: Path, arguments: str | dict[str, Any]) -> tuple[str, bool]:
    return await call_tool(ListDirHandler(), cwd, arguments)


def _vectors(section: str) -> list[Any]:
    return vectors("list_dir_cases", section)


def build_tree(root: Path, tree: list[dict[str, Any]]) -> None:
    for item in tree:
        path = root / item["path"]
        if item["type"] == "dir":
            path.mkdir(parents=True, exist_ok=True)
        elif item["type"] == "file":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(item.get("content", ""))
    for item in tree:
        if item["type"] == "symlink":
            (root / item["path"]).symlink_to(item["target"])


@pytest.mark.parametrize("case", _vectors("cases"))
async def test_vector(case: dict[str, Any], tmp_path: Path) -> None:
    root = tmp_path / "listed"
    root.mkdir()
    build_tree(root, case["tree"])
    text, success = await call(tmp_path, {"dir_path": str(root), **case["arguments"]})
    expected = case["expected"]
    if "error" in expected:
        assert (text, success) == (expected["error"], False)
    else:
        want = expected["output_template"].replace("{dir_path}", str(root))
        assert (text, success) == (want, True)
        assert text.split("\n")[1:] == expected["entry_lines"]


@pytest.mark.parametrize("case", _vectors("handler_validation_cases"))
async def test_validation_vector(case: dict[str, Any], tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x")
    path = {
        "<ABS>": str(tmp_path),
        "<ABS_NONEXISTENT>": str(tmp_path / "missing"),
        "<ABS_FILE>": str(tmp_path / "a-file"),
    }.get(case["dir_path"], case["dir_path"])
    text, success = await call(tmp_path, {"dir_path": path, **case["arguments"]})
    expected = case["expected"]
    if "error" in expected:
        assert text == expected["error"]
    else:
        assert text.startswith(expected["error_prefix"])
    assert not success


@pytest.mark.parametrize(
    ("suffix_path", "expected_header"),
    [
        pytest.param("", "{root}", id="plain"),
        pytest.param("/", "{root}/", id="trailing-slash-kept"),
        pytest.param("/./", "{root}/./", id="dot-kept"),
    ],
)
async def test_header_echoes_path_as_given(
    tmp_path: Path, suffix_path: str, expected_header: str
) -> None:
    (tmp_path / "f").write_text("")
    text, _ = await call(tmp_path, {"dir_path": f"{tmp_path}{suffix_path}"})
    header = expected_header.replace("{root}", str(tmp_path))
    assert text == f"Absolute path: {header}\nf"


async def test_special_files_and_odd_names(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock"))
        (tmp_path / "dir").mkdir()
        (tmp_path / "dir" / "back\\slash").write_text("")
        (tmp_path / os.fsdecode(b"bad\xffname")).write_text("")
        (tmp_path / "Zeta").write_text("")
        text, success = await call(tmp_path, {"dir_path": str(tmp_path), "depth": 2})
    assert success
    assert text.split("\n")[1:] == [
        "Zeta",
        "bad\ufffdname",
        "dir/",
        "  back\\slash",
        "pipe?",
        "sock?",
    ]


async def test_sort_key_is_cut_at_500_bytes_on_a_character_boundary(tmp_path: Path) -> None:
    # Keys are relative paths cut to 500 bytes. Under a 252-byte folder name, 247 bytes
    # of a child's name remain: "é" at bytes 246-247 is dropped whole from the first
    # child's key, which then sorts before the second child's although "é" > "a".
    folder = "😀" * 63
    first, second = "y" * 246 + "é", "y" * 246 + "azz"
    (tmp_path / folder).mkdir()
    (tmp_path / folder / first).write_text("")
    (tmp_path / folder / second).write_text("")
    text, _ = await call(tmp_path, {"dir_path": str(tmp_path)})
    assert text.split("\n")[1:] == [folder + "/", "  " + first, "  " + second]


async def test_unreadable_subdirectory_fails_the_whole_call(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every directory")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0)
    try:
        text = await call(tmp_path, {"dir_path": str(tmp_path)})
    finally:
        locked.chmod(0o755)
    assert text == ("failed to read directory: Permission denied (os error 13)", False)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param(
            {"dir_path": "/tmp/a\x00b"},
            "failed to read directory: file name contained an unexpected NUL byte",
            id="nul-in-path",
        ),
        pytest.param(
            {"dir_path": "rel", "offset": 0},
            "offset must be a 1-indexed entry number",
            id="offset-checked-before-path",
        ),
        pytest.param(
            {"dir_path": "rel", "limit": 0, "depth": 0},
            "limit must be greater than zero",
            id="limit-before-depth",
        ),
    ],
)
async def test_error_order(tmp_path: Path, arguments: dict[str, Any], expected: str) -> None:
    assert await call(tmp_path, arguments) == (expected, False)


@pytest.mark.parametrize(
    ("raw", "names"),
    [
        pytest.param("{}", ["dir_path"], id="missing-dir-path"),
        pytest.param('{"dir_path": "/", "depth": -1}', [], id="negative-depth"),
        pytest.param('{"dir_path": "/", "limit": 2.5}', [], id="fractional-limit"),
    ],
)
async def test_argument_errors(tmp_path: Path, raw: str, names: list[str]) -> None:
    text, success = await call(tmp_path, raw)
    assert text.startswith("failed to parse function arguments: ")
    assert all(f"`{n}`" in text for n in names)
    assert not success


def test_spec_has_codex_parameters() -> None:
    assert_codex_parameters(ListDirHandler(), "list_dir")


def _codex_listing(root: Path, depth: int) -> list[str]:
    """Codex's listing, written plainly: every entry within ``depth`` levels, keyed by
    its relative path (lossy UTF-8, ``\\`` as ``/``, cut to 500 bytes), sorted stably
    in the order read (breadth first, folders in key order, entries as listed)."""
    found: list[tuple[str, str]] = []
    queue = [(os.fsencode(root), b"", 0)]
    while queue:
        folder, prefix, level = queue.pop(0)
        below = []
        for item in os.scandir(folder):
            rel = prefix + item.name
            key = rel.decode("utf-8", "replace").replace("\\", "/")
            key = key.encode()[:500].decode("utf-8", "ignore")
            kind = "@" if item.is_symlink() else "/" if item.is_dir() else ""
            found.append((key, "  " * level + item.name.decode("utf-8", "replace") + kind))
            if kind == "/" and level + 1 < depth:
                below.append((key, item.path, rel + b"/"))
        below.sort(key=lambda b: b[0])
        queue += [(path, rel, level + 1) for _, path, rel in below]
    found.sort(key=lambda f: f[0])
    return [line for _, line in found]


async def test_pages_of_a_big_tree_match_codex_listing(tmp_path: Path) -> None:
    """More entries than are read at a time, names that are not UTF-8 (``\\xfe`` and
    ``\\xff`` both become U+FFFD: equal keys), non-ASCII and backslashed names, keys
    cut inside deep paths (equal keys again), and pages that start and end inside runs
    of equal keys."""
    root = tmp_path / "big"
    odd = [b"x\xfe", b"x\xff", "é".encode(), b"a\\b", b"a-b", "😀".encode() * 60]
    deep = root / ("é" * 100) / ("😀" * 62)  # 200 + 1 + 248 + 1 bytes: keys reach 500
    for folder in [root, root / "a", root / "a" / ("😀" * 61), deep]:
        folder.mkdir(parents=True)
        for name in odd:
            for suffix in (b"", b".t"):
                (Path(os.fsdecode(os.fsencode(folder) + b"/" + name + suffix))).write_text("")
    for i in range(600):
        (root / "a" / f"n{i % 7}{i:04d}").write_text("")
    (root / "a" / "link").symlink_to("missing")
    want = _codex_listing(root, 3)
    assert len(want) > 600
    for offset, limit in [(1, 25), (1, 2000), (3, 4), (600, 9), (len(want) - 2, 5)]:
        text, success = await call(
            tmp_path, {"dir_path": str(root), "offset": offset, "limit": limit, "depth": 3}
        )
        shown = want[offset - 1 : offset - 1 + limit]
        more = [f"More than {len(shown)} entries found"] if offset - 1 + limit < len(want) else []
        assert success
        assert text.split("\n")[1:] == shown + more, (offset, limit)
