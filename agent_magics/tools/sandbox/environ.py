"""Secrets out of this process's start-up environment block, the bytes that
``/proc/PID/environ`` shows to other processes.

Under Landlock a confined command still sees this process in ``/proc`` (no PID
namespace), and on the kernels tried, as root, neither ``PR_SET_DUMPABLE`` nor dropping
``CAP_SYS_PTRACE`` stops it from reading ``environ`` (Landlock's ptrace rule refuses
``/proc/PID/mem`` but not ``environ``). What does hold: overwrite the values in that
block. Python's ``os.environ`` is a copy made at start-up, and each value is put back
with ``putenv`` (a new string, outside the block), so this process and its children
keep the variables.
"""

from __future__ import annotations

import ctypes
import os
import sys
from collections.abc import Iterable

HIDDEN_FROM_TOOLS = frozenset(
    {"OPENAI_API_KEY", "JUPYTER_TOKEN", "JUPYTERHUB_API_TOKEN", "JPY_API_TOKEN"}
)
"""Left out of every command's environment: the model server's key, and the tokens that
let whoever holds them run code on the Jupyter server or the hub (a command could encode
one past the output scrubber, e.g. through base64)."""

ENV_START_FIELD = 50
"""``env_start`` in ``/proc/self/stat`` (1-based, see proc(5)); ``env_end`` follows."""


def _block() -> tuple[int, int]:
    with open("/proc/self/stat", "rb") as f:
        stat = f.read()
    fields = stat[stat.rfind(b")") + 2 :].split()  # fields[0] is field 3, the state
    start = int(fields[ENV_START_FIELD - 3])
    return start, int(fields[ENV_START_FIELD - 2])


def scrub_start_environ(names: Iterable[str]) -> int:
    """Overwrite the values of ``names`` in the start-up environment block with zero
    bytes, keeping them in ``os.environ`` and in the C environment; returns how many
    were overwritten (0 also where ``/proc`` is not Linux's)."""
    wanted = {name.encode() for name in names}
    if not sys.platform.startswith("linux") or not wanted:
        return 0
    try:
        start, end = _block()
    except (OSError, ValueError, IndexError):
        return 0
    if not 0 < start < end:
        return 0
    block = ctypes.string_at(start, end - start)
    done, offset = 0, 0
    for entry in block.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and value and name in wanted:
            os.putenv(name, value)  # the C environment stops pointing into the block
            ctypes.memset(start + offset + len(name) + 1, 0, len(value))
            done += 1
        offset += len(entry) + 1
    return done


def ancestors_holding(names: Iterable[str]) -> list[str]:
    """``"NAME (pid N)"`` of each ancestor of this process whose start-up environment
    still holds one of ``names`` with a value (those this process cannot overwrite)."""
    wanted = {name.encode() for name in names}
    found: list[str] = []
    pid = os.getppid()
    while pid > 1 and sys.platform.startswith("linux"):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                entries = f.read().split(b"\0")
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            break
        held = any(e.partition(b"=")[0] in wanted and e.partition(b"=")[2] for e in entries)
        if held:
            found.append(f"{stat[stat.find(b'(') + 1 : stat.rfind(b')')].decode()} (pid {pid})")
        pid = int(stat[stat.rfind(b")") + 2 :].split()[1])
    return found
