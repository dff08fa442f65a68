"""Confinement with Landlock: commands start through a small launcher that restricts
itself, runs the command and ends whatever it leaves behind (see :mod:`.landlock_exec`).

Landlock only adds permissions beneath a folder, it cannot take them back below it. So
a writable root that holds a protected path (``.git``, ``.agent_magics``, ... also one
that does not exist yet, see :func:`grants`) is not granted itself: its other entries
are, one by one. What holds: nothing under a protected path can be created, changed or
removed. What it costs: entries directly in such a folder (the working folder's top
level) cannot be created, renamed or removed, only the existing files written; such a
command meets a sandbox denial and goes to approval like any other. The network is cut
with a seccomp filter on sockets plus Landlock's TCP rules (ABI >= 4).

Reading is granted the same way around the paths the spec hides (the session signing
key, Jupyter's runtime folder, see :func:`hideable`): every folder can be listed, and
files can be read and run beneath each entry along the way to a hidden path but the
hidden one, from ``/`` down. The hidden path stays unreadable also through a symlink, a
hard link (Landlock refuses a link or rename that would give a file more rights) or a
file created there later (a key made after the command started). What it costs: a file
that appears directly in a folder along the way after the command started cannot be
read by that command; a path is hidden only where no command can create files in those
folders (they lie outside the writable roots, or are granted entry by entry already),
so only a process outside the sandbox can put one there.

No PID namespace hides this process from the command, so before the first command
starts, the API key is overwritten in the start-up environment that ``/proc/PID/environ``
shows (see :mod:`.environ`). The rest of ``/proc/PID`` of a process outside the sandbox
(its open files, its memory) is refused by Landlock, as ``ptrace`` is.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path

from agent_magics.tools.sandbox import WRAPPERS, SandboxSpec, landlock_exec
from agent_magics.tools.sandbox.environ import HIDDEN_FROM_TOOLS, scrub_start_environ
from agent_magics.tools.sandbox.roots import real

LAUNCHER = Path(landlock_exec.__file__).resolve()
LAUNCHER_CODE = LAUNCHER.read_text(encoding="utf-8")
"""The launcher as this process read it at import: commands get it as ``-c`` text, so a
command that rewrites the file (a virtual environment inside the workspace) cannot
change how the next one is confined."""
INTERPRETER = os.path.realpath(sys.executable)
"""The interpreter itself, not a virtual environment's link to it (which lies in the
workspace as often as the environment does)."""
PROBE_TIMEOUT_S = 10.0
SHARED_MEMORY = Path("/dev/shm")
"""Writable beside the roots in ``workspace-write`` (POSIX semaphores: multiprocessing)."""


def abi_version() -> int:
    """The kernel's Landlock ABI version (0: no Landlock)."""
    if not sys.platform.startswith("linux"):
        return 0
    return landlock_exec.abi_version()


ROOT = Path("/")


def grants(roots: tuple[Path, ...], protected: tuple[Path, ...]) -> list[Path]:
    """The paths to grant access beneath: each root, or, when a protected path lies
    inside it, its entries other than the protected ones (symlinks are skipped: a rule
    would follow them), recursively along the way to the protected path. A protected
    path that is a symlink protects its target too."""
    protected = (*protected, *(real(p) for p in protected))
    stops = {str(p) for p in protected}
    along = {str(folder) for p in protected for folder in p.parents}
    out: list[Path] = []

    def visit(path: str) -> None:
        if path in stops:
            return
        if path not in along:
            out.append(Path(path))
            return
        try:
            entries = sorted(os.scandir(path), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if not entry.is_symlink():
                visit(entry.path)

    for root in roots:
        visit(str(root))
    return out


def hideable(path: Path, writable: list[Path]) -> bool:
    """Whether reading can be taken away from ``path`` at no cost to commands: no
    folder on its way lies beneath a ``writable`` grant. The folders on the way are
    granted for reading entry by entry, so a file a command created in one of them
    (``mktemp`` in ``/tmp`` beside a kernel's connection file) could not be read back by
    that command; where none is writable, no command can create one."""
    granted = {str(p) for p in writable}
    return not any(str(folder) in granted for folder in path.parents)


def write_grants(spec: SandboxSpec) -> list[Path]:
    writable = grants(spec.writable_roots, spec.read_only_subpaths)
    if spec.writable_roots and SHARED_MEMORY.is_dir():
        writable.append(SHARED_MEMORY)
    return writable


def unhidden(spec: SandboxSpec) -> list[Path]:
    """The paths ``spec`` hides that stay readable under Landlock (see :func:`hideable`)."""
    writable = write_grants(spec)
    return [p for p in spec.hidden if not hideable(p, writable)]


@functools.cache
def hide_key_from_proc() -> int:
    """Once per process: the key out of ``/proc/<this pid>/environ``."""
    return scrub_start_environ(HIDDEN_FROM_TOOLS)


def wrap(spec: SandboxSpec, argv: list[str]) -> list[str]:
    hide_key_from_proc()
    # -I -S: start without site-packages or the environment's PYTHON* settings (fast,
    # and nothing of the user's can run before the restrictions are in place).
    out = [INTERPRETER, "-I", "-S", "-c", LAUNCHER_CODE]
    writable = write_grants(spec)
    hidden = tuple(p for p in spec.hidden if hideable(p, writable))
    for path in grants((ROOT,), hidden):
        out += ["--read", str(path)]
    for path in writable:
        out += ["--rw", str(path)]
    if not spec.network:
        out.append("--no-network")
    return [*out, "--", *argv]


def probe() -> str | None:
    """``None`` when the launcher confines a command here, else why it does not."""
    abi = abi_version()
    if abi < 1:
        return "Landlock is not enabled in this kernel"
    argv = wrap(SandboxSpec("landlock", network=False), ["/bin/sh", "-c", "exit 0"])
    try:
        done = subprocess.run(
            argv, capture_output=True, timeout=PROBE_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the Landlock launcher could not run: {exc}"
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return lines[-1] if lines else f"the Landlock launcher failed (exit {done.returncode})"
    return None


WRAPPERS["landlock"] = wrap
