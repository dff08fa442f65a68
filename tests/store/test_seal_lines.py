"""Seals checked on a line's bytes give the answer the parsed record gives: on lines we
write now, lines of ours written before (another layout), planted lines laid out as
ours, lines of ours edited, and a writer appending to each."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_magics import SessionConfig
from agent_magics.store import read_session
from agent_magics.store.lines import append_point, parse_with_lines
from agent_magics.store.log import SessionLog
from agent_magics.store.signing import (
    MAC,
    digest,
    line_digest,
    provenance,
    seal,
    seal_line,
    session_key,
)
from agent_magics.testing import message

KEY = b"k" * 32
OTHER = b"o" * 32
RECORD = {"type": "item", "turn": 1, "item": message('héllo \u2028 "quoted"\n')}


def old_layout(record: dict[str, Any], prev: str, key: bytes, **kw: Any) -> bytes:
    """A line as agent_magics wrote it before lines were laid out for checking."""
    body, _ = seal(record, prev, key, **kw)
    return json.dumps(body, ensure_ascii=False).encode()


def test_a_line_we_write_is_checked_on_its_bytes_and_parses_to_its_record() -> None:
    line, after = seal_line(RECORD, "", KEY)
    record = json.loads(line)
    assert line_digest(line, KEY) == after == digest(record)
    assert provenance([record], KEY).ours == (True,)
    assert {k: v for k, v in record.items() if k not in (MAC, "prev")} == RECORD
    assert line_digest(line, OTHER) is None  # another user's key
    assert line_digest(old_layout(RECORD, "", KEY), KEY) is None  # checked parsed instead


def edits(line: bytes) -> list[bytes]:
    """Lines made from one of ours by hand that say something else: a value changed, a
    key added before or after the seal."""
    return [
        line.replace(b'"turn":1', b'"turn":2'),
        line.replace(b'{"item"', b'{"evil":1,"item"', 1),
        line[:-1] + b',"evil":1}',
    ]


def relaid(line: bytes) -> list[bytes]:
    """Lines made from one of ours that hold the same record: the seal moved first,
    spaces put in. Still ours (checked parsed, as before lines were laid out)."""
    record = json.loads(line)
    first = {MAC: record.pop(MAC), **record}
    return [json.dumps(first, ensure_ascii=False).encode(), line[:-1] + b" }", b" " + line]


def test_lines_of_every_kind_get_the_answer_their_parsed_records_get(tmp_path: Path) -> None:
    ours, after = seal_line({"type": "session_meta"}, "", KEY)
    mixed, after2 = seal_line({"type": "note", "text": '"mixed":true'}, after, KEY, mixed=True)
    nested, _ = seal_line({"type": "item", "item": {"mixed": True}}, after2, KEY)
    planted_as_ours = seal_line({"type": "item", "item": message("x")}, after, OTHER)[0]
    lines = [
        ours,
        old_layout({"type": "turn_started", "turn": 1}, after, KEY),
        *edits(seal_line(RECORD, after, KEY)[0]),
        *relaid(seal_line(RECORD, after, KEY)[0]),
        planted_as_ours,
        mixed,
        nested,
        json.dumps({"type": "item", MAC: "é" * 64}).encode(),  # not ASCII: not a seal
        b'{"type": "note"}',
    ]
    for count in range(1, len(lines) + 1):
        data = b"\n".join(lines[:count]) + b"\n"
        records, raw, bad, _ = parse_with_lines(data)
        assert not bad
        by_bytes, parsed = provenance(records, KEY, raw), provenance(records, KEY)
        assert by_bytes == parsed, count
        expected = (parsed.last, parsed.mixed or parsed.foreign > 0)
        assert append_point(data, KEY) == expected
        # a writer opening the file just read takes the reader's answer: the same one
        (tmp_path / "s.jsonl").write_bytes(data)
        read_session(tmp_path / "s.jsonl", key=KEY)
        assert append_point(data, KEY) == expected
        other = provenance(records, OTHER, raw)  # not for another key
        assert append_point(data, OTHER) == (other.last, other.mixed or other.foreign > 0)
    assert parsed.ours == (True, True, *[False] * 3, *[True] * 3, False, True, True, False, False)
    assert parsed.mixed  # said at the top level of a line of ours, not in its text


@pytest.mark.parametrize("edit", range(3))
def test_a_line_of_ours_edited_in_the_file_is_not_ours(tmp_path: Path, edit: int) -> None:
    key = session_key(tmp_path)
    log = SessionLog.open(tmp_path, "s", SessionConfig(cwd=tmp_path), str, key=key)
    log.write(RECORD)
    log.close()
    path = tmp_path / "s.jsonl"
    meta, line = path.read_bytes().splitlines()
    path.write_bytes(meta + b"\n" + edits(line)[edit] + b"\n")
    loaded = read_session(path, key=key)
    assert not loaded.verified and loaded.provenance.ours == (True, False)
    SessionLog.open(tmp_path, "s", SessionConfig(cwd=tmp_path), str, key=key).close()
    appended = json.loads(path.read_bytes().splitlines()[-1])
    assert appended["mixed"] is True  # written after a line not ours, and says so
