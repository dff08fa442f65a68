"""A session file's lines: parsed into records, and checked as ours on their bytes.

A line of ours is laid out as :func:`.signing.seal_line` lays it out (the canonical
bytes its seal covers, the seal last), so its seal is checked without parsing it, and a
reader that resumes a session leaves the items before its last compaction unparsed. A
writer appending to a file learns from here where the file's chain ends and whether
lines not ours are in it (:func:`append_point`), once for bytes a reader just checked.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from agent_magics.store.signing import (
    MIXED,
    PREV,
    START,
    Provenance,
    check_record,
    line_digest,
)

COMPACTED = "compacted"
"""The conversation compacted: from this record on, the history is its
``replacement_history`` (wire items) followed by the ``item`` records after it."""
REPLACEMENT = "replacement_history"


def parse_lines(data: bytes) -> tuple[list[dict[str, Any]], list[int], bool]:
    """Records, the numbers of the lines that are not records, and whether the last
    line is torn (no newline at its end)."""
    records, _, bad, torn = parse_with_lines(data)
    return records, bad, torn


def parse_record(line: bytes) -> dict[str, Any] | None:
    """The record ``line`` holds (None: not a record: not JSON, or no ``type``)."""
    try:
        record = json.loads(line)
    except (ValueError, RecursionError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("type"), str) else None


def parse_with_lines(data: bytes) -> tuple[list[dict[str, Any]], list[bytes], list[int], bool]:
    """As :func:`parse_lines`, with each record's line as read (the second list)."""
    lines = data.split(b"\n")
    torn = bool(lines[-1].strip())
    records: list[dict[str, Any]] = []
    kept: list[bytes] = []
    bad: list[int] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        record = parse_record(line)
        if record is None:
            bad.append(number)
        else:
            records.append(record)
            kept.append(line)
    return records, kept, bad, torn


_read_last: tuple[bytes, str, bool] | None = None
"""What the last :func:`read_session` found of the bytes it read: their fingerprint
(with the key), the digest of their last record and whether they are untrusted. A
writer that opens the file it was just read from (a resume) takes the answer from here
instead of checking every line again."""


def _fingerprint(data: bytes, key: bytes) -> bytes:
    return hashlib.blake2b(data, key=hashlib.sha256(key).digest()).digest()


_ITEM_LINE = b'{"item":'
_ITEM_TAIL = re.compile(
    rb',"prev":"([0-9a-f]{64})"(,"turn":-?[0-9]+)?,"type":"item","mac":"[0-9a-f]{64}"\}$'
)
_MIXED_BEFORE = b',"mixed":true'
_TAIL_BYTES = 256  # more than the tail the pattern matches


def parse_since_compaction(
    data: bytes, key: bytes
) -> tuple[list[dict[str, Any]], list[bytes], list[int], bool, list[str | None]]:
    """As :func:`parse_with_lines`, with each line's digest when it is ours as :func:`seal_line`
    lays lines out; an ``item`` line of ours before the last ``compacted`` record of
    ours stands as its ``type``, ``prev`` and ``mixed``, read from its bytes (that
    layout sorts the keys, ``item``, ``mixed``, ``prev``, ``turn``, ``type``, and puts
    the seal last; a line that does not end as such a line does is parsed)."""
    raw = data.split(b"\n")
    torn = bool(raw[-1].strip())
    digests = [line_digest(line, key) if line.strip() else None for line in raw]
    start = _last_compaction_line(raw, digests, key)
    records: list[dict[str, Any]] = []
    kept: list[bytes] = []
    seals: list[str | None] = []
    bad: list[int] = []
    for number, (line, after) in enumerate(zip(raw, digests, strict=True), 1):
        if not line.strip():
            continue
        record: dict[str, Any] | None
        before = number - 1 < start and after is not None
        tail = _ITEM_TAIL.search(line, max(0, len(line) - _TAIL_BYTES)) if before else None
        if tail is not None and line.startswith(_ITEM_LINE):
            record = {"type": "item", PREV: tail.group(1).decode()}
            if line[: tail.start()].endswith(_MIXED_BEFORE):
                record[MIXED] = True
        else:
            record = parse_record(line)
        if record is None:
            bad.append(number)
            continue
        records.append(record)
        kept.append(line)
        seals.append(after)
    return records, kept, bad, torn, seals


def _last_compaction_line(raw: list[bytes], digests: list[str | None], key: bytes) -> int:
    """The index of the line of the last ``compacted`` record of ours whose replacement
    is a list (0 when there is none)."""
    for index in range(len(raw) - 1, -1, -1):
        line = raw[index]
        if b'"compacted"' not in line:
            continue
        record = parse_record(line)
        if record is None or record["type"] != COMPACTED:
            continue
        mine = digests[index] is not None or check_record(record, key)[0]
        if mine and isinstance(record.get(REPLACEMENT), list):
            return index
    return 0


def append_point(data: bytes, key: bytes) -> tuple[str, bool]:
    """What a writer appending to a file holding ``data`` needs of its provenance: the
    digest of its last record, and whether lines not ours, or lines of ours saying so
    (``mixed``), are in it. Lines of ours laid out as :func:`.signing.seal_line` lays
    them out are checked on their bytes and not parsed (unless one may say ``mixed``:
    at its top level only where its canonical bytes hold ``"mixed":true``). The same
    bytes just read under the same key are not checked twice."""
    known = _read_last
    if known is not None and known[0] == _fingerprint(data, key):
        return known[1], known[2]
    last, untrusted = START, False
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        after = line_digest(line, key)
        if after is not None:
            says_mixed = b'"mixed":true' in line and not untrusted
            untrusted = untrusted or (says_mixed and (parse_record(line) or {}).get(MIXED) is True)
            last = after
            continue
        record = parse_record(line)
        if record is not None:
            mine, last = check_record(record, key)
            untrusted = untrusted or not mine or record.get(MIXED) is True
    return last, untrusted


def remember_checked(data: bytes, key: bytes, found: Provenance) -> None:
    """What a reader found of ``data`` under ``key``, for a writer that opens it next."""
    global _read_last
    _read_last = (_fingerprint(data, key), found.last, found.foreign > 0 or found.mixed)
