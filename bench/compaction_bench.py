"""A long conversation with and without compaction: 300 turns of a notebook-sized
exchange (a 1.2 KB prompt, a 0.8 KB answer) through a real ``Session`` against a model
on 127.0.0.1 whose window is 32k tokens and which reports each request's size as its
usage. Rows: the request's bytes and the agent's CPU per turn (the loop thread's own
CPU time, not the server's) at turns 281-300 over turns 21-40.

    .venv/bin/python bench/compaction_bench.py [--turns N]

Candidate: compaction on (``model_context_window=32768``). Baseline: the same session
with no window known and a server that never says the window is full (what a
conversation costs when it only grows: the cost compaction bounds).
"""

from __future__ import annotations

import argparse
import asyncio
import http.server
import json
import socket
import statistics
import tempfile
import threading
import time
from typing import Any

from agent_magics.agent.session import Session
from agent_magics.config import build_config
from agent_magics.testing import encode_sse, response_events

WINDOW = 32_768
PROMPT = "Look at the next part of the data and tell me what stands out. " + "x" * 1140
ANSWER = "Here is what stands out in this part. " + "y" * 760


class Model:
    """Answers every request; usage = the request's bytes / 4 (+ the answer's)."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        model = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = json.loads(raw)
                model.sizes.append(len(raw))
                text = "Summary: parts looked at so far." if not body.get("tools") else ANSWER
                item = {"type": "message", "role": "assistant", "id": "m"}
                item["content"] = [{"type": "output_text", "text": text}]
                events = list(response_events([item]))
                total = len(raw) // 4 + len(text) // 4
                events[-1]["response"]["usage"] = {
                    "input_tokens": len(raw) // 4,
                    "output_tokens": len(text) // 4,
                    "total_tokens": total,
                }
                payload = encode_sse(iter(events))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


async def conversation(turns: int, window: int | None) -> tuple[list[float], list[int]]:
    """CPU seconds of each turn, and the bytes of each turn's (last) request."""
    model = Model()
    with tempfile.TemporaryDirectory() as folder:
        settings: dict[str, Any] = {
            "base_url": model.url,
            "api_key": "sk-bench",
            "model": "local-model",
            "cwd": folder,
            "sessions_dir": False,
            "approval_policy": "never",
            "sandbox_mode": "danger-full-access",
        }
        if window:
            settings["model_context_window"] = window
        session = Session(build_config(settings))
        cpu, sizes = [], []
        for _ in range(turns):
            start = time.thread_time()
            await session.run_turn(PROMPT)
            cpu.append(time.thread_time() - start)
            sizes.append(model.sizes[-1])
        await session.aclose()
    model.httpd.shutdown()
    return cpu, sizes


def ratio(values: list[float] | list[int], turns: int) -> tuple[float, float, float]:
    early = statistics.median(values[20:40])
    late = statistics.median(values[turns - 20 : turns])
    return early, late, late / early


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=300)
    turns = parser.parse_args().turns
    for name, window in (("compaction (candidate)", WINDOW), ("no compaction (baseline)", None)):
        cpu, sizes = asyncio.run(conversation(turns, window))
        b30, b300, bytes_ratio = ratio(sizes, turns)
        c30, c300, cpu_ratio = ratio(cpu, turns)
        print(
            f"{name}: request bytes {b30:,.0f} -> {b300:,.0f} (x{bytes_ratio:.2f}); "
            f"CPU per turn {c30 * 1000:.2f} -> {c300 * 1000:.2f} ms (x{cpu_ratio:.2f})"
        )
    print(f"target: both ratios <= 1.2 with compaction (turn {turns} over turn 30)")


if __name__ == "__main__":
    main()
