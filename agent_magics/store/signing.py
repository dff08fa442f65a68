"""The per-user key that signs the settings line of every session file we write.

A session file sits in the working folder, which may be a cloned repository: anyone can
plant one there. Only a file whose ``session_meta`` line carries a valid HMAC-SHA256
under this user's key was written by this user's agent_magics, so only such a file may
give its settings (model server, approval policy, sandbox...) to a resumed session.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

KEY_FILE = "session_key"
KEY_BYTES = 32
SIGNATURE = "signature"


def key_path(home: Path | None = None) -> Path:
    return (home or Path.home()) / ".agent_magics" / KEY_FILE


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


def _canonical(record: dict[str, Any]) -> bytes:
    body = {k: v for k, v in record.items() if k != SIGNATURE}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sign(record: dict[str, Any], key: bytes) -> str:
    """The hex HMAC-SHA256 of ``record`` without its signature field."""
    return hmac.new(key, _canonical(record), hashlib.sha256).hexdigest()


def verify(record: dict[str, Any], key: bytes) -> bool:
    given = record.get(SIGNATURE)
    return isinstance(given, str) and hmac.compare_digest(given, sign(record, key))
