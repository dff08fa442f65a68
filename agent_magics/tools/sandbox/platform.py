"""Which sandbox mechanism works on this machine, probed once per process.

Linux: bubblewrap first (it keeps ``.git`` read-only too, and gives commands private
``/dev``, ``/proc`` and network), else Landlock. macOS: Seatbelt. Elsewhere: none.
Each candidate is probed by confining a real command, so a container without user
namespaces or an old kernel is found out before any tool call.

``AGENT_MAGICS_SANDBOX_MECHANISM`` = ``bwrap``, ``landlock``, ``seatbelt`` or ``none``
picks one mechanism (``none``: behave as if nothing worked); a pick that does not work
here counts as none.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agent_magics.protocol.approval import SandboxMode
from agent_magics.tools.sandbox import NO_SANDBOX, SandboxKind, SandboxSpec
from agent_magics.tools.sandbox.jupyter import hidden_paths
from agent_magics.tools.sandbox.roots import (
    guarded_paths,
    kept_files,
    read_only_subpaths,
    real,
    unwritable,
    writable_roots,
)
from agent_magics.tools.sandbox.user_files import hidden_files, home

MECHANISM_ENV = "AGENT_MAGICS_SANDBOX_MECHANISM"


@dataclass(frozen=True)
class Mechanism:
    """The outcome of the probe: a working kind and what it is, or why none works."""

    kind: SandboxKind | None
    detail: str


def _bwrap() -> tuple[str | None, Callable[[], str]]:
    from agent_magics.tools.sandbox import bwrap

    return bwrap.probe(), bwrap.version


def _landlock() -> tuple[str | None, Callable[[], str]]:
    from agent_magics.tools.sandbox import landlock

    return landlock.probe(), lambda: f"Landlock ABI {landlock.abi_version()}"


def _seatbelt() -> tuple[str | None, Callable[[], str]]:
    from agent_magics.tools.sandbox import seatbelt

    return seatbelt.probe(), lambda: "Seatbelt (sandbox-exec)"


def candidates() -> list[tuple[SandboxKind, Callable[[], tuple[str | None, Callable[[], str]]]]]:
    """The mechanisms this operating system may offer, best first."""
    if sys.platform.startswith("linux"):
        return [("bwrap", _bwrap), ("landlock", _landlock)]
    if sys.platform == "darwin":
        return [("seatbelt", _seatbelt)]
    return []


@functools.cache
def probe() -> Mechanism:
    """Find the first mechanism that confines a command here (once per process)."""
    wanted = os.environ.get(MECHANISM_ENV, "").strip().lower()
    if wanted == "none":
        return Mechanism(None, f"{MECHANISM_ENV}=none")
    found = candidates()
    if wanted:
        found = [c for c in found if c[0] == wanted]
        if not found:
            return Mechanism(None, f"{MECHANISM_ENV}={wanted} is not offered on {sys.platform}")
    if not found:
        return Mechanism(None, f"no sandbox mechanism is known for {sys.platform}")
    reasons = []
    for kind, check in found:
        problem, describe = check()
        if problem is None:
            return Mechanism(kind, describe())
        reasons.append(f"{kind}: {problem}")
    return Mechanism(None, "; ".join(reasons))


def platform_sandbox(
    cwd: Path, mode: SandboxMode, network: bool, kept: Sequence[Path] = ()
) -> SandboxSpec | None:
    """The sandbox for a confined first attempt in ``cwd`` under ``mode`` (``network``:
    whether commands may reach the network; ``kept``: files of the turn that stay
    read-only, see :func:`.roots.kept_files`), or ``None`` when no mechanism works.

    ``None`` makes the orchestrator fail closed: the command runs only after a person
    approves it (and never under the ``never`` policy).
    """
    if mode is SandboxMode.DANGER_FULL_ACCESS:
        return NO_SANDBOX
    mechanism = probe()
    if mechanism.kind is None:
        return None
    roots = writable_roots(cwd, mode)
    protected = dict.fromkeys(p for root in roots for p in read_only_subpaths(root))
    if roots:  # the working folder's .git and .agent_magics, also while missing
        protected |= dict.fromkeys(guarded_paths(roots[0]))
    protected |= dict.fromkeys(kept_files(kept, roots))
    return SandboxSpec(
        mechanism.kind,
        tuple(roots),
        tuple(protected),
        network,
        hidden(cwd),
        tuple(unwritable(roots)),
    )


def hidden(cwd: Path) -> tuple[Path, ...]:
    """What commands in ``cwd`` must not read, under any mode: Jupyter's runtime folder
    (or files) and the session signing key."""
    # What commands must see under any mode: hiding a folder that holds one of these
    # would hide the working folder, or the home's signing key and shell snapshot.
    seen = [*writable_roots(cwd, SandboxMode.WORKSPACE_WRITE), real(home())]
    return tuple(dict.fromkeys([*hidden_paths(seen), *hidden_files()]))


def unavailable_notice(mode: SandboxMode) -> str | None:
    """The sentence a session shows once when it must fail closed, else ``None``."""
    if mode is SandboxMode.DANGER_FULL_ACCESS:
        return None
    mechanism = probe()
    if mechanism.kind is not None:
        return None
    return (
        f"No sandbox works on this machine ({mechanism.detail}); every command will need approval."
    )


def proc_environ_notice(mode: SandboxMode) -> str | None:
    """The sentence a session shows once when sandboxed commands can read the API key
    from ``/proc/PID/environ`` of a process that started this one, else ``None``.

    Only Landlock leaves other processes visible (bubblewrap gives commands their own
    PID namespace); this process's own copy is overwritten before the first command
    (:func:`.landlock.hide_key_from_proc`), but not its parents'."""
    if mode is SandboxMode.DANGER_FULL_ACCESS or probe().kind != "landlock":
        return None
    from agent_magics.tools.sandbox.environ import HIDDEN_FROM_TOOLS, ancestors_holding

    holders = ancestors_holding(HIDDEN_FROM_TOOLS)
    if not holders:
        return None
    names = sorted(n for n in HIDDEN_FROM_TOOLS if n in os.environ) or ["OPENAI_API_KEY"]
    return (
        f"Sandboxed commands can read {', '.join(names)} from the "
        f"environment of {', '.join(holders)} (Landlock has no private /proc); "
        "start it without the key in its environment to close this."
    )


def unhidden(cwd: Path, mode: SandboxMode) -> list[Path]:
    """The existing paths the sandbox hides from commands in ``cwd`` under ``mode`` that
    the mechanism working here leaves readable. Bubblewrap mounts over each, Seatbelt
    denies reading them, Landlock grants reading around them where no command can create
    a file on their way (see :func:`.landlock.hideable`)."""
    if mode is SandboxMode.DANGER_FULL_ACCESS or probe().kind != "landlock":
        return []
    from agent_magics.tools.sandbox import landlock

    spec = platform_sandbox(cwd, mode, network=False)
    if spec is None:
        return []
    return [p for p in landlock.unhidden(spec) if os.path.lexists(p)]


def runtime_folder_notice(mode: SandboxMode, cwd: Path) -> str | None:
    """The sentence a session shows once when sandboxed commands can read Jupyter's
    runtime folder or a kernel's connection file, else ``None``."""
    keys = set(hidden_files())
    found = [str(p) for p in unhidden(cwd, mode) if p not in keys]
    if not found:
        return None
    return (
        f"Sandboxed commands can read Jupyter's runtime files ({', '.join(found)}: the "
        "server's token, the kernels' signing keys): Landlock cannot hide a file in a "
        "folder where commands may create files. What they print is scrubbed of those "
        "secrets, but not an encoded copy."
    )


def signing_key_notice(mode: SandboxMode, cwd: Path) -> str | None:
    """The sentence a session shows once when sandboxed commands can read the session
    signing key, else ``None``: in practice always, as where the home lies in a writable
    root the folders on the key's way are granted entry by entry already (its folder is
    protected, see :mod:`.roots`), so Landlock hides it too."""
    keys = set(hidden_files())
    found = [str(p) for p in unhidden(cwd, mode) if p in keys]
    if not found:
        return None
    return (
        f"Sandboxed commands can read the session signing key ({found[0]}), which "
        "vouches for the settings of saved sessions: Landlock cannot hide a file in a "
        "folder where commands may create files. What they print is scrubbed of it (as "
        "written and in base64), but not of every encoding; check the settings 'resume "
        "last' shows."
    )


def read_only_folder_notice(mode: SandboxMode, cwd: Path) -> str | None:
    """The sentence a session shows once when ``workspace-write`` meets a working folder
    this machine keeps read-only (a read-only checkout), else ``None``."""
    if mode is not SandboxMode.WORKSPACE_WRITE or not unwritable([real(cwd)]):
        return None
    return (
        f"The working folder {cwd} is read-only on this machine: commands run in the "
        "sandbox and can read it, but none can write there, approved or not."
    )


def weakness_notices(mode: SandboxMode, cwd: Path) -> list[str]:
    """What the sandbox that works here cannot hold for commands in ``cwd``, one
    sentence each (shown once)."""
    found = (
        read_only_folder_notice(mode, cwd),
        proc_environ_notice(mode),
        runtime_folder_notice(mode, cwd),
        signing_key_notice(mode, cwd),
    )
    return [notice for notice in found if notice is not None]


OFF_LIMITS = (
    "{path} holds this machine's secrets (the session signing key, Jupyter's runtime "
    "files, the memory and environment of the processes running the agent), which no "
    "tool of the agent reads"
)


def off_limits(cwd: Path, path: str | os.PathLike[str]) -> str | None:
    """Why the agent's own file tools (read_file, list_dir, grep_files, view_image,
    read_notebook, apply_patch: they run in the kernel's process, outside any sandbox)
    must not touch ``path``, or None: it is, or lies in, what the sandbox hides from
    commands (:func:`hidden`), once links are followed, or the ``/proc`` entry of this
    process or one of its ancestors (their memory and environment hold the API key and
    the Jupyter server's token, which commands never get)."""
    return OFF_LIMITS.format(path=path) if _secret(cwd, path, _secrets(cwd)) else None


def without_secrets(cwd: Path, paths: list[str]) -> list[str]:
    """``paths`` (found by a search) but those :func:`off_limits` refuses."""
    secrets = _secrets(cwd)
    return [p for p in paths if not _secret(cwd, p, secrets)]


def _secrets(cwd: Path) -> tuple[Path, ...]:
    return (*hidden(cwd), *_own_processes())


def _own_processes() -> list[Path]:
    """``/proc/<pid>`` of this process and of each of its ancestors (Linux)."""
    found, pid = [], os.getpid()
    while pid > 1 and sys.platform.startswith("linux"):
        found.append(Path(f"/proc/{pid}"))
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
            pid = int(stat[stat.rfind(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            break
    return found


def _secret(cwd: Path, path: str | os.PathLike[str], secrets: tuple[Path, ...]) -> bool:
    try:
        target = Path(os.path.realpath(os.path.join(cwd, os.fspath(path))))
    except (OSError, ValueError):
        return False
    return any(target == s or s in target.parents for s in secrets)
