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
from collections.abc import Sequence
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
    return hmac.digest(key, _DOMAIN + canon, "sha256").hex()


def _body(record: dict[str, Any], prev: str, mixed: bool) -> dict[str, Any]:
    body = {k: v for k, v in record.items() if k not in (MAC, PREV, MIXED)}
    body[PREV] = prev
    if mixed:
        body[MIXED] = True
    return body


def seal(
    record: dict[str, Any], prev: str, key: bytes, *, mixed: bool = False
) -> tuple[dict[str, Any], str]:
    """``record`` (JSON values only, as it will be read back) with its ``prev`` and
    ``mac``, and its digest (the ``prev`` of the next line)."""
    body = _body(record, prev, mixed)
    canon = canonical(body)
    body[MAC] = _mac(canon, key)
    return body, hashlib.sha256(canon).hexdigest()


_MAC_AT, _END = b',"mac":"', b'"}'
_TAIL = len(_MAC_AT) + 2 * hashlib.sha256().digest_size + len(_END)


def seal_line(
    record: dict[str, Any], prev: str, key: bytes, *, mixed: bool = False
) -> tuple[bytes, str]:
    """``record`` sealed as :func:`seal` seals it, as the line to write (no newline), and
    its digest. The line is the very bytes the seal is taken over with the ``mac`` added
    last, so a reader checks it on its bytes (:func:`line_digest`) without parsing and
    canonicalising it; it parses to the same record as any other layout would."""
    if not isinstance(record.get("type"), str):  # else a reader would not take it as one
        raise TypeError(f"a session record needs a type: {sorted(record)}")
    canon = canonical(_body(record, prev, mixed))
    line = canon[:-1] + _MAC_AT + _mac(canon, key).encode() + _END  # (never "{}": it has prev)
    return line, hashlib.sha256(canon).hexdigest()


def line_digest(line: bytes, key: bytes) -> str | None:
    """The digest of ``line`` when it is one of ours laid out as :func:`seal_line` lays
    it out, its seal checked on its bytes; None when it is not (a line not ours, or one
    of ours written otherwise: :func:`provenance` checks the record it parses to).

    The same answer as checking the parsed record: our key only ever seals canonical
    bytes, so bytes whose seal holds are the canonical form of the record they parse to
    (without its ``mac``), which is what the seal and digest are taken over."""
    if len(line) <= _TAIL or not line.endswith(_END) or not line[:-_TAIL].startswith(b"{"):
        return None
    if line[-_TAIL : -_TAIL + len(_MAC_AT)] != _MAC_AT:
        return None
    canon = line[:-_TAIL] + b"}"
    given = line[-_TAIL + len(_MAC_AT) : -len(_END)]
    if not hmac.compare_digest(given, _mac(canon, key).encode()):
        return None
    return hashlib.sha256(canon).hexdigest()


def sealed(record: dict[str, Any], key: bytes) -> bool:
    """Whether this user's agent_magics wrote ``record`` (its ``mac`` verifies)."""
    return _given(record, _mac(canonical(record), key))


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
    linked: tuple[bool, ...] = ()
    """Per record: its ``prev`` names the record before it (whoever wrote it)."""

    @property
    def foreign(self) -> int:
        return self.ours.count(False)

    @property
    def yours(self) -> bool:
        return bool(self.ours) and self.foreign == 0 and not self.mixed


def provenance(
    records: list[dict[str, Any]],
    key: bytes,
    lines: Sequence[bytes] | None = None,
    digests: Sequence[str | None] | None = None,
) -> Provenance:
    """Check each record's seal and its link to the record before it. ``lines``: each
    record's line as read, whose seal is checked on its bytes when it is laid out as
    :func:`seal_line` lays it out (else on the record, canonicalised); ``digests``:
    what :func:`line_digest` gave for each line, when the reader has checked them."""
    ours: list[bool] = []
    linked: list[bool] = []
    breaks = 0
    mixed = False
    prev = START
    for index, record in enumerate(records):
        if digests is not None:
            after = digests[index]
        else:
            after = None if lines is None else line_digest(lines[index], key)
        mine = after is not None
        if after is None:
            mine, after = check_record(record, key)
        ours.append(mine)
        linked.append(record.get(PREV) == prev)
        if mine:
            breaks += not linked[-1]
            mixed = mixed or record.get(MIXED) is True
        prev = after
    return Provenance(tuple(ours), breaks, mixed, prev, tuple(linked))


def check_record(record: dict[str, Any], key: bytes) -> tuple[bool, str]:
    """Whether ``record`` is ours, and its digest ("?": one nested too deep to write back,
    which is not ours)."""
    try:
        canon = canonical(record)
    except (RecursionError, ValueError):
        return False, "?"
    return _given(record, _mac(canon, key)), hashlib.sha256(canon).hexdigest()


def _given(record: dict[str, Any], mac: str) -> bool:
    """Whether ``record``'s ``mac`` is ``mac`` (compared in constant time, which takes
    ASCII text only: a planted ``mac`` of other characters is simply not it)."""
    given = record.get(MAC)
    return isinstance(given, str) and given.isascii() and hmac.compare_digest(given, mac)
