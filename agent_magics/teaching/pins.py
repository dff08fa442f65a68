"""The first policy seen for a notebook, kept where the notebook's folder cannot reach.

A notebook's metadata is a file in the working folder, and what a turn runs (a command
the person approved to run outside the sandbox, ``run_python``) or the person does can
rewrite it. So the first policy read from a notebook is pinned: copied, as the policy it
was read as, to a file of the person's own folder (``~/.agent_magics/policies/``, named
after the notebook and keyed by its path), which no sandboxed command or patch can
write (that folder is protected in every writable root: see
:mod:`agent_magics.tools.sandbox.roots`). Every later reading of that notebook is merged
with the pin, in a kernel started afresh too: the notebook can make it stricter, never
looser. A teacher who means to loosen a notebook's policy for a home that has already
seen it deletes the pin (``%agent status`` names it) and restarts the kernel.

Only a policy that takes something away and reads whole is pinned: a broken one
switches the agent off anyway, and pinned it would stay off after the fix.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
from pathlib import Path
from typing import Any

from agent_magics.teaching.policy import CoursePolicy, broken, parse
from agent_magics.tools.sandbox.user_files import user_dir

PINS = "policies"
"""The folder of pins in the person's own folder (``~/.agent_magics``)."""
PINNED = "this notebook's pinned policy"
NAME_CHARS = re.compile(r"[^A-Za-z0-9_.-]+")
MAX_NAME = 40
"""Characters of the notebook's name kept in its pin's name (the hash tells them apart)."""


def pins_folder() -> Path:
    return user_dir() / PINS


def named(notebook: Path) -> str:
    """``notebook`` as its pin knows it: its folder's real path and its own name (a
    notebook that is a link keeps its pin when the link is swapped for a file)."""
    return os.path.join(os.path.realpath(notebook.parent), notebook.name)


def pin_file(notebook: Path, folder: Path) -> Path:
    """Where ``notebook``'s pin lives: its name for a person, a hash of its path (see
    :func:`named`) to tell two notebooks of one name apart."""
    digest = hashlib.sha256(named(notebook).encode("utf-8", "surrogateescape")).hexdigest()
    stem = NAME_CHARS.sub("_", notebook.stem)[:MAX_NAME] or "notebook"
    return folder / f"{stem}-{digest[:16]}.json"


def table(policy: CoursePolicy) -> dict[str, Any]:
    """The fields a source set in ``policy`` (its ``origins``), as a policy's table."""
    out: dict[str, Any] = {}
    for name in policy.origins:
        value = getattr(policy, name)
        out[name] = list(value) if isinstance(value, tuple) else getattr(value, "value", value)
    return out


def pinned(notebook: Path, folder: Path) -> CoursePolicy | None:
    """The policy pinned for ``notebook``: None when there is no pin; a pin that cannot
    be read switches the agent off (see :func:`.policy.broken`), naming the file."""
    path = pin_file(notebook, folder)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        return broken(f"{PINNED} ({path})", type(exc).__name__)
    found = data.get("policy") if isinstance(data, dict) else None
    policy = parse(found, PINNED)
    if policy.problems:
        return broken(f"{PINNED} ({path})", "it is not a policy")
    return policy


def pin(notebook: Path, folder: Path, policy: CoursePolicy) -> None:
    """Pin ``policy`` for ``notebook`` unless one is pinned already: the file appears
    whole or not at all (written aside, then linked), and the first one stays. A home
    that cannot be written keeps no pin; the notebook's policy still holds."""
    path = pin_file(notebook, folder)
    text = json.dumps({"notebook": named(notebook), "policy": table(policy)}, indent=1)
    aside = path.with_name(f".{path.name}.{secrets.token_hex(4)}")
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        aside.write_text(text + "\n", encoding="utf-8")
        with contextlib.suppress(FileExistsError):  # another kernel pinned it first
            os.link(aside, path)
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError):
            aside.unlink()


def holding(notebook: Path | None, seen: CoursePolicy, folder: Path) -> CoursePolicy:
    """What ``notebook``'s pin adds to ``seen`` (the policy its metadata gives now):
    the pin read back, or, with no pin yet, ``seen`` pinned now (a default policy or a
    broken one is not)."""
    if notebook is None:
        return CoursePolicy()
    found = pinned(notebook, folder)
    if found is not None:
        return found
    if seen.in_force and not seen.problems:
        pin(notebook, folder, seen)
    return CoursePolicy()
