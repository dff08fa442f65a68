"""The turn's diff and undo, with a real session against the scripted server and real files."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from agent_magics import Session
from agent_magics.events import Event, FileDiff, TurnDiff
from agent_magics.store import scan
from agent_magics.store.diff import ABSENT, FileState, file_diff
from agent_magics.store.paths import sessions_folder, undo_folder
from agent_magics.store.undo import UndoPlan, apply_undo, plan_undo, undo_last_turn
from agent_magics.testing import (
    ScriptedResponsesServer,
    Turn,
    custom_tool_call,
    function_call,
    message,
)
from agent_magics.transcript.markdown import transcript_markdown
from agent_magics.transcript.model import DiffBlock, Transcript
from agent_magics.transcript.turn_diff import turn_diff_html
from tests.helpers.sessions import writing_session
from tests.helpers.undo import PATCH, REVERTED, write_start_files

KEY = "sk-turn-diff-secret-123456789"


def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    write_start_files(ws)
    (ws / "same.txt").write_text("untouched\n")
    (ws / "node_modules").mkdir()
    (ws / "node_modules" / "dep.js").write_text("x\n")
    return ws


SCRIPT: list[Turn] = [
    [custom_tool_call("apply_patch", PATCH, "c1")],
    [
        function_call(
            "exec_command",
            {"cmd": "printf 'two\\n' >> cmd.txt; echo y >> node_modules/dep.js"},
            "c2",
        )
    ],
    [message("changed")],
]


def snapshot(ws: Path) -> dict[str, tuple[bytes, int]]:
    return {
        p.name: (p.read_bytes(), stat.S_IMODE(p.stat().st_mode))
        for p in ws.iterdir()
        if p.is_file()
    }


async def run_changing_turn(ws: Path, server: ScriptedResponsesServer) -> tuple[Session, TurnDiff]:
    session = writing_session(ws, server.base_url, api_key=KEY)
    events: list[Event] = []
    session.subscribe(events.append)
    await session.run_turn("change things")
    diffs = [e for e in events if isinstance(e, TurnDiff)]
    assert len(diffs) == 1
    return session, diffs[0]


async def test_the_turn_diff_has_each_patched_created_deleted_and_command_changed_file(
    tmp_path: Path,
) -> None:
    ws = workspace(tmp_path)
    with ScriptedResponsesServer(SCRIPT) as server:
        session, event = await run_changing_turn(ws, server)
        await session.aclose()
    new_mode = stat.S_IMODE((ws / "new.txt").stat().st_mode)
    assert event.files == (
        FileDiff(
            "cmd.txt",
            "modified",
            "diff --git a/cmd.txt b/cmd.txt\n--- a/cmd.txt\n+++ b/cmd.txt\n"
            "@@ -1 +1,2 @@\n one\n+two\n",
        ),
        FileDiff(
            "gone.txt",
            "deleted",
            "diff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n"
            "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n",
        ),
        FileDiff(
            "keep.py",
            "modified",
            "diff --git a/keep.py b/keep.py\n--- a/keep.py\n+++ b/keep.py\n"
            "@@ -1,2 +1,2 @@\n a = 1\n-b = 2\n+b = 3\n",
        ),
        FileDiff(
            "new.txt",
            "added",
            f"diff --git a/new.txt b/new.txt\nnew file mode 100{new_mode:o}\n"
            "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hello\n",
        ),
    )


async def test_undo_restores_bytes_and_modes_and_the_next_request_says_so(
    tmp_path: Path,
) -> None:
    ws = workspace(tmp_path)
    before = snapshot(ws)
    with ScriptedResponsesServer(SCRIPT) as server:
        session, _ = await run_changing_turn(ws, server)
        last = session.changes.last
        assert last is not None
        plan = plan_undo(last)
        assert plan.refusal is None
        assert [c.shown for c in plan.restore] == ["gone.txt", "keep.py", "new.txt"]
        assert [c.shown for c in plan.asked] == ["cmd.txt"]  # a command changed it
        text = undo_last_turn(session.changes, plan, everything=True)
        assert text == "Restored to their state before the last turn: " + REVERTED.split(": ")[1]
        after = snapshot(ws)
        before.pop("dep.js", None)
        assert after == before
        assert after["keep.py"][1] == 0o755
        assert session.changes.last is None  # a second undo has nothing to do
        await session.run_turn("go on")
        await session.aclose()
    texts = [c.get("text") for i in server.requests[-1]["input"] for c in i.get("content", [])]
    assert texts[-2:] == [REVERTED, "go on"]
    assert REVERTED not in str(server.requests[-2])


async def test_undo_refuses_in_one_sentence_when_a_file_changed_since(tmp_path: Path) -> None:
    ws = workspace(tmp_path)
    with ScriptedResponsesServer(SCRIPT) as server:
        session, _ = await run_changing_turn(ws, server)
        await session.aclose()
    (ws / "keep.py").write_text("a = 1\nb = 3\nc = 4\n")
    (ws / "new.txt").chmod(0o600)  # the mode alone counts too
    changed = snapshot(ws)
    assert session.changes.last is not None
    plan = plan_undo(session.changes.last)
    assert plan.refusal == (
        "Undo refused: keep.py, new.txt changed after the last turn ended, and restoring "
        "would lose that change; nothing was restored."
    )
    assert snapshot(ws) == changed


async def test_undo_cannot_write_outside_the_working_folder_through_a_swapped_symlink(
    tmp_path: Path,
) -> None:
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    (ws / "sub" / "a.py").write_text("old\n")
    patch = "*** Begin Patch\n*** Update File: sub/a.py\n@@\n-old\n+new\n*** End Patch\n"
    script: list[Turn] = [[custom_tool_call("apply_patch", patch, "c1")], [message("ok")]]
    with ScriptedResponsesServer(script) as server:
        session = writing_session(ws, server.base_url, api_key=KEY)
        await session.run_turn("edit")
        await session.aclose()
    outside = tmp_path / "outside"
    (ws / "sub").rename(outside)
    (ws / "sub").symlink_to(outside)  # same content, so only the path betrays it
    last = session.changes.last
    assert last is not None
    assert plan_undo(last).refusal is not None
    # Even past the check, the confined writer keeps the write in the working folder.
    problems = apply_undo(UndoPlan(last, restore=list(last.changes)))
    assert problems == ["sub/a.py could not be restored: Operation not permitted"]
    assert (outside / "a.py").read_text() == "new\n"


async def test_originals_stay_on_disk_in_a_private_folder_without_the_secrets(
    tmp_path: Path,
) -> None:
    ws = workspace(tmp_path)
    (ws / "creds.txt").write_text(f"key={KEY}\n")
    patch = PATCH.replace("*** End Patch", "*** Delete File: creds.txt\n*** End Patch")
    script: list[Turn] = [[custom_tool_call("apply_patch", patch, "c1")], [message("ok")]]
    events: list[Event] = []
    with ScriptedResponsesServer(script) as server:
        session = writing_session(ws, server.base_url, api_key=KEY)
        session.subscribe(events.append)
        await session.run_turn("edit")
        await session.aclose()
    folder = ws / ".agent_magics" / "sessions" / f"{session.thread_id}.undo"
    assert folder == undo_folder(session.config, session.thread_id)
    assert folder.parent == sessions_folder(session.config)  # beside the session files
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "turn-1").stat().st_mode) == 0o700
    kept = sorted(p.read_bytes() for p in (folder / "turn-1").glob("*.orig"))
    assert kept == [b"a = 1\nb = 2\n", b"bye\n"]  # creds.txt holds the key: memory only
    for path in folder.rglob("*"):
        assert path.is_dir() or KEY.encode() not in path.read_bytes()
    assert KEY not in repr([e for e in events if isinstance(e, TurnDiff)])
    # The secret-holding file still comes back: undo uses what was kept in memory.
    assert session.changes.last is not None
    undo_last_turn(session.changes, plan_undo(session.changes.last))
    assert (ws / "creds.txt").read_text() == f"key={KEY}\n"


async def test_a_turn_that_changes_nothing_emits_no_diff_and_has_nothing_to_undo(
    tmp_path: Path,
) -> None:
    ws = workspace(tmp_path)
    script: list[Turn] = [
        [function_call("exec_command", {"cmd": "cat cmd.txt"}, "c1")],
        [message("ok")],
    ]
    with ScriptedResponsesServer(script) as server:
        session = writing_session(ws, server.base_url, api_key=KEY)
        events: list[Event] = []
        session.subscribe(events.append)
        await session.run_turn("look")
        await session.aclose()
    assert not [e for e in events if isinstance(e, TurnDiff)]
    assert session.changes.last is not None
    assert plan_undo(session.changes.last).refusal == (
        "Nothing to undo: the last turn changed no file that can be restored."
    )


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        pytest.param(
            FileState(b"\x00\x01", 0o644),
            FileState(b"\x00\x02", 0o644),
            "diff --git a/f b/f\nBinary file f modified\n",
            id="binary",
        ),
        pytest.param(
            FileState(b"x", 0o644),
            FileState(b"x", 0o755),
            "diff --git a/f b/f\nold mode 100644\nnew mode 100755\n",
            id="mode-only",
        ),
        pytest.param(
            FileState(b"a\nb", 0o644),
            FileState(b"a\nc", 0o644),
            "diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n"
            "\\ No newline at end of file\n+c\n\\ No newline at end of file\n",
            id="no-final-newline",
        ),
        pytest.param(
            None,
            FileState(b"big", 0o644),
            "diff --git a/f b/f\nf: changed; it was too large to keep, so no diff\n",
            id="not-kept",
        ),
    ],
)
def test_diffs_of_binary_mode_only_unterminated_and_unkept_files(
    before: FileState | None, after: FileState, expected: str
) -> None:
    assert file_diff("f", before, after)[1] == expected


def test_a_long_diff_is_cut_with_a_count_of_what_was_left_out() -> None:
    after = FileState("".join(f"line {i}\n" for i in range(20_000)).encode(), 0o644)
    status, diff = file_diff("f", ABSENT, after)
    assert status == "added"
    assert len(diff) < 41_000
    kept = diff.count("\n") - 1
    assert diff.endswith(f"... diff cut: {20_000 + 5 - kept} more lines\n")


def test_the_scan_skips_heavy_folders_and_stops_at_its_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "x.js").write_text("x")
    for i in range(5):
        (tmp_path / f"f{i}").write_text(str(i))
    found = scan.scan_folder(tmp_path, keep=True)
    assert sorted(Path(p).name for p in found.stats) == ["f0", "f1", "f2", "f3", "f4"]
    assert found.complete and len(found.kept) == 5
    monkeypatch.setattr(scan, "MAX_SCAN_FILES", 3)
    cut_short = scan.scan_folder(tmp_path, keep=False)
    assert len(cut_short.stats) == 3 and not cut_short.complete
    assert not cut_short.covers(tmp_path / "f9")


DIFFS = (
    FileDiff("a.py", "modified", "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n-x\n+y\n+z\n"),
    FileDiff("b`s.txt", "deleted", "--- a/b`s.txt\n+++ /dev/null\n-```\n"),
)


def test_the_transcript_shows_one_collapsed_diff_per_file_in_html_and_markdown() -> None:
    state = Transcript()
    state.apply(TurnDiff(1, DIFFS))
    state.status = "done"
    assert state.blocks == [DiffBlock(DIFFS)]
    assert transcript_markdown(state) == (
        "**2 files changed in this turn**\n\n"
        "<details><summary>a.py · modified · +2 −1</summary>\n\n"
        "```diff\ndiff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n-x\n+y\n+z\n```\n\n"
        "</details>\n\n"
        "<details><summary>b`s.txt · deleted · +0 −1</summary>\n\n"
        "````diff\n--- a/b`s.txt\n+++ /dev/null\n-```\n````\n\n</details>"
    )
    html = turn_diff_html(DIFFS)
    assert html.count("<details><summary>") == 2
    assert (
        '<code>a.py</code> <span style="color:#9a6700">modified</span> '
        '<span style="color:#6e7781">+2 −1</span></summary>'
    ) in html
    assert '<span style="color:#1a7f37">+y</span>' in html


async def test_a_file_a_command_changed_before_a_patch_keeps_its_original_from_the_scan(
    tmp_path: Path,
) -> None:
    ws = workspace(tmp_path)
    patch = "*** Begin Patch\n*** Update File: cmd.txt\n@@\n one\n-two\n+TWO\n*** End Patch\n"
    script: list[Turn] = [
        [function_call("exec_command", {"cmd": "printf 'two\\n' >> cmd.txt"}, "c1")],
        [custom_tool_call("apply_patch", patch, "c2")],
        [message("ok")],
    ]
    events: list[Event] = []
    with ScriptedResponsesServer(script) as server:
        session = writing_session(ws, server.base_url, api_key=KEY)
        session.subscribe(events.append)
        await session.run_turn("edit")
        await session.aclose()
    assert (ws / "cmd.txt").read_text() == "one\nTWO\n"
    (event,) = [e for e in events if isinstance(e, TurnDiff)]
    assert [f.diff.splitlines()[-2:] for f in event.files] == [[" one", "+TWO"]]
    assert session.changes.last is not None
    # The agent's own write is taken back exactly; what the command did stays, asked about.
    plan = plan_undo(session.changes.last)
    assert ([c.shown for c in plan.restore], [c.shown for c in plan.asked]) == (
        ["cmd.txt"],
        ["cmd.txt"],
    )
    said = undo_last_turn(session.changes, plan)
    assert (ws / "cmd.txt").read_text() == "one\ntwo\n"
    assert said == (
        "Restored to their state before the agent's tools wrote them: cmd.txt. Skipped: "
        "cmd.txt changed while commands ran, and undo cannot tell whether the agent or "
        "someone else changed it (%agent undo shows their diffs; %agent undo --yes --all "
        "restores them too)."
    )
    assert session.changes.last is not None  # the skipped part can still be undone
    rest = plan_undo(session.changes.last)
    assert (rest.restore, [c.shown for c in rest.asked]) == ([], ["cmd.txt"])
    undo_last_turn(session.changes, rest, everything=True)
    assert (ws / "cmd.txt").read_text() == "one\n"
    assert session.changes.last is None


def test_exec_names_the_files_the_turn_changed(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    ws = tmp_path / "ws"
    ws.mkdir()
    add = "*** Begin Patch\n*** Add File: notes.txt\n+hello\n*** End Patch"
    script: list[Turn] = [[custom_tool_call("apply_patch", add, "c1")], [message("ok")]]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(tmp_path), "OPENAI_API_KEY": "sk-test-files-changed-0123456789"}
    with ScriptedResponsesServer(script) as server:
        argv = [sys.executable, "-m", "agent_magics", "exec", "--base-url", server.base_url,
                "-m", "m", "-a", "never", "-C", str(ws), "add notes"]  # fmt: skip
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "files changed: notes.txt (added)\n" in done.stderr


def test_a_path_swapped_while_it_is_tracked_never_stops_the_write(tmp_path: Path) -> None:
    """The model can flip a folder and a symlink while a patch is about to write under
    it; ``realpath`` then fails with EINVAL now and then. The tracker leaves that path
    out instead of raising, which ended the whole turn with a traceback."""
    import threading

    from agent_magics.store.changes import ChangeTracker

    ws = tmp_path / "ws"
    (ws / "real").mkdir(parents=True)
    flip = ws / "m"
    stop = threading.Event()

    def flipper() -> None:
        while not stop.is_set():
            try:
                flip.symlink_to(ws / "real")
                flip.unlink()
                flip.mkdir()
                flip.rmdir()
            except OSError:
                pass

    tracker = ChangeTracker(lambda text: text)
    tracker.start_turn(ws, None, 1)
    thread = threading.Thread(target=flipper)
    thread.start()
    try:
        for n in range(20_000):
            tracker.before_write([flip / f"f{n}.txt"])  # raised OSError before the fix
    finally:
        stop.set()
        thread.join()
