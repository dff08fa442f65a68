"""Running the profile once in a login bash and reading back what it left behind.

The login shell gets the commands' environment, no input, and its output thrown away
(the profile may print). After the profile, a short script writes NUL-separated records
to a pipe of its own: every exported variable, each function, each alias, the shopt and
set options, then a random end mark, so a profile that exits early, or a daemon it
started that keeps the pipe open, cannot pass for a finished capture. Nothing of it
touches the disk.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import selectors
import shlex
import signal
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agent_magics.tools.sandbox.environ import HIDDEN_FROM_TOOLS

READ_SIZE = 65536
POLL_S = 0.05
STOP_GRACE_S = 1.0
"""How long a login shell told to stop (SIGTERM) may run its exit traps before it is
killed: a profile can hold a lock that only its trap releases (pyenv's rehash lock,
left behind by a SIGKILL, makes every later login shell wait 60 s)."""
SKIPPED_VARS = frozenset({"PWD", "OLDPWD", "SHLVL", "_", "BASH_ENV", *HIDDEN_FROM_TOOLS})
"""Variables the snapshot never sets: each shell sets its own, or they are ours."""
FIXED_SHOPTS = frozenset({"login_shell", "restricted_shell"})

SCRIPT = r"""{
while IFS= builtin read -r __n; do
  builtin printf 'x\0%s\0%s\0' "$__n" "${!__n}"
done < <(builtin compgen -e)
while IFS= builtin read -r __n; do
  builtin printf 'f\0'; builtin declare -f -- "$__n"; builtin printf '\0'
done < <(builtin compgen -A function)
while IFS= builtin read -r __n; do
  builtin printf 'a\0'; builtin alias -- "$__n"; builtin printf '\0'
done < <(builtin compgen -a)
builtin printf 's\0'; builtin shopt -p; builtin printf '\0'
builtin printf 'o\0'; builtin set +o; builtin printf '\0'
builtin printf 'e\0%s\0' @MARK@
} >&@FD@ 2>/dev/null"""


class _SnapshotFailed(Exception):
    """The snapshot could not be made; commands keep running ``bash -lc``."""


@dataclass
class Capture:
    exports: dict[str, str] = field(default_factory=dict)
    functions: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    shopts: str = ""
    options: str = ""


def capture(
    shell: str,
    cwd: Path,
    env: Mapping[str, str],
    timeout: float,
    wanted: Callable[[], bool],
) -> Capture:
    """The state ``shell -l`` is in after the profile. ``wanted`` is asked once the shell
    started (False: give up at once). Raises :class:`_SnapshotFailed`."""
    mark = secrets.token_hex(16)
    read_fd, write_fd = os.pipe()
    script = SCRIPT.replace("@MARK@", mark).replace("@FD@", str(write_fd))
    try:
        proc = subprocess.Popen(
            [shell, "-lc", script],
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(write_fd,),
            start_new_session=True,
        )
    except OSError as exc:
        os.close(read_fd)
        raise _SnapshotFailed(f"the login shell did not start: {exc}") from None
    finally:
        os.close(write_fd)
    try:
        if not wanted():
            raise _SnapshotFailed("the session closed")
        data = _read(read_fd, proc, time.monotonic() + timeout)
    finally:
        os.close(read_fd)
        stop_group(proc)
    end = f"e\0{mark}\0".encode()
    if not data.endswith(end):
        raise _SnapshotFailed(
            f"the login shell ended before the profile finished ({proc.returncode})"
        )
    return parse(data[: -len(end)])


def _read(fd: int, proc: subprocess.Popen[bytes], deadline: float) -> bytes:
    """What the pipe gives until end of file, or until the shell has exited and the
    pipe holds nothing more (a daemon the profile started may keep it open)."""
    data = bytearray()
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _SnapshotFailed("the profile took too long")
            if sel.select(min(left, POLL_S)):
                chunk = os.read(fd, READ_SIZE)
                if not chunk:
                    return bytes(data)
                data += chunk
            elif proc.poll() is not None:
                return bytes(data)


def parse(data: bytes) -> Capture:
    """The records written by :data:`SCRIPT` (its end mark taken off)."""
    fields = [os.fsdecode(f) for f in data.split(b"\0")]
    if fields and fields[-1] == "":
        fields.pop()
    found = Capture()
    it = iter(fields)
    for kind in it:
        try:
            if kind == "x":
                name = next(it)
                found.exports[name] = next(it)
            elif kind == "f":
                found.functions.append(next(it))
            elif kind == "a":
                found.aliases.append(next(it))
            elif kind == "s":
                found.shopts = next(it)
            elif kind == "o":
                found.options = next(it)
            else:
                raise _SnapshotFailed(f"unexpected record {kind[:20]!r} from the login shell")
        except StopIteration:
            raise _SnapshotFailed("a record from the login shell was cut short") from None
    return found


def signal_group(pid: int, sig: int = signal.SIGKILL) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def stop_group(proc: subprocess.Popen[bytes]) -> None:
    """End a login shell that is still running: SIGTERM to its group first, so the
    profile's exit traps run, SIGKILL after :data:`STOP_GRACE_S`. Blocks up to that."""
    if proc.poll() is None:
        signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            signal_group(proc.pid, signal.SIGKILL)
    proc.wait()


def render(found: Capture, base: Mapping[str, str], redact: Callable[[str], str]) -> bytes:
    """The snapshot script: what the profile changed, as lines bash can source."""

    def clean(text: str) -> bool:
        return redact(text) == text

    lines = ["# The login shell's state, sourced through BASH_ENV instead of the profile."]
    for name in sorted(base):
        if name not in found.exports and name not in SKIPPED_VARS and _is_name(name):
            lines.append(f"unset {name}")
    for name, value in sorted(found.exports.items()):
        if name in SKIPPED_VARS or not _is_name(name) or base.get(name) == value:
            continue
        if clean(value):
            lines.append(f"export {name}={shlex.quote(value)}")
    lines += [body.rstrip("\n") for body in found.functions if clean(body)]
    lines += [line.rstrip("\n") for line in found.aliases if clean(line)]
    for line in found.shopts.splitlines():
        if line.split()[-1:] and line.split()[-1] not in FIXED_SHOPTS:
            lines.append(line)
    bash_env = found.exports.get("BASH_ENV")
    if bash_env is not None and clean(bash_env):
        lines.append(f"export BASH_ENV={shlex.quote(bash_env)}")
    else:
        lines.append("unset BASH_ENV")
    lines += found.options.splitlines()  # last: errexit or nounset hold for the script only
    return os.fsencode("\n".join(lines) + "\n")


def _is_name(name: str) -> bool:
    return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name) is not None
