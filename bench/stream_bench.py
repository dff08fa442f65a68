"""Streaming throughput: 20k text deltas through our client and session vs the least
any JSON-reading client must do.

A loopback server on 127.0.0.1 answers every POST with the same pre-encoded SSE body:
one assistant message streamed as 20 000 one-character deltas (Responses events, or
Chat Completions chunks). The candidate is a whole session turn (request built from the
history, client, SSE parsing, event mapping, a subscribed sink, history update); the
baseline, the "json floor", reads the same stream with ``httpx.AsyncClient`` and calls
``json.loads`` once per payload, nothing else. Raw ``aiter_bytes`` over the same stream
is measured too and shown as a reference. All keep their connection pool warm; the
median of several interleaved runs is compared.

    python bench/stream_bench.py [--quick]
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, if not installed

import httpx

from agent_magics import Session, SessionConfig
from agent_magics.events import Event, TextDelta
from agent_magics.testing import PayloadServer, encode_sse, message, response_events

DELTAS = 20_000
TARGET = "<= 1.5"


def responses_payload(n: int) -> bytes:
    return encode_sse(response_events([message("x" * n, "msg_bench")], chunk=1))


def chat_payload(n: int) -> bytes:
    head = {"id": "chatcmpl-b", "object": "chat.completion.chunk", "created": 0, "model": "b"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return f"data: {json.dumps({**head, 'choices': [choice]})}\n\n"

    body = [chunk({"role": "assistant", "content": ""})]
    body += [chunk({"content": "x"})] * n
    body.append(chunk({}, "stop"))
    body.append("data: [DONE]\n\n")
    return "".join(body).encode()


async def json_floor(response: httpx.Response) -> int:
    """The least a client that reads the payloads must do: find each ``data:`` line
    and ``json.loads`` it; the number of payloads read."""
    count = 0
    rest = b""
    async for chunk in response.aiter_bytes():
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            if line.startswith(b"data: ") and line != b"data: [DONE]":
                json.loads(line[6:])
                count += 1
    return count


async def raw_bytes(response: httpx.Response) -> int:
    """Reading the body and nothing else."""
    size = 0
    async for chunk in response.aiter_bytes():
        size += len(chunk)
    return size


async def measure(provider: str, payload: bytes, runs: int) -> tuple[dict[str, float], str, str]:
    """Median seconds of a session turn, of the json floor and of raw ``aiter_bytes``;
    the text the session's subscriber saw in text deltas (those that arrive in one
    network read reach it as one event), and the final message of the turn."""
    server = PayloadServer(payload)
    endpoint = "responses" if provider == "responses" else "chat/completions"
    times: dict[str, list[float]] = {"ours": [], "floor": [], "bytes": []}
    try:
        with tempfile.TemporaryDirectory() as folder:
            config = SessionConfig(
                model="bench",
                provider=provider,
                base_url=server.base_url,
                api_key="sk-bench-not-a-key",
                cwd=Path(folder),
                shell_type="disabled",
            )
            session = Session(config)
            deltas: list[str] = []

            def sink(event: Event) -> None:
                if isinstance(event, TextDelta):
                    deltas.append(event.delta)

            session.subscribe(sink)
            body = json.dumps(session.client.body(session.request())).encode()  # type: ignore[attr-defined]
            raw = httpx.AsyncClient(timeout=60)
            url = f"{server.base_url}/{endpoint}"
            headers = {"content-type": "application/json", "accept": "text/event-stream"}
            for run in range(runs + 1):  # the first round warms the pools up
                session.reset()
                deltas.clear()
                start = time.perf_counter()
                result = await session.run_turn("go")
                ours = time.perf_counter() - start
                seen, final = "".join(deltas), result.final_text
                sides = {"ours": ours}
                for name, read in (("floor", json_floor), ("bytes", raw_bytes)):
                    start = time.perf_counter()
                    async with raw.stream("POST", url, content=body, headers=headers) as response:
                        await read(response)
                    sides[name] = time.perf_counter() - start
                if run:
                    for name, seconds in sides.items():
                        times[name].append(seconds)
            await raw.aclose()
            await session.aclose()
    finally:
        server.close()
    medians = {name: statistics.median(values) for name, values in times.items()}
    return medians, seen, final


def bench_streaming(quick: bool) -> list[dict[str, Any]]:
    """Rows: name, value (ms of the session turn), unit, ratio (vs the json floor),
    target; the note gives the ratio against raw ``aiter_bytes``."""
    runs = 3 if quick else 9
    rows = []
    for provider, payload in (
        ("responses", responses_payload(DELTAS)),
        ("chat", chat_payload(DELTAS)),
    ):
        times, seen, final = asyncio.run(measure(provider, payload, runs))
        if seen != "x" * DELTAS or final != seen:
            raise RuntimeError(
                f"{provider}: the session saw {len(seen)} characters of text deltas and a "
                f"final message of {len(final)}, not {DELTAS} x's each"
            )
        ours, floor, raw = times["ours"], times["floor"], times["bytes"]
        rows.append(
            {
                "name": f"stream_20k_deltas_{provider}",
                "value": round(ours * 1e3, 1),
                "unit": "ms",
                "ratio": round(ours / floor, 3),
                "target": TARGET,
                "baseline": round(floor * 1e3, 1),
                "note": f"session turn vs json.loads per payload; "
                f"{ours / raw:.2f}x raw aiter_bytes ({raw * 1e3:.1f} ms); "
                f"{len(payload) >> 10} KiB, median of {runs}",
            }
        )
    return rows


if __name__ == "__main__":
    for row in bench_streaming("--quick" in sys.argv):
        print(json.dumps(row))
