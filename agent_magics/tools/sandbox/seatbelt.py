"""Confinement on macOS: a Seatbelt profile run through ``/usr/bin/sandbox-exec``.

The profile denies everything by default, then allows what a command-line program
needs: running and forking programs, reading any file, the system services reached
through Mach lookups and sysctls, terminals, and writes beneath each writable root
except its protected parts. Reading is then denied beneath each path the spec hides
(the session signing key, Jupyter's runtime folder), existing or not: a deny naming a
path wins over the allow of every path, and Seatbelt matches the path a symlink leads
to. The network is allowed only when the turn allows it.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from agent_magics.tools.sandbox import WRAPPERS, SandboxSpec

SANDBOX_EXEC = "/usr/bin/sandbox-exec"

BASE_RULES = """\
(version 1)
(deny default)
(allow process-exec)
(allow process-fork)
(allow signal (target same-sandbox))
(allow process-info* (target same-sandbox))
(allow file-read*)
(allow sysctl-read)
(allow mach-lookup)
(allow ipc-posix-sem)
(allow ipc-posix-shm)
(allow pseudo-tty)
(allow file-ioctl (literal "/dev/tty") (regex #"^/dev/ttys[0-9]+$"))
(allow file-write-data
  (literal "/dev/null")
  (literal "/dev/zero")
  (literal "/dev/tty")
  (literal "/dev/ptmx")
  (literal "/dev/dtracehelper")
  (regex #"^/dev/ttys[0-9]+$"))
"""

NETWORK_RULES = """\
(allow network-outbound)
(allow network-inbound)
(allow network-bind)
(allow system-socket)
"""


def quote(path: Path) -> str:
    """``path`` as a Seatbelt string literal."""
    text = str(path).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def _write_rule(root: Path, protected: list[Path]) -> str:
    if not protected:
        return f"  (subpath {quote(root)})"
    parts = [f"(subpath {quote(root)})"]
    parts += [f"(require-not (subpath {quote(p)}))" for p in protected]
    return f"  (require-all {' '.join(parts)})"


def profile(spec: SandboxSpec) -> str:
    """The Seatbelt profile text that confines a command as ``spec`` says."""
    text = BASE_RULES
    roots = list(spec.writable_roots)
    if roots:
        lines = []
        for root in roots:
            protected = [p for p in spec.read_only_subpaths if p == root or root in p.parents]
            lines.append(_write_rule(root, protected))
        text += "(allow file-write*\n" + "\n".join(lines) + ")\n"
    if spec.network:
        text += NETWORK_RULES
    if spec.hidden:
        denied = "\n".join(f"  (subpath {quote(p)})" for p in spec.hidden)
        text += f"(deny file-read*\n{denied})\n"
    return text


def wrap(spec: SandboxSpec, argv: list[str]) -> list[str]:
    return [SANDBOX_EXEC, "-p", profile(spec), "--", *argv]


def probe() -> str | None:
    """``None`` when ``sandbox-exec`` is there to run profiles, else why not."""
    if not os.access(SANDBOX_EXEC, os.X_OK):
        return f"{SANDBOX_EXEC} is missing"
    argv = wrap(SandboxSpec("seatbelt", network=False), ["/usr/bin/true"])
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{SANDBOX_EXEC} could not run: {exc}"
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"{SANDBOX_EXEC} failed: {lines[-1] if lines else done.returncode}"
    return None


WRAPPERS["seatbelt"] = wrap
