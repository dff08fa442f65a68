"""read_file: Codex's unit vectors, then streaming, line-model and argument edge cases."""

from __future__ import annotations

import base64
import os
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from agent_magics.errors import RespondToModel
from agent_magics.tools.context import CustomPayload, SessionServices, ToolInvocation, TurnContext
from agent_magics.tools.handlers.read_file import (
    DEFAULT_LIMIT,
    MAX_LINE_BYTES,
    ReadFileHandler,
    read_slice,
)
from tests.helpers.tools import assert_codex_parameters, call_tool, vectors


async def call(cwd: Path, arguments: str | dict[str, Any]) -> tuple[str, bool]:
    return await call_tool(ReadFileHandler(), cwd, arguments)


def _vectors(section: str) -> list[Any]:
    return vectors("read_file_cases", section)


def _content(case: dict[str, Any]) -> bytes | None:
    if case.get("file_content_base64") is not None:
        return base64.b64decode(case["file_content_base64"])
    if case.get("file_content") is None:
        return None
    return str(case["file_content"]).encode("utf-8")


def _check(expected: dict[str, Any], text: str, success: bool) -> None:
    if "output" in expected:
        assert (text, success) == (expected["output"], True)
    elif "error" in expected:
        assert (text, success) == (expected["error"], False)
    else:
        assert text.startswith(expected["error_prefix"])
        assert not success


@pytest.mark.parametrize("case", _vectors("cases"))
async def test_vector(case: dict[str, Any], tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    target.write_bytes(_content(case) or b"")
    text, success = await call(tmp_path, {"file_path": str(target), **case["arguments"]})
    _check(case["expected"], text, success)


@pytest.mark.parametrize("case", _vectors("handler_validation_cases"))
async def test_validation_vector(case: dict[str, Any], tmp_path: Path) -> None:
    target = tmp_path / "file.txt"
    content = _content(case)
    if content is not None:
        target.write_bytes(content)
    path = {
        "<ABS>": str(target),
        "<ABS_NONEXISTENT>": str(tmp_path / "missing.txt"),
    }.get(case["file_path"], case["file_path"])
    if case["arguments"] is None:
        arguments: str | dict[str, Any] = "{}"
    else:
        arguments = {"file_path": path, **case["arguments"]}
    text, success = await call(tmp_path, arguments)
    _check(case["expected"], text, success)


def naive_slice(data: bytes, offset: int, limit: int) -> list[str]:
    """An obviously correct (and memory-hungry) rendering of the line model."""
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    else:
        lines[-1] += b"\n"  # mark: the last line had no newline, so its CR stays
    out = []
    for number, raw in enumerate(lines, 1):
        if raw.endswith((b"\n", b"\r")):  # marker of an unterminated line, or a CR to drop
            raw = raw[:-1]
        text = raw.decode("utf-8", "replace").encode()[:MAX_LINE_BYTES]
        if offset <= number < offset + limit:
            out.append(f"L{number}: {text.decode('utf-8', 'ignore')}")
    return out


def _mixed_content() -> bytes:
    """Lines that exercise every rule, at varied lengths so they straddle chunk edges."""
    parts = []
    for i in range(300):
        kind = i % 6
        if kind == 0:
            parts.append(b"plain %d\n" % i)
        elif kind == 1:
            parts.append(b"crlf %d\r\n" % i)
        elif kind == 2:
            parts.append(("é" * (240 + i % 20) + "日" * 3).encode() + b"\n")
        elif kind == 3:
            parts.append(b"bad \xff\xfe \xe6\x97 bytes\n")
        elif kind == 4:
            parts.append(b"\n")
        else:
            parts.append(b"cr\rin the middle\r\r\n")
    parts.append(b"last line, no newline\r")
    return b"".join(parts)


@pytest.mark.parametrize(
    ("chunk", "offset", "limit"),
    [
        pytest.param(1, 1, 1000, id="one-byte-chunks"),
        pytest.param(2, 7, 50, id="two-byte-chunks"),
        pytest.param(3, 100, 201, id="three-byte-chunks-to-eof"),
        pytest.param(7, 299, 5, id="tail-with-unterminated-line"),
        pytest.param(64, 2, 3, id="small-window"),
        pytest.param(499, 150, 100, id="chunk-below-line-cut"),
        pytest.param(1 << 20, 1, DEFAULT_LIMIT, id="default-chunk"),
    ],
)
def test_slice_matches_line_model_across_chunk_edges(
    tmp_path: Path, chunk: int, offset: int, limit: int
) -> None:
    data = _mixed_content()
    target = tmp_path / "mixed.txt"
    target.write_bytes(data)
    got = read_slice(str(target), offset, limit, chunk)
    assert got == naive_slice(data, offset, limit)


@pytest.mark.parametrize("chunk", [pytest.param(n, id=f"chunk-{n}") for n in (1, 2, 3, 4, 5)])
def test_crlf_split_between_chunks(tmp_path: Path, chunk: int) -> None:
    target = tmp_path / "crlf.txt"
    target.write_bytes(b"abc\r\nde\r\n\r\nf")
    assert read_slice(str(target), 1, 10, chunk) == ["L1: abc", "L2: de", "L3: ", "L4: f"]


def test_multibyte_char_at_the_cut(tmp_path: Path) -> None:
    # 498 ASCII bytes, then a 3-byte character that would end at byte 501.
    target = tmp_path / "cut.txt"
    target.write_bytes(b"x" * 498 + "日".encode() + b"tail\n")
    (line,) = read_slice(str(target), 1, 1, 256)
    assert line == "L1: " + "x" * 498


def test_invalid_bytes_count_towards_the_cut(tmp_path: Path) -> None:
    # Each invalid byte becomes U+FFFD, three bytes once decoded: 166 fit in 500 bytes.
    target = tmp_path / "bad.bin"
    target.write_bytes(b"\xff" * 400 + b"\n")
    (line,) = read_slice(str(target), 1, 1)
    assert line == "L1: " + "\ufffd" * 166


def test_huge_line_is_streamed_with_bounded_memory(tmp_path: Path) -> None:
    # A sparse 64 MiB run of NUL bytes without a newline, then two short lines.
    target = tmp_path / "sparse.bin"
    with target.open("wb") as f:
        f.truncate(64 << 20)
        f.seek(0, os.SEEK_END)
        f.write(b"\nsecond\nthird\n")
    tracemalloc.start()
    try:
        first = read_slice(str(target), 1, 1)
        later = read_slice(str(target), 2, 5)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert first == ["L1: " + "\x00" * MAX_LINE_BYTES]
    assert later == ["L2: second", "L3: third"]
    assert peak < 8 << 20


def test_deep_offset_in_a_moderate_file(tmp_path: Path) -> None:
    target = tmp_path / "numbers.txt"
    target.write_bytes(b"".join(b"row %07d\n" % i for i in range(1, 400_001)))
    lines = read_slice(str(target), 345_678, 3)
    assert lines == ["L345678: row 0345678", "L345679: row 0345679", "L345680: row 0345680"]
    with pytest.raises(RespondToModel, match=r"^offset exceeds file length$"):
        read_slice(str(target), 400_002, 1)
    assert read_slice(str(target), 400_000, 9) == ["L400000: row 0400000"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        pytest.param({"offset": 2, "limit": 1}, "L2: b", id="slice"),
        pytest.param({"mode": "indentation", "indentation": None}, "L1: a\nL2: b", id="null-opts"),
        pytest.param({"unknown": 1, "limit": 1}, "L1: a", id="unknown-key-ignored"),
        pytest.param(
            {"mode": "indentation", "indentation": {"bogus": True}},
            "L1: a\nL2: b",
            id="unknown-indentation-key-ignored",
        ),
        pytest.param(
            {"mode": "slice", "indentation": {"anchor_line": 0}},
            "L1: a\nL2: b",
            id="indentation-ignored-in-slice-mode",
        ),
    ],
)
async def test_argument_forms(tmp_path: Path, arguments: dict[str, Any], expected: str) -> None:
    target = tmp_path / "ab.txt"
    target.write_text("a\nb\n")
    assert await call(tmp_path, {"file_path": str(target), **arguments}) == (expected, True)


@pytest.mark.parametrize(
    ("arguments", "names"),
    [
        pytest.param({"offset": 1.5}, ["1.5"], id="fractional-offset"),
        pytest.param({"limit": "3"}, [], id="string-limit"),
        pytest.param({"mode": "bogus"}, ["bogus", "slice", "indentation"], id="bad-mode"),
        pytest.param({"indentation": {"max_levels": -1}}, [], id="negative-max-levels"),
    ],
)
async def test_argument_errors(tmp_path: Path, arguments: dict[str, Any], names: list[str]) -> None:
    text, success = await call(tmp_path, {"file_path": str(tmp_path / "x"), **arguments})
    assert text.startswith("failed to parse function arguments: ")
    assert all(f"`{n}`" in text for n in names)
    assert not success


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        pytest.param("dir", "failed to read file: Is a directory (os error 21)", id="directory"),
        pytest.param(
            "missing", "failed to read file: No such file or directory (os error 2)", id="missing"
        ),
        pytest.param(
            "nul", "failed to read file: file name contained an unexpected NUL byte", id="nul"
        ),
    ],
)
@pytest.mark.parametrize("mode", [pytest.param("slice"), pytest.param("indentation")])
async def test_io_errors(tmp_path: Path, make: str, expected: str, mode: str) -> None:
    path = {"dir": str(tmp_path), "missing": str(tmp_path / "nope"), "nul": "/tmp/a\x00b"}[make]
    assert await call(tmp_path, {"file_path": path, "mode": mode}) == (expected, False)


async def test_relative_path_is_not_resolved(tmp_path: Path) -> None:
    (tmp_path / "here.txt").write_text("x\n")
    text = await call(tmp_path, {"file_path": "here.txt"})
    assert text == ("file_path must be an absolute path", False)


@pytest.mark.parametrize(
    ("content", "arguments", "expected"),
    [
        pytest.param(
            b"def f():\r\n    x = 1\r\n",
            {"offset": 2},
            "L1: def f():\nL2:     x = 1",
            id="crlf",
        ),
        pytest.param("  a\n\u3000\n".encode(), {}, "L1:   a", id="unicode-space-line-is-blank"),
        pytest.param(b"  a\n\x1c\n", {}, "L1:   a\nL2: \x1c", id="info-separator-is-not-blank"),
        pytest.param(
            b"\t\tdeep\n   three\n",
            {"offset": 1, "indentation": {"max_levels": 1}},
            "L1: \t\tdeep",
            id="tab-counts-four",
        ),
        pytest.param(
            b"a\nb\nc\n",
            {"offset": 2, "limit": 5, "indentation": {"max_lines": 1}},
            "L2: b",
            id="max-lines-one",
        ),
    ],
)
async def test_indentation_edges(
    tmp_path: Path, content: bytes, arguments: dict[str, Any], expected: str
) -> None:
    target = tmp_path / "src.txt"
    target.write_bytes(content)
    text = await call(tmp_path, {"file_path": str(target), "mode": "indentation", **arguments})
    assert text == (expected, True)


def test_spec_has_codex_parameters() -> None:
    assert_codex_parameters(ReadFileHandler(), "read_file")


async def test_custom_payload_is_refused(tmp_path: Path) -> None:
    inv = ToolInvocation(
        "c", "read_file", CustomPayload("x"), TurnContext(cwd=tmp_path), SessionServices()
    )
    with pytest.raises(RespondToModel, match="unsupported payload"):
        await ReadFileHandler().handle(inv)
