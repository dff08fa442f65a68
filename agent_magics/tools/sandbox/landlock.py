"""Confinement with Landlock: commands start through a small launcher that restricts
itself and then execs the command (see :mod:`.landlock_exec`).

Landlock only adds permissions beneath a folder, it cannot take them back below it, so
under this mechanism the protected parts of a writable root (``.git``, ``.agents``,
``.codex``) stay writable; bubblewrap, preferred when it works, protects them. The
network is cut with a seccomp filter on sockets plus Landlock's TCP rules (ABI >= 4).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agent_magics.tools.sandbox import WRAPPERS, SandboxSpec, landlock_exec

LAUNCHER = Path(landlock_exec.__file__).resolve()
PROBE_TIMEOUT_S = 10.0


def abi_version() -> int:
    """The kernel's Landlock ABI version (0: no Landlock)."""
    if not sys.platform.startswith("linux"):
        return 0
    return landlock_exec.abi_version()


def wrap(spec: SandboxSpec, argv: list[str]) -> list[str]:
    # -I -S: start without site-packages or the environment's PYTHON* settings (fast,
    # and nothing of the user's can run before the restrictions are in place).
    out = [sys.executable, "-I", "-S", str(LAUNCHER)]
    for root in spec.writable_roots:
        out += ["--rw", str(root)]
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
