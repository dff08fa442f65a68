"""The per-user key, and the seal every line of a session file we write carries.

A session file sits in the working folder, which may be a cloned repository: anyone can
plant one there, or write lines into one of ours. Each line we write carries ``prev``
(the digest of the record before it in the file, ``""`` for the first) and ``mac``, an
HMAC-SHA256 under this user's key of the line with its ``prev``. So a line vouches for
itself and for the exact record it follows; a line we did not write has no valid
``mac``. Reading a file back (:func:`provenance`) tells apart:

* lines that are ours, and lines that are not (planted, or written under another key);
* ours that do not follow what they followed when written (two processes appended at
  once, or lines were cut out or moved);
* ours written after lines that were not ours (``mixed``: a foreign file resumed).

A file is *yours* only when every line is ours and none is ``mixed``: only then may it
give its settings (model server, approval policy, sandbox...) to a resumed session, and
only then does ``resume last`` pick it. Appending to a file never makes the lines before
it ours: a resumed foreign file stays foreign.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_magics.tools.sandbox.user_files import SIGNING_KEY, signing_key_path

KEY_FILE = SIGNING_KEY
KEY_BYTES = 32


def key_path(home: Path | None = None) -> Path:
    """Where the key lives: one place, which the sandbox hides from commands and the
    redaction knows (:mod:`agent_magics.tools.sandbox.user_files`)."""
    return signing_key_path(home)


def session_key(home: Path | None = None) -> bytes:
    """This user's signing key, made (mode 0600) on first use. The file appears whole
    or not at all (written aside, then linked in place), so a process that reads it
    while another makes it never sees a short key."""
    path = key_path(home)
    key, damaged = _read_key(path)
    if key is not None:
        return key
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = secrets.token_bytes(KEY_BYTES)
    aside = path.with_name(f".{KEY_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(aside, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(key.hex() + "\n")
        if damaged:  # a new key: files the damaged one signed no longer verify
            os.replace(aside, path)
            return key
        try:
            os.link(aside, path)
        except FileExistsError:  # another process made it first: use theirs
            theirs, _ = _read_key(path)
            if theirs is not None:
                return theirs
            os.replace(aside, path)
        return key
    finally:
        aside.unlink(missing_ok=True)


def _read_key(path: Path) -> tuple[bytes | None, bool]:
    """The key in ``path`` (None when there is none or it is not a whole key), and
    whether a file is there that is not a whole key (damaged), read in one go."""
    try:
        key = bytes.fromhex(path.read_text().strip())
    except FileNotFoundError:
        return None, False
    except ValueError:
        return None, True
    return (key, False) if len(key) == KEY_BYTES else (None, True)


MAC = "mac"
PREV = "prev"
MIXED = "mixed"
START = ""
"""The ``prev`` of a file's first record."""
_DOMAIN = b"agent_magics session line 2\0"


def canonical(record: dict[str, Any]) -> bytes:
    """``record`` without its ``mac``, as the bytes its seal and digest are taken over
    (JSON with sorted keys: the same for the record written and the record read back)."""
    body = {k: v for k, v in record.items() if k != MAC}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def digest(record: dict[str, Any]) -> str:
    """What the next line names as its ``prev``: the SHA-256 of ``record``'s content."""
    return hashlib.sha256(canonical(record)).hexdigest()


def _mac(canon: bytes, key: bytes) -> str:
    return hmac.new(key, _DOMAIN + canon, hashlib.sha256).hexdigest()


def seal(
    record: dict[str, Any], prev: str, key: bytes, *, mixed: bool = False
) -> tuple[dict[str, Any], str]:
    """``record`` (JSON values only, as it will be read back) with its ``prev`` and
    ``mac``, and its digest (the ``prev`` of the next line)."""
    body = {k: v for k, v in record.items() if k not in (MAC, PREV, MIXED)}
    body[PREV] = prev
    if mixed:
        body[MIXED] = True
    canon = canonical(body)
    body[MAC] = _mac(canon, key)
    return body, hashlib.sha256(canon).hexdigest()


def sealed(record: dict[str, Any], key: bytes) -> bool:
    """Whether this user's agent_magics wrote ``record`` (its ``mac`` verifies)."""
    given = record.get(MAC)
    return isinstance(given, str) and hmac.compare_digest(given, _mac(canonical(record), key))


@dataclass(frozen=True)
class Provenance:
    """Who wrote a file's records (see the module's docstring)."""

    ours: tuple[bool, ...]
    """Per record: written by this user's agent_magics."""
    breaks: int = 0
    """Records of ours that do not follow the record they followed when written."""
    mixed: bool = False
    """A record of ours says lines not ours came before it."""
    last: str = START
    """The digest of the last record: the ``prev`` of the next one written."""

    @property
    def foreign(self) -> int:
        return self.ours.count(False)

    @property
    def yours(self) -> bool:
        return bool(self.ours) and self.foreign == 0 and not self.mixed


def provenance(records: list[dict[str, Any]], key: bytes) -> Provenance:
    """Check each record's seal and its link to the record before it."""
    ours: list[bool] = []
    breaks = 0
    mixed = False
    prev = START
    for record in records:
        given = record.get(MAC)
        try:
            canon = canonical(record)
        except (RecursionError, ValueError):  # nested too deep to write back: not ours
            ours.append(False)
            prev = "?"
            continue
        mine = isinstance(given, str) and hmac.compare_digest(given, _mac(canon, key))
        after = hashlib.sha256(canon).hexdigest()
        ours.append(mine)
        if mine:
            breaks += record.get(PREV) != prev
            mixed = mixed or record.get(MIXED) is True
        prev = after
    return Provenance(tuple(ours), breaks, mixed, prev)
