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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent_magics.protocol.approval import SandboxMode
from agent_magics.tools.sandbox import NO_SANDBOX, SandboxKind, SandboxSpec
from agent_magics.tools.sandbox.jupyter import hidden_paths
from agent_magics.tools.sandbox.roots import (
    guarded_paths,
    read_only_subpaths,
    real,
    writable_roots,
)
from agent_magics.tools.sandbox.user_files import hidden_files, home, signing_key_path

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


def platform_sandbox(cwd: Path, mode: SandboxMode, network: bool) -> SandboxSpec | None:
    """The sandbox for a confined first attempt in ``cwd`` under ``mode`` (``network``:
    whether commands may reach the network), or ``None`` when no mechanism works.

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
    # What commands must see under any mode: hiding a folder that holds one of these
    # would hide the working folder, or the home's signing key and shell snapshot.
    seen = [*writable_roots(cwd, SandboxMode.WORKSPACE_WRITE), real(home())]
    hidden = tuple(dict.fromkeys([*hidden_paths(seen), *hidden_files()]))
    return SandboxSpec(mechanism.kind, tuple(roots), tuple(protected), network, hidden)


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


def _unhiding_mechanism(mode: SandboxMode) -> str | None:
    """The name of the mechanism confining commands when it cannot hide a path from
    reading (every one but bubblewrap), else ``None``."""
    if mode is SandboxMode.DANGER_FULL_ACCESS or probe().kind in (None, "bwrap"):
        return None
    return {"landlock": "Landlock", "seatbelt": "Seatbelt"}.get(str(probe().kind), "it")


def runtime_folder_notice(mode: SandboxMode) -> str | None:
    """The sentence a session shows once when sandboxed commands can read Jupyter's
    runtime folder (every mechanism but bubblewrap, which hides it), else ``None``."""
    mechanism = _unhiding_mechanism(mode)
    folders = [str(p) for p in hidden_paths([]) if os.path.lexists(p)]
    if mechanism is None or not folders:
        return None
    return (
        f"Sandboxed commands can read Jupyter's runtime folder ({', '.join(folders)}: the "
        f"server's token, the kernels' signing keys): {mechanism} does not hide a folder "
        "from reading. What they print is scrubbed of those secrets, but not an encoded copy."
    )


def signing_key_notice(mode: SandboxMode) -> str | None:
    """The sentence a session shows once when sandboxed commands can read the session
    signing key (every mechanism but bubblewrap, which hides it), else ``None``."""
    mechanism = _unhiding_mechanism(mode)
    if mechanism is None or not signing_key_path().exists():  # made at a first save
        return None
    return (
        f"Sandboxed commands can read the session signing key ({signing_key_path()}), "
        f"which vouches for the settings of saved sessions: {mechanism} does not hide a "
        "file from reading. What they print is scrubbed of it (as written and in base64), "
        "but not of every encoding; check the settings 'resume last' shows."
    )


def weakness_notices(mode: SandboxMode) -> list[str]:
    """What the sandbox that works here cannot hold, one sentence each (shown once)."""
    found = (proc_environ_notice(mode), runtime_folder_notice(mode), signing_key_notice(mode))
    return [notice for notice in found if notice is not None]
