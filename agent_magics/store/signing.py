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
    """This user's signing key, made (mode 0600) on first use."""
    path = key_path(home)
    try:
        return bytes.fromhex(path.read_text().strip())
    except FileNotFoundError:
        pass
    except ValueError:  # not hex: a damaged key file signs nothing we wrote before
        path.unlink()
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = secrets.token_bytes(KEY_BYTES)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first: use theirs
        return bytes.fromhex(path.read_text().strip())
    with os.fdopen(fd, "w") as out:
        out.write(key.hex() + "\n")
    return key


def _canonical(record: dict[str, Any]) -> bytes:
    body = {k: v for k, v in record.items() if k != SIGNATURE}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def sign(record: dict[str, Any], key: bytes) -> str:
    """The hex HMAC-SHA256 of ``record`` without its signature field."""
    return hmac.new(key, _canonical(record), hashlib.sha256).hexdigest()


def verify(record: dict[str, Any], key: bytes) -> bool:
    given = record.get(SIGNATURE)
    return isinstance(given, str) and hmac.compare_digest(given, sign(record, key))
