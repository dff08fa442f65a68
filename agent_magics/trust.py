"""Trust in a project's own settings: ``.agent_magics/config.toml`` in the working folder.

A project's config can loosen the sandbox, turn approvals off, send the API key to
another server or start MCP servers outside the sandbox, and a cloned repository (or a
command the model ran) may have written it. So it counts only once the user said so.
The user config keeps the trust list, one table per folder::

    [projects."/real/path/of/the/folder"]
    trust_level = "trusted"
    config_sha256 = "<sha256 of the project's config.toml>"

An entry trusts exactly that folder (its real path, no parents, no children), and only
the file content that was trusted: a changed file is untrusted again and asked about
again. Only the user config holds the list; the project's own ``projects`` table is
dropped. Codex keys trust on the folder alone, so a project config the model rewrote
after trust was given still applies there.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_magics.errors import ConfigError

CONFIG_DIR = ".agent_magics"
CONFIG_FILE = "config.toml"
TRUST_TABLE = "projects"
TRUST_LEVEL_KEY = "trust_level"
TRUSTED = "trusted"
DIGEST_KEY = "config_sha256"
USER_ONLY_KEYS = frozenset({TRUST_TABLE})
"""Settings a project config may never set, trusted or not."""
SECRET_KEYS = frozenset({"api_key"})
MAX_SHOWN_SETTINGS = 40
"""Settings listed in the trust question; the rest are counted."""
MAX_NAMED_SETTINGS = 6
"""Setting names in the one line that says an untrusted config was ignored."""
MAX_VALUE_CHARS = 120
TRUST_COMMAND = "agent-magics trust"
BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def user_config_file(home: Path | None = None) -> Path:
    return (home if home is not None else Path.home()) / CONFIG_DIR / CONFIG_FILE


def read_toml(path: Path) -> dict[str, Any]:
    """The parsed file; ``{}`` when it does not exist."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (tomllib.TOMLDecodeError, OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read {path}: {exc}") from None


def _key(part: str) -> str:
    return part if BARE_KEY.fullmatch(part) else json.dumps(part)


def _value(value: Any) -> str:
    """A one-line, ASCII-only rendering: control and bidi characters come out escaped."""
    text = json.dumps(value, ensure_ascii=True, default=str)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


def setting_lines(settings: dict[str, Any], prefix: str = "") -> list[str]:
    """``a.b.c = value`` for every leaf of ``settings``, in file order."""
    lines: list[str] = []
    for name, value in settings.items():
        key = f"{prefix}{_key(name)}"
        if isinstance(value, dict) and value:
            lines += setting_lines(value, f"{key}.")
        elif name in SECRET_KEYS and not prefix:
            lines.append(f"{key} = (a secret, not shown)")
        else:
            lines.append(f"{key} = {_value(value)}")
    return lines


@dataclass(frozen=True)
class ProjectConfig:
    """A project's ``.agent_magics/config.toml`` and whether the user trusts it."""

    file: Path
    folder: Path
    """The folder's real path: the key of its entry in the trust list."""
    digest: str
    settings: dict[str, Any] = field(default_factory=dict)
    """What it sets, without the keys only the user config may set."""
    dropped: tuple[str, ...] = ()
    """User-only keys the file tried to set."""
    problem: str | None = None
    """Why it cannot be read as TOML (``None``: it can)."""
    trusted: bool = False
    changed: bool = False
    """Trusted before, with other content."""

    def lines(self) -> list[str]:
        shown = setting_lines(self.settings)
        extra = [f"{_key(k)} (ignored: only the user config sets it)" for k in self.dropped]
        lines = shown + extra
        if len(lines) > MAX_SHOWN_SETTINGS:
            more = len(lines) - MAX_SHOWN_SETTINGS
            lines = [*lines[:MAX_SHOWN_SETTINGS], f"… and {more} more"]
        return lines

    def state(self) -> str:
        return "changed since you trusted it" if self.changed else "not trusted yet"

    def question(self, user_file: Path) -> str:
        """The terminal question: what it would set, then trust or not now."""
        body = "\n".join(f"  {line}" for line in self.lines()) or "  (nothing)"
        return (
            f"The project config {self.file} is {self.state()}. It would set:\n{body}\n"
            f"Trust it? The answer is kept in {user_file}; a changed file is asked "
            "about again.\n[y] trust  [n] not now (ignore it this time): "
        )

    def ignored_line(self, how: str) -> str:
        """One line: this file was ignored, what it would have set, how to trust it."""
        if self.problem is not None:
            return f"ignored the project config {self.file}: {self.problem}"
        names = list(dict.fromkeys(line.split(" = ")[0] for line in setting_lines(self.settings)))
        shown = ", ".join(names[:MAX_NAMED_SETTINGS]) + (
            ", …" if len(names) > MAX_NAMED_SETTINGS else ""
        )
        sets = f" (it sets {shown})" if shown else ""
        return f"ignored the project config {self.file}{sets}: {self.state()}. To trust it: {how}"


def _is_trusted(entry: Any, digest: str) -> tuple[bool, bool]:
    """(trusted, trusted before with other content) for one trust-list entry."""
    if not isinstance(entry, dict) or entry.get(TRUST_LEVEL_KEY) != TRUSTED:
        return False, False
    same = entry.get(DIGEST_KEY) == digest
    return same, not same


def trust_list(user: dict[str, Any], user_file: Path) -> dict[str, Any]:
    table = user.get(TRUST_TABLE, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{TRUST_TABLE} in {user_file} must be a table of folders.")
    return table


def project_config(folder: Path, home: Path | None = None) -> ProjectConfig | None:
    """The project config of ``folder`` with its trust, or ``None`` when it has none (or
    when it is the user config itself: ``folder`` is the home folder)."""
    real = Path(os.path.realpath(folder))
    file = real / CONFIG_DIR / CONFIG_FILE
    user_file = user_config_file(home)
    if os.path.realpath(file) == os.path.realpath(user_file):
        return None
    try:
        data = file.read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None
    except OSError as exc:
        return ProjectConfig(file, real, "", problem=f"cannot be read ({exc.strerror})")
    digest = hashlib.sha256(data).hexdigest()
    entry = trust_list(read_toml(user_file), user_file).get(str(real))
    trusted, changed = _is_trusted(entry, digest)
    try:
        parsed = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        return ProjectConfig(file, real, digest, problem=f"not valid TOML ({exc})")
    dropped = tuple(k for k in parsed if k in USER_ONLY_KEYS)
    settings = {k: v for k, v in parsed.items() if k not in USER_ONLY_KEYS}
    return ProjectConfig(file, real, digest, settings, dropped, None, trusted, changed)


def entry_text(project: ProjectConfig) -> str:
    """The user config's table that trusts ``project`` as it is now."""
    return (
        f"[{TRUST_TABLE}.{json.dumps(str(project.folder))}]\n"
        f'{TRUST_LEVEL_KEY} = "{TRUSTED}"\n{DIGEST_KEY} = "{project.digest}"\n'
    )


def _with_entry(text: str, project: ProjectConfig) -> str:
    """``text`` with the folder's table written by :func:`entry_text` replaced or added."""
    entry = entry_text(project)
    header = entry.splitlines()[0]
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if line.strip() == header), None)
    if start is None:
        gap = "" if not text else ("\n" if text.endswith("\n") else "\n\n")
        return f"{text}{gap}{entry}"
    end = next(
        (i for i in range(start + 1, len(lines)) if lines[i].lstrip().startswith("[")),
        len(lines),
    )
    tail = "".join(lines[end:])
    return "".join(lines[:start]) + entry + ("\n" + tail if tail else "")


def trust_project(project: ProjectConfig, home: Path | None = None) -> Path:
    """Record in the user config that ``project``, as it is now, is trusted."""
    user_file = user_config_file(home)
    if project.problem is not None:
        raise ConfigError(f"The project config {project.file} is {project.problem}.")
    try:
        text = user_file.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"Cannot read {user_file}: {exc}") from None
    new = _with_entry(text, project)
    try:
        entry = trust_list(tomllib.loads(new), user_file).get(str(project.folder))
    except tomllib.TOMLDecodeError:
        entry = None
    if _is_trusted(entry, project.digest) != (True, False):
        raise ConfigError(
            f"Cannot add the trust entry to {user_file} as it is written; add this table "
            f"by hand:\n{entry_text(project)}"
        )
    try:
        _replace(user_file, new)
    except OSError as exc:
        raise ConfigError(f"Cannot write {user_file}: {exc.strerror or exc}.") from None
    return user_file


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` at once (a new file is private to the user)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".config-", suffix=".toml")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o7777)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
