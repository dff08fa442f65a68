"""Where a teacher's policy is read from: site files and a notebook's metadata.

The site files are the administrator's (a JupyterHub or Binder image): every one that
exists is read, and no environment variable can move or remove them, since a student
sets the environment of their own kernel. Tests point :func:`site_policy` at their own
files through its ``paths`` parameter.
"""

from __future__ import annotations

import json
import sys
import time
import tomllib
from collections.abc import Sequence
from pathlib import Path

from agent_magics.teaching.policy import CoursePolicy, broken, merge, parse

SITE_FILES = (
    Path("/etc/agent_magics/policy.toml"),
    Path(sys.prefix) / "etc" / "agent_magics" / "policy.toml",
)
"""The site policy files, read when present (the second is the environment's own, for
an image whose Python lives in a folder of its own)."""
NOTEBOOK = "this notebook's metadata"
SAVE_TRIES, SAVE_WAIT_S = 10, 0.1  # a notebook caught mid-save: up to a second to finish
METADATA_KEY = "agent_magics"


def _why(exc: OSError | UnicodeDecodeError) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "it is not UTF-8 text"
    return (exc.strerror or type(exc).__name__).lower()


def site_name(path: Path) -> str:
    return f"the site file {path}"


def site_policy(paths: Sequence[Path] = SITE_FILES) -> CoursePolicy:
    """The strictest of the site files that exist; one that cannot be read or is not a
    policy switches the agent off (see :func:`.policy.broken`)."""
    policies = []
    for path in dict.fromkeys(paths):
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError) as exc:
            policies.append(broken(site_name(path), _why(exc)))
            continue
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            policies.append(broken(site_name(path), f"not TOML: {exc}"))
            continue
        policies.append(parse(data, site_name(path)))
    return merge(*policies)


def notebook_policy(path: Path | None) -> CoursePolicy:
    """The policy in the saved notebook at ``path`` (``metadata.agent_magics``); none when
    there is no such notebook or no such key. A notebook that exists but cannot be read
    as JSON is broken (the agent is off), since it may hold a policy."""
    if path is None:
        return CoursePolicy()
    try:
        notebook = _saved_notebook(path)
    except FileNotFoundError:
        return CoursePolicy()  # not saved yet: it can hold no policy
    except (OSError, UnicodeDecodeError) as exc:
        return broken(NOTEBOOK, _why(exc))
    except json.JSONDecodeError as exc:
        return broken(NOTEBOOK, f"the notebook is not JSON: {exc.msg}")
    metadata = notebook.get("metadata") if isinstance(notebook, dict) else None
    if not isinstance(metadata, dict) or METADATA_KEY not in metadata:
        return CoursePolicy()
    return parse(metadata[METADATA_KEY], NOTEBOOK)


def _saved_notebook(path: Path, tries: int = SAVE_TRIES) -> object:
    """The notebook at ``path`` as JSON. Jupyter saves a notebook by writing its file in
    place, keeping the previous save as ``.~NAME`` beside it until the write is done,
    and it saves often during Run All: a file caught mid-write is read from that copy,
    else again a moment later, and only a file still not JSON is an error."""
    for attempt in range(tries):
        text = path.read_text(encoding="utf-8")
        try:
            return json.loads(text)
        except json.JSONDecodeError:
            backup = path.with_name(f".~{path.name}")
            try:
                return json.loads(backup.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, json.JSONDecodeError):
                pass
            if attempt == tries - 1:
                raise
            time.sleep(SAVE_WAIT_S)
    raise AssertionError("unreachable")
