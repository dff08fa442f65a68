"""Where a teacher's policy is read from: site files and a notebook's metadata.

The site files are the administrator's (a JupyterHub or Binder image): every one that
exists is read, and no environment variable can move or remove them, since a student
sets the environment of their own kernel. Tests point :func:`site_policy` at their own
files through its ``paths`` parameter.
"""

from __future__ import annotations

import json
import sys
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
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return CoursePolicy()  # not saved yet: it can hold no policy
    except (OSError, UnicodeDecodeError) as exc:
        return broken(NOTEBOOK, _why(exc))
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as exc:
        return broken(NOTEBOOK, f"the notebook is not JSON: {exc.msg}")
    metadata = notebook.get("metadata") if isinstance(notebook, dict) else None
    if not isinstance(metadata, dict) or METADATA_KEY not in metadata:
        return CoursePolicy()
    return parse(metadata[METADATA_KEY], NOTEBOOK)
