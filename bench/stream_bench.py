"""Streaming throughput: 20k text deltas through our client and session vs raw httpx.

A loopback server on 127.0.0.1 answers every POST with the same pre-encoded SSE body:
one assistant message streamed as 20 000 one-character deltas (Responses events, or
Chat Completions chunks). The candidate is a whole session turn (request built from the
history, client, SSE parsing, event mapping, a subscribed sink, history update); the
baseline POSTs the same request body with ``httpx.AsyncClient`` and iterates the
response's lines, doing nothing with them. Both keep their connection pool warm; the
median of several runs is compared.

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
from agent_magics.models._sse import SseParser
from agent_magics.testing import PayloadServer, encode_sse, message, response_events

DELTAS = 20_000
TARGET = "<= 1.3"


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


async def measure(provider: str, payload: bytes, runs: int) -> tuple[float, float, str, str]:
    """Median seconds of a session turn and of raw line iteration, the text the
    session's subscriber saw in text deltas (those that arrive in one network read reach
    it as one event), and the final message of the turn."""
    server = PayloadServer(payload)
    endpoint = "responses" if provider == "responses" else "chat/completions"
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
            ours, base = [], []
            for _ in range(runs + 1):  # the first round warms both pools up
                session.reset()
                deltas.clear()
                start = time.perf_counter()
                result = await session.run_turn("go")
                ours.append(time.perf_counter() - start)
                seen, final = "".join(deltas), result.final_text
                start = time.perf_counter()
                async with raw.stream("POST", url, content=body, headers=headers) as response:
                    async for _line in response.aiter_lines():
                        pass
                base.append(time.perf_counter() - start)
            await raw.aclose()
            await session.aclose()
    finally:
        server.close()
    return statistics.median(ours[1:]), statistics.median(base[1:]), seen, final


async def measure_floor(payload: bytes, runs: int) -> tuple[float, float]:
    """Median seconds of the least any JSON-reading client must do (read the bytes, find
    the data lines, ``json.loads`` them in one call per read), and of the baseline."""
    server = PayloadServer(payload)
    url = f"{server.base_url}/responses"
    raw = httpx.AsyncClient(timeout=60)
    floor, base = [], []
    try:
        for _ in range(runs + 1):
            start = time.perf_counter()
            parser = SseParser()
            async with raw.stream("POST", url, content=b"{}") as response:
                async for chunk in response.aiter_bytes():
                    datas = parser.feed_data(chunk)
                    if datas:
                        json.loads(b"[" + b",".join(datas) + b"]")
            floor.append(time.perf_counter() - start)
            start = time.perf_counter()
            async with raw.stream("POST", url, content=b"{}") as response:
                async for _line in response.aiter_lines():
                    pass
            base.append(time.perf_counter() - start)
    finally:
        await raw.aclose()
        server.close()
    return statistics.median(floor[1:]), statistics.median(base[1:])


def bench_streaming(quick: bool) -> list[dict[str, Any]]:
    """Rows: name, value (ms of the session turn), unit, ratio (vs raw httpx), target."""
    runs = 3 if quick else 9
    rows = []
    for provider, payload in (
        ("responses", responses_payload(DELTAS)),
        ("chat", chat_payload(DELTAS)),
    ):
        ours, base, seen, final = asyncio.run(measure(provider, payload, runs))
        if seen != "x" * DELTAS or final != seen:
            raise RuntimeError(
                f"{provider}: the session saw {len(seen)} characters of text deltas and a "
                f"final message of {len(final)}, not {DELTAS} x's each"
            )
        rows.append(
            {
                "name": f"stream_20k_deltas_{provider}",
                "value": round(ours * 1e3, 1),
                "unit": "ms",
                "ratio": round(ours / base, 3),
                "target": TARGET,
                "baseline": round(base * 1e3, 1),
                "note": f"session turn vs httpx aiter_lines, {len(payload) >> 10} KiB; "
                f"median of {runs}",
            }
        )
    floor, base = asyncio.run(measure_floor(responses_payload(DELTAS), runs))
    rows.append(
        {
            "name": "stream_20k_deltas_json_floor",
            "value": round(floor * 1e3, 1),
            "unit": "ms",
            "ratio": round(floor / base, 3),
            "target": "",
            "baseline": round(base * 1e3, 1),
            "note": "reference, not a target: reading the Responses stream and json.loads of "
            "every event, nothing else",
        }
    )
    return rows


if __name__ == "__main__":
    for row in bench_streaming("--quick" in sys.argv):
        print(json.dumps(row))
