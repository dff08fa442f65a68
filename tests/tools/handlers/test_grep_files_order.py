"""grep_files orders files exactly as ``rg --sortr=modified`` (what Codex runs) does.

Random trees with many equal modification times, nested folders, symlinks, hidden and
ignored files, binary files and awkward names are searched twice: by our handler
(ripgrep unsorted, then our own ordering) and by real ripgrep with Codex's arguments.
The outputs must be identical, for several patterns, globs, paths and limits.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_magics.errors import RespondToModel
from agent_magics.tools.context import FunctionPayload, SessionServices, ToolInvocation, TurnContext
from agent_magics.tools.handlers.grep_files import GrepFilesHandler, join_path, order_like_rg
from agent_magics.tools.handlers.ripgrep import find_rg

RG = find_rg()
pytestmark = pytest.mark.skipif(RG is None, reason="ripgrep is not installed")
T0 = 1_700_000_000_000_000_000
# Few distinct times, so most files tie; two differ by a single nanosecond.
TIMES = [T0, T0, T0, T0 + 1, T0 - 1_000_000_000, T0 + 5_000_000_000]
CONTENTS = [b"needle\n", b"hay\n", b"needle and hay\n", b"x\x00needle\n", b"", b"NEEDLE\n"]
NAMES = ["a", "b", "Z", "m.txt", "n.py", "é.txt", ".hidden", "spa ce", "new\nline", "q.md"]


def _name(rnd: random.Random) -> bytes:
    pick = rnd.random()
    if pick < 0.04:
        return b"bad\xff" + str(rnd.randrange(99)).encode()  # not UTF-8
    base = rnd.choice(NAMES)
    return f"{base}{rnd.randrange(1000)}".encode() if pick < 0.9 else base.encode()


def make_tree(root: Path, seed: int) -> None:
    """A tree where most matching files share a modification time."""
    rnd = random.Random(seed)
    base = bytes(root)
    dirs = [base]
    files: list[bytes] = []
    for _ in range(rnd.randrange(60, 160)):
        parent = rnd.choice(dirs)
        path = parent + b"/" + _name(rnd)
        if os.path.lexists(path):
            continue
        kind = rnd.random()
        if kind < 0.18 and len(dirs) < 25:
            os.mkdir(path)
            dirs.append(path)
        elif kind < 0.22 and files:
            os.symlink(rnd.choice(files), path)  # ripgrep does not follow these
        elif kind < 0.24:
            os.symlink(rnd.choice(dirs), path)
        else:
            with open(path, "wb") as fh:
                fh.write(rnd.choice(CONTENTS))
            files.append(path)
    if seed % 3 == 0:  # one wide folder: many ties whose order only its listing gives
        wide = base + b"/wide"
        os.mkdir(wide)
        for _i in range(rnd.randrange(150, 300)):
            with open(wide + b"/w%d.txt" % rnd.randrange(10**6), "wb") as fh:
                fh.write(rnd.choice(CONTENTS[:3]))
    (root / ".ignore").write_text("*.md\n")
    for dirpath, _, filenames in os.walk(base):
        for name in filenames:
            t = rnd.choice(TIMES)
            os.utime(os.path.join(dirpath, name), ns=(t, t), follow_symlinks=False)


def codex_output(cwd: Path, args: dict[str, Any]) -> tuple[str, bool]:
    """What Codex answers: ripgrep sorts, then lines are filtered and cut to the limit."""
    path = str(cwd) if args.get("path") is None else join_path(str(cwd), args["path"])
    argv = [str(RG), "--files-with-matches", "--sortr=modified", "--regexp", args["pattern"]]
    argv += ["--no-messages"] + (["--glob", args["include"]] if args.get("include") else [])
    proc = subprocess.run([*argv, "--", path], cwd=cwd, stdout=subprocess.PIPE, check=False)
    assert proc.returncode in (0, 1)
    lines: list[str] = []
    for raw in proc.stdout.split(b"\n"):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if text:
            lines.append(text)
    lines = lines[: args.get("limit", 100)]
    return ("\n".join(lines), True) if lines else ("No matches found.", False)


async def our_output(cwd: Path, args: dict[str, Any]) -> tuple[str, bool]:
    inv = ToolInvocation(
        "c",
        "grep_files",
        FunctionPayload(json.dumps(args)),
        TurnContext(cwd=cwd),
        SessionServices(),
    )
    try:
        out = await GrepFilesHandler().handle(inv)
    except RespondToModel as exc:
        return exc.message, False
    return out.text, out.success


SHM = Path("/dev/shm")  # tmpfs lists a folder in yet another order than disk filesystems
BASES = [
    pytest.param(None, id="tmp_path"),
    pytest.param(
        SHM,
        id="tmpfs",
        marks=pytest.mark.skipif(not os.access(SHM, os.W_OK), reason="no writable tmpfs"),
    ),
]


@pytest.fixture(params=BASES)
def base(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    if request.param is None:
        yield tmp_path
        return
    with tempfile.TemporaryDirectory(dir=request.param) as folder:
        yield Path(folder)


ARGUMENTS = [
    pytest.param({"pattern": "needle"}, id="plain"),
    pytest.param({"pattern": "needle|hay", "limit": 7}, id="alternation-limit-7"),
    pytest.param({"pattern": "(?i)needle", "limit": 1}, id="limit-1"),
    pytest.param({"pattern": "needle", "include": "*.txt", "limit": 2000}, id="glob"),
    pytest.param({"pattern": "hay", "include": "!*.txt"}, id="negated-glob"),
    pytest.param({"pattern": "e", "limit": 3}, id="limit-3"),
    pytest.param({"pattern": "needle", "path": "./"}, id="dot-slash-path"),
    pytest.param({"pattern": "no such text anywhere"}, id="no-match"),
]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("args", ARGUMENTS)
async def test_same_output_as_sorting_ripgrep(base: Path, seed: int, args: dict[str, Any]) -> None:
    root = base / "ws"
    root.mkdir()
    make_tree(root, seed)
    assert await our_output(root, args) == codex_output(root, args)


async def test_subfolder_paths_spelled_oddly(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    make_tree(root, 3)
    (root / "link").symlink_to(root / "wide")  # a symlinked search root is followed
    for path in ["wide", "./wide/", "wide//", str(root / "wide") + "/.", "link", "link/"]:
        args = {"pattern": "needle", "path": path, "limit": 500}
        assert await our_output(root, args) == codex_output(root, args), path


async def test_single_file_path(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("needle\n")
    args = {"pattern": "needle", "path": "f.txt"}
    assert await our_output(tmp_path, args) == (f"{tmp_path}/f.txt", True)


def test_rg_walk_is_listing_order(tmp_path: Path) -> None:
    """The premise of the tie-break: ripgrep's one-thread walk is a depth-first walk
    visiting each folder's entries in the order the OS lists them."""
    make_tree(tmp_path, 4)

    def walk(folder: str) -> list[str]:
        found: list[str] = []
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.name.startswith(".") or entry.name.endswith(".md"):
                    continue  # hidden, or in .ignore
                if entry.is_dir(follow_symlinks=False):
                    found += walk(entry.path)
                elif entry.is_file(follow_symlinks=False):
                    found.append(entry.path)
        return found

    argv = [str(RG), "--files", "--null", "-j1", str(tmp_path)]
    listed = subprocess.run(argv, stdout=subprocess.PIPE, check=True).stdout
    assert [os.fsdecode(p) for p in listed.split(b"\0") if p] == walk(str(tmp_path))


def test_unreadable_times_come_first(tmp_path: Path) -> None:
    # ripgrep ranks a failed metadata call after every time, then reverses the order.
    for name, t in [("old", T0), ("new", T0 + 1)]:
        (tmp_path / name).write_text("x")
        os.utime(tmp_path / name, ns=(t, t))
    paths = [os.fsencode(tmp_path / n) for n in ["old", "gone2", "new", "gone1"]]
    got = order_like_rg(paths, str(tmp_path), 10)
    assert [Path(os.fsdecode(p)).name for p in got] == ["gone1", "gone2", "new", "old"]


def test_stops_once_the_limit_is_covered(tmp_path: Path) -> None:
    for i in range(5):
        (tmp_path / f"f{i}").write_text("x")
        os.utime(tmp_path / f"f{i}", ns=(T0 + i, T0 + i))
    paths = [os.fsencode(tmp_path / f"f{i}") for i in range(5)]
    # A name holding a newline counts as the two lines Codex would see.
    weird = os.fsencode(tmp_path / "a\nb")
    (tmp_path / "a\nb").write_text("x")
    os.utime(weird, ns=(T0 + 9, T0 + 9))
    got = order_like_rg([*paths, weird], str(tmp_path), 3)
    assert got == [weird, paths[4]]
