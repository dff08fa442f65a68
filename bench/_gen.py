"""Benchmark data, generated fast into a scratch folder.

The many-small-files tree is written with bare ``os.open``/``os.write`` calls (no Python
file objects); the big text file is one block of fixed-width lines built once and
written over and over with large ``os.write`` calls, so a gigabyte takes about a second.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

NEEDLE = "bench_needle_7f3a"
LINE_WIDTH = 64  # bytes per line of the big file, newline included
BLOCK_LINES = 1 << 14  # lines per written block: 16384 x 64 bytes = 1 MiB


@dataclass(frozen=True)
class Tree:
    root: Path
    files: int
    matching: int


@dataclass(frozen=True)
class TextFile:
    path: Path
    lines: int

    def line(self, number: int) -> str:
        """The text of 1-based line ``number`` (without its newline)."""
        return _line_text((number - 1) % BLOCK_LINES)


def make_tree(root: Path, files: int, match_every: int = 50, per_dir: int = 200) -> Tree:
    """``files`` small files spread over folders of ``per_dir``; every ``match_every``-th
    one contains :data:`NEEDLE`."""
    root.mkdir(parents=True, exist_ok=True)
    plain = b"".join(b"def function_%d(x):\n    return x * %d\n" % (i, i) for i in range(8))
    hit = plain + f"# {NEEDLE}\n".encode()
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    matching = 0
    for d in range((files + per_dir - 1) // per_dir):
        folder = root / f"pkg{d:04d}"
        folder.mkdir()
        prefix = str(folder) + os.sep
        for i in range(d * per_dir, min(files, (d + 1) * per_dir)):
            is_hit = i % match_every == 0
            matching += is_hit
            fd = os.open(f"{prefix}mod{i:06d}.py", flags, 0o644)
            try:
                os.write(fd, hit if is_hit else plain)
            finally:
                os.close(fd)
    return Tree(root, files, matching)


def _line_text(index: int) -> str:
    head = f"line {index:05d} of a block: "
    return head + "x" * (LINE_WIDTH - 1 - len(head))


def make_text_file(path: Path, size_bytes: int) -> TextFile:
    """A file of about ``size_bytes`` (rounded down to whole 1 MiB blocks, at least one)
    made of 64-byte lines that repeat every :data:`BLOCK_LINES` lines."""
    block = "".join(_line_text(i) + "\n" for i in range(BLOCK_LINES)).encode()
    if len(block) != LINE_WIDTH * BLOCK_LINES:
        raise RuntimeError("line template does not fit LINE_WIDTH")
    blocks = max(1, size_bytes // len(block))
    per_write = 16  # 16 MiB per os.write
    chunk = block * min(per_write, blocks)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        left = blocks
        while left:
            n = min(per_write, left)
            data = memoryview(chunk)[: n * len(block)]
            while data:
                written = os.write(fd, data)
                data = data[written:]
            left -= n
    finally:
        os.close(fd)
    return TextFile(path, blocks * BLOCK_LINES)


def scratch_parent(quick: bool) -> str | None:
    """Where to generate the data: a RAM-backed folder when one has room (creating and
    deleting 50,000 files on a slow disk takes minutes, and disk writeback adds noise),
    else the system's temporary folder (``None``)."""
    need = (512 << 20) if quick else (3 << 30)
    shm = "/dev/shm"
    try:
        room = shutil.disk_usage(shm).free
        ram = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None
    if room >= need and ram >= 2 * need and os.access(shm, os.W_OK):
        return shm
    return None
