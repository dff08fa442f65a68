"""What a sandbox hides from commands stays unread, whatever the command tries: the
session signing key (it seals the session files whose settings ``resume last`` trusts)
and Jupyter's runtime folder, under bubblewrap and under Landlock.

Under Landlock, which restricted only writes, ``od -An -tx1 ~/.agent_magics/session_key``
printed the key to the model in hex, a form the redaction does not know. Now the
launcher handles reading too and grants it entry by entry around the hidden paths (see
``sandbox/landlock.py``), so each attempt below meets "Permission denied". End to end:
``agent-magics exec`` with a scripted model on 127.0.0.1; the key must not be found in
the model's next request in any form a command could print it in.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_magics.models.secret import REDACTED
from agent_magics.protocol.approval import SandboxMode
from agent_magics.store.signing import session_key
from agent_magics.testing import function_call
from agent_magics.tools.sandbox.platform import platform_sandbox
from tests.helpers.leaks import leaked
from tests.helpers.sandbox import (
    LINUX_MECHANISMS,
    Arena,
    exec_calls,
    make_key,
    require_mechanism,
    use_mechanism,
)

pytestmark = pytest.mark.slow  # real sandboxes and CLI runs

WEAKNESS = "Sandboxed commands can read the session signing key"
READS = {
    "od": "od -An -tx1 {key}",
    "cat": "cat {key}",
    "python": "python3 -c 'print(open(\"{key}\").read()[::-1])'",
    "symlink": "ln -s {key} sub/soft && od -An -tx1 sub/soft",
    "hardlink": "ln {key} sub/hard; od -An -tx1 sub/hard",
    "copy": "cp {key} sub/copy; rev sub/copy",
    "proc_root": "od -An -tx1 /proc/self/root{key}",
    "handle": (  # by file handle, no path walk (CAP_DAC_READ_SEARCH: root in a container)
        "python3 -c 'import ctypes, os, sys; libc = ctypes.CDLL(None, use_errno=True); "
        "h = ctypes.create_string_buffer(136); h[0] = 128; m = ctypes.c_int(); "
        "libc.name_to_handle_at(-100, sys.argv[1].encode(), h, ctypes.byref(m), 0); "
        'fd = libc.open_by_handle_at(os.open("/", os.O_RDONLY), h, os.O_RDONLY); '
        "print(fd, os.read(fd, 99)[::-1] if fd >= 0 else os.strerror(ctypes.get_errno()))' {key}"
    ),
}
"""Each a way to print the key in a form the redaction does not know (or, ``cat``, in
the one it knows), some through a name made in the workspace (in ``sub``: under Landlock
no command creates an entry at the top of a working folder holding protected paths)."""


def key_forms(key: str) -> list[str]:
    """The key as a command could print it: as written, reversed, and as ``od -tx1``
    shows the file's bytes (both ways round)."""
    text = f"{key}\n"
    return [key, key[::-1], text.encode().hex(), text[::-1].encode().hex()]


@pytest.mark.parametrize("tty", [False, True])
@pytest.mark.parametrize("where", ["apart", "workspace"])
@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_no_command_reads_the_signing_key(
    arena: Arena, mechanism: str, where: str, tty: bool
) -> None:
    """``apart``: the home beside the workspace; ``workspace``: the home is the working
    folder (Binder, JupyterLab started in ``~``). ``tty``: the command runs in a PTY."""
    require_mechanism(mechanism)
    home = arena.home if where == "apart" else arena.ws
    key = make_key(home)
    (arena.ws / "sub").mkdir()
    path = home / ".agent_magics" / "session_key"
    calls = [
        function_call("exec_command", {"cmd": f"{c.format(key=path)}; echo end-{n}", "tty": tty}, n)
        for n, c in READS.items()
    ]
    run = exec_calls(arena, mechanism, calls, env={"HOME": str(home)}, skip_env=("ZDOTDIR",))
    outputs = {name: str(text) for name, text in run.outputs().items()}
    for name in READS:
        assert f"end-{name}" in outputs[name], outputs  # each command ran
        assert REDACTED not in outputs[name], outputs  # nothing of the key was read to scrub
    if mechanism == "landlock":  # refused; bubblewrap shows an empty file instead
        for name in ("od", "cat", "python", "symlink", "proc_root", "handle"):
            assert "Permission denied" in outputs[name], outputs
    compact = re.sub(r"\s", "", "".join(outputs.values()))
    sent = json.dumps(run.server.requests)
    assert leaked(compact, *key_forms(key)) == []
    assert leaked(sent + run.done.stderr, *key_forms(key)) == []
    assert WEAKNESS not in run.done.stderr
    for name in ("hard", "copy"):  # no copy of the key was made either
        made = arena.ws / "sub" / name
        assert not made.exists() or key not in made.read_text(), name


PROCESS_READS = {
    "fd": "od -An -tx1 /proc/{pid}/fd/{fd}",
    "mem": (
        'python3 -c \'f = open("/proc/{pid}/mem", "rb"); f.seek({addr}); print(f.read(64)[::-1])\''
    ),
    "vm_readv": (
        "python3 -c 'import ctypes; b = ctypes.create_string_buffer(64); "
        "v = lambda a: (ctypes.c_void_p * 2)(a, 64); libc = ctypes.CDLL(None, use_errno=True); "
        "n = libc.process_vm_readv({pid}, v(ctypes.addressof(b)), 1, v({addr}), 1, 0); "
        "print(n, b.raw[::-1])'"
    ),
}
"""A process outside the sandbox holding the key (open, and in its memory): its open
files and memory through ``/proc`` and ``process_vm_readv``."""


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_no_command_reads_the_key_from_a_process_outside(arena: Arena, mechanism: str) -> None:
    """Landlock refuses ``ptrace``-like access to a process outside its domain (this
    test's, an ancestor of the command); bubblewrap's PID namespace hides it. Its
    ``environ`` stays readable under Landlock: :mod:`.environ` scrubs the API key there."""
    require_mechanism(mechanism)
    key = make_key(arena.home)
    held = key.encode()
    addr = id(held) + sys.getsizeof(b"") - 1  # CPython: the bytes follow the header
    assert ctypes.string_at(addr, len(held)) == held  # where a reader would find them
    fd = os.open(arena.home / ".agent_magics" / "session_key", os.O_RDONLY)
    try:
        where = {"pid": os.getpid(), "fd": fd, "addr": addr}
        calls = [
            function_call("exec_command", {"cmd": f"{c.format(**where)}; echo end-{n}"}, n)
            for n, c in PROCESS_READS.items()
        ]
        run = exec_calls(arena, mechanism, calls)
    finally:
        os.close(fd)
    outputs = {name: str(text) for name, text in run.outputs().items()}
    for name in PROCESS_READS:
        assert f"end-{name}" in outputs[name], outputs
    if mechanism == "landlock":
        assert "Permission denied" in outputs["fd"] and "Permission denied" in outputs["mem"]
        assert outputs["vm_readv"].count("-1 b'") == 1, outputs  # EPERM, nothing read
    compact = re.sub(r"\s", "", "".join(outputs.values()))
    assert leaked(compact + json.dumps(run.server.requests), *key_forms(key)) == []


def confined(cwd: Path, command: str, mode: str = "workspace-write") -> subprocess.Popen[str]:
    """``command`` started under this process's sandbox for ``cwd``, as a turn's would be."""
    spec = platform_sandbox(cwd, SandboxMode(mode), network=False)
    assert spec is not None and spec.confined
    argv = spec.wrap(["/bin/sh", "-c", command])
    return subprocess.Popen(
        argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip


def wait_for(path: Path) -> None:
    deadline = time.monotonic() + 60
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def ran(cwd: Path, command: str) -> str:
    out, _ = confined(cwd, command).communicate(timeout=60)
    return out


@pytest.mark.parametrize("mechanism", LINUX_MECHANISMS)
def test_what_hiding_costs_where_the_home_is_the_working_folder(
    arena: Arena, mechanism: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Binder, or JupyterLab started in ``~``: the working folder holds ``.agent_magics``,
    so under Landlock its top level is granted entry by entry, for writing (a rename-over
    such as ``sed -i`` of a top-level file is a sandbox denial, as before) and now for
    reading. What that adds: a file a process outside the sandbox puts there (a save
    that replaces the file) is unreadable to a command that started before, readable to
    the next one. Files in its folders, in ``/tmp`` and the key's absence are as before."""
    require_mechanism(mechanism)
    monkeypatch.setenv("HOME", str(arena.ws))
    key = make_key(arena.ws)
    (arena.ws / "notes.txt").write_text("one\n")
    (arena.ws / "sub").mkdir()
    with use_mechanism(monkeypatch, mechanism):
        first = ran(arena.ws, "sed -i s/one/two/ notes.txt; cat notes.txt")
        waiting = confined(
            arena.ws,
            "touch sub/started; while [ ! -e sub/go ]; do sleep 0.05; done; "
            "cat notes.txt sub/later.txt; t=$(mktemp) && echo made > $t && cat $t; "
            "cat .agent_magics/session_key",
        )
        wait_for(arena.ws / "sub" / "started")  # its rules are in place
        (arena.ws / "notes.tmp").write_text("three\n")
        os.replace(arena.ws / "notes.tmp", arena.ws / "notes.txt")  # as an editor saves
        (arena.ws / "sub" / "later.txt").write_text("later\n")
        (arena.ws / "sub" / "go").touch()
        during, _ = waiting.communicate(timeout=60)
        after = ran(arena.ws, "cat notes.txt")
    assert key not in first + during + after
    assert "later\nmade\n" in during, during  # new files in a subfolder and in /tmp read back
    assert after == "three\n"
    if mechanism == "landlock":
        assert "Permission denied" in first and first.endswith("one\n"), first
        assert "notes.txt: Permission denied" in during, during
    else:
        assert first == "two\n" and during.startswith("three\n"), (first, during)


@pytest.mark.parametrize("folder", ["missing", "there"])
def test_a_key_made_while_a_command_runs_stays_unread(
    arena: Arena, folder: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The key is made at a first save, perhaps while a command started before runs (a
    long-lived ``exec_command`` session): under Landlock its path is hidden before it
    exists (a file made later in a folder granted entry by entry is unreadable), with or
    without ``~/.agent_magics``. Bubblewrap cannot mount over a missing file: it hides
    the key only from commands started once it exists (see user_files)."""
    require_mechanism("landlock")
    monkeypatch.setenv("HOME", str(arena.home))
    if folder == "there":
        (arena.home / ".agent_magics").mkdir(mode=0o700)
    key_file = arena.home / ".agent_magics" / "session_key"
    (arena.ws / "sub").mkdir()
    with use_mechanism(monkeypatch, "landlock"):
        waiting = confined(
            arena.ws,
            "touch sub/started; while [ ! -e sub/go ]; do sleep 0.05; done; "
            f"od -An -tx1 {key_file}; cat {key_file}; echo end",
        )
        wait_for(arena.ws / "sub" / "started")
        key = session_key(arena.home).hex()  # as the first save makes it
        (arena.ws / "sub" / "go").touch()
        out, _ = waiting.communicate(timeout=60)
    assert key_file.read_text().strip() == key
    assert out.count("Permission denied") == 2 and out.endswith("end\n"), out
    assert leaked(re.sub(r"\s", "", out), *key_forms(key)) == []
