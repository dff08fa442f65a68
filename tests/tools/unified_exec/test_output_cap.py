"""Large command outputs: byte-level truncation, the 1 MiB collection cap and its
omission marker, and which counts use the raw bytes and which the decoded text."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from agent_magics.tools.context import SessionServices
from agent_magics.tools.handlers.unified_exec import ExecCommandHandler, WriteStdinHandler
from agent_magics.tools.truncate import (
    TruncationPolicy,
    formatted_truncate_text,
    split_string,
    truncate_text,
)
from agent_magics.tools.unified_exec.buffer import OUTPUT_CAPACITY, Collected, HeadTailBuffer
from agent_magics.tools.unified_exec.format import model_output, output_policy, unified_response
from tests.helpers.tools import run_shell_tool, session_of

# -- split_string on bytes is the character walk Codex does -------------------------------


def _walk(text: str, prefix_bytes: int, suffix_bytes: int) -> tuple[int, str, str]:
    """Codex's ``split_string``, one character at a time (the reference)."""
    sizes = [len(ch.encode("utf-8", "surrogatepass")) for ch in text]
    tail_target = max(sum(sizes) - suffix_bytes, 0)
    head_end, tail_start, pos = 0, len(text), 0
    for i, size in enumerate(sizes):
        if pos + size <= prefix_bytes:
            head_end = i + 1
        elif pos >= tail_target and tail_start == len(text):
            tail_start = i
        pos += size
    return tail_start - head_end, text[:head_end], text[tail_start:]


ALPHABET = ["a", "\n", "é", "€", "😀", "\u0301", "\ud800"]  # 1 to 4 bytes, a lone surrogate


def test_split_string_matches_the_character_walk() -> None:
    rnd = random.Random(15)
    for _ in range(20_000):
        text = "".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(0, 12)))
        prefix, suffix = rnd.randint(0, 30), rnd.randint(0, 30)
        assert split_string(text, prefix, suffix) == _walk(text, prefix, suffix), (
            text,
            prefix,
            suffix,
        )


def test_text_with_a_lone_surrogate_is_cut_not_refused() -> None:
    text = "ab\ud800cd" * 4  # a kernel output decoded with surrogateescape can hold one
    assert truncate_text(text, TruncationPolicy.bytes(10)) == "ab\ud800…14 chars truncated…\ud800cd"
    assert formatted_truncate_text(text, TruncationPolicy.bytes(8)).startswith(
        "Total output lines: 1\n\n"
    )


# -- the collection cap -----------------------------------------------------------------


def test_cap_counts_what_it_drops_and_marks_where() -> None:
    buf = HeadTailBuffer(capacity=6)
    buf.push(b"abc")
    buf.push(b"defghi")
    got = buf.collected()
    assert got == Collected(b"abc\n... 3 bytes omitted ...\nghi", 3, 9)
    assert (len(buf), buf.dropped, buf.total) == (0, 0, 0)
    buf.push(b"new")
    assert buf.collected() == Collected(b"new", 0, 3)


def test_drops_of_the_process_buffer_are_added_to_the_wait() -> None:
    process = HeadTailBuffer(capacity=4)
    process.push(b"0123456789")
    kept, dropped = process.snapshot(), process.dropped
    wait = HeadTailBuffer(capacity=4)
    wait.push_drained(kept, dropped)
    assert wait.collected() == Collected(b"01\n... 6 bytes omitted ...\n89", 6, 10)


# -- what the model reads -----------------------------------------------------------------

TOKENS_5 = TruncationPolicy.tokens(5)  # 20 bytes


@pytest.mark.parametrize(
    ("text", "omitted", "policy", "want"),
    [
        pytest.param("short", 0, TOKENS_5, "short", id="fits"),
        pytest.param(
            "x" * 30,
            0,
            TOKENS_5,
            "Warning: truncated output (original token count: 8)\nTotal output lines: 1\n\n"
            + "x" * 10
            + "…3 tokens truncated…"
            + "x" * 10,
            id="cut-counts-lines",
        ),
        pytest.param(
            "h" * 30 + "\n... 7 bytes omitted ...\n" + "t" * 30,
            7,
            TOKENS_5,
            "Warning: truncated output (original token count: 99)\n... 7 bytes omitted ...\n\n"
            + "h" * 10
            + "…17 tokens truncated…"
            + "t" * 10,
            id="cap-marker-restated-under-the-header",
        ),
        pytest.param(
            "h\n... 7 bytes omitted ...\nt",
            7,
            TruncationPolicy.bytes(1000),
            "h\n... 7 bytes omitted ...\nt",
            id="fits-with-its-marker",
        ),
        pytest.param(
            "ht",
            7,
            TruncationPolicy.bytes(1000),
            "... 7 bytes omitted ...\nht",
            id="fits-marker-lost",
        ),
        pytest.param(
            "... 7 bytes omitted ...\n" + "t" * 60,
            7,
            TruncationPolicy.bytes(60),
            "Warning: truncated output (original token count: 99)\n\n"
            "... 7 bytes omitted ...\n" + "t" * 6 + "…24 chars truncated…" + "t" * 30,
            id="cut-keeps-the-marker",
        ),
    ],
)
def test_model_output(text: str, omitted: int, policy: TruncationPolicy, want: str) -> None:
    assert model_output(text, omitted, 99, policy) == want


def test_original_token_count_counts_raw_bytes_and_the_warning_decoded_text() -> None:
    """60,000 bytes of 0xff decode to 60,000 U+FFFD (180,000 bytes): Codex's header counts
    the bytes the command wrote, its warning the text it cut (as recorded from 0.169.0)."""
    text = unified_response(
        chunk_id="c",
        wall_time=0.0,
        exit_code=0,
        session_id=None,
        output=Collected(b"\xff" * 60_000, 0, 60_000),
        policy=TruncationPolicy.tokens(10_000),
    )
    assert "\nOriginal token count: 15000\n" in text
    assert "\nWarning: truncated output (original token count: 45000)\n" in text


def test_the_call_budget_never_exceeds_the_turn() -> None:
    turn = TruncationPolicy.tokens(10_000)
    assert output_policy(20_000, turn) == turn
    assert output_policy(5, turn) == TruncationPolicy.tokens(5)
    assert output_policy(5_000, TruncationPolicy.bytes(100)) == TruncationPolicy.bytes(100)


# -- a real command ----------------------------------------------------------------------


@pytest.mark.slow
async def test_a_poll_over_one_mib_says_how_much_it_dropped(
    services: SessionServices, tmp_path: Path
) -> None:
    """The output arrives in a later write_stdin poll: the same cap and marker apply."""
    start = {"cmd": "sleep 0.5; seq 1 200000", "yield_time_ms": 250, "login": False}
    sid = session_of(await run_shell_tool(ExecCommandHandler(), start, services, tmp_path))
    poll = {"session_id": sid, "yield_time_ms": 10_000}
    text = await run_shell_tool(WriteStdinHandler(), poll, services, tmp_path)
    dropped = 1_288_895 - OUTPUT_CAPACITY  # seq 1 200000 writes 1,288,895 bytes
    assert "\nOriginal token count: 322224\nOutput:\n" in text
    assert (
        "\nWarning: truncated output (original token count: 322224)\n"
        f"... {dropped} bytes omitted ...\n\n1\n2\n3\n"
    ) in text
    assert text.endswith("199999\n200000\n")
