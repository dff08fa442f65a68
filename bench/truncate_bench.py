"""What cutting a large command output to the model's budget costs: Codex's head + tail
truncation with its header (``formatted_truncate_text``, 10,000 tokens) against the
least any cut with that header can do: slicing the UTF-8 bytes on character boundaries,
decoding the two ends and counting the lines (the header's ``Total output lines``).

    .venv/bin/python bench/truncate_bench.py

Outputs are ``seq 1 N`` (1.3 MB and 10.9 MB of ASCII, as a command prints them) and the
same lines with an accented letter each (every cut then needs the encoded bytes).
"""

from __future__ import annotations

import statistics
import time

from agent_magics.tools.truncate import TruncationPolicy, formatted_truncate_text

POLICY = TruncationPolicy.tokens(10_000)
RUNS = 15
SIZES = {"1_3mb": 200_000, "10_9mb": 1_500_000}  # seq 1 N: 1,288,895 and 10,888,904 bytes


def seq_text(n: int, accented: bool = False) -> str:
    end = "é\n" if accented else "\n"
    return end.join(map(str, range(1, n + 1))) + end


def bare_slice(text: str, budget: int) -> tuple[str, str, int]:
    """Head and tail of ``budget // 2`` bytes each, moved back / forward to character
    boundaries, and the line count: encode once, slice twice, decode the two ends, count
    the newlines once."""
    data = text.encode()
    lines = data.count(b"\n")
    half = budget // 2
    head_end, tail_start = half, len(data) - (budget - half)
    while head_end > 0 and data[head_end] & 0xC0 == 0x80:
        head_end -= 1
    while tail_start < len(data) and data[tail_start] & 0xC0 == 0x80:
        tail_start += 1
    return data[:head_end].decode(), data[tail_start:].decode(), lines


def _once(fn: object, text: str) -> float:
    start = time.perf_counter()
    if fn is bare_slice:
        bare_slice(text, POLICY.byte_budget)
    else:
        formatted_truncate_text(text, POLICY)
    return time.perf_counter() - start


def truncate_costs(lines: int, accented: bool = False, runs: int = RUNS) -> dict[str, list[float]]:
    """Interleaved runs (seconds) of our cut and of the bare slice on the same text."""
    text = seq_text(lines, accented)
    ours: list[float] = []
    bare: list[float] = []
    for _ in range(runs):
        ours.append(_once(formatted_truncate_text, text))
        bare.append(_once(bare_slice, text))
    return {"candidate": ours, "baseline": bare, "bytes": [float(len(text.encode()))]}


ACCENTED = " (one accented letter a line)"
# (name, lines of seq, accented, target ratio). On ASCII text most of either side's time
# is counting the lines (a full scan).
ROWS = [
    ("truncate_output_1_3mb", 200_000, False, "<= 1.5"),
    ("truncate_output_10_9mb", 1_500_000, False, "<= 1.5"),
    ("truncate_output_10_9mb_utf8", 1_500_000, True, "<= 1.5"),
]


def _spread(values: list[float]) -> str:
    return "/".join(f"{x * 1e3:.3g}" for x in (min(values), statistics.median(values), max(values)))


def bench_truncation(quick: bool) -> list[dict[str, object]]:
    """Rows for ``bench/run.py``: value and baseline are medians in ms."""
    rows: list[dict[str, object]] = []
    for name, lines, accented, target in ROWS:
        got = truncate_costs(lines, accented, 5 if quick else RUNS)
        text = seq_text(lines, accented)
        start = time.perf_counter()
        text.count("\n")
        count_ms = (time.perf_counter() - start) * 1e3
        ours, bare = statistics.median(got["candidate"]), statistics.median(got["baseline"])
        rows.append(
            {
                "name": name,
                "target": target,
                "value": ours * 1e3,
                "unit": "ms",
                "ratio": ours / bare if bare > 0 else None,
                "baseline": bare * 1e3,
                "note": f"{got['bytes'][0] / 1e6:.1f} MB{ACCENTED if accented else ''}"
                f" to 10,000 tokens; counting its lines {count_ms:.2f} ms;"
                f" {len(got['candidate'])} interleaved runs, ms min/median/max:"
                f" ours {_spread(got['candidate'])}, slice and count {_spread(got['baseline'])}",
            }
        )
    return rows


if __name__ == "__main__":
    for name, n in SIZES.items():
        for accented in (False, True):
            got = truncate_costs(n, accented)
            c, b = statistics.median(got["candidate"]), statistics.median(got["baseline"])
            print(
                f"{name}{' accented' if accented else ''}: {got['bytes'][0]:,.0f} bytes, "
                f"ours {c * 1e3:.3f} ms, bare slice {b * 1e3:.3f} ms, {c / b:.2f}x"
            )
