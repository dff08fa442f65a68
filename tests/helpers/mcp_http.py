"""The demo MCP server of the tests over streamable HTTP on 127.0.0.1, as a process."""

from __future__ import annotations

import select
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.paths import MCP_SERVERS

DEMO = MCP_SERVERS / "demo_server.py"
GUARD_S = 60  # it starts in about a second unless something hangs


@dataclass
class HttpServer:
    url: str
    process: subprocess.Popen[str]


def start_http_server(log: Path) -> HttpServer:
    with log.open("w") as errors:
        process = subprocess.Popen(
            [sys.executable, str(DEMO), "--http"], stdout=subprocess.PIPE, stderr=errors, text=True
        )
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], GUARD_S)
    line = process.stdout.readline() if ready else ""
    if not line.startswith("listening on "):
        process.kill()
        process.wait()
        process.stdout.close()
        pytest.fail(f"the HTTP demo server did not start: {log.read_text()}")
    return HttpServer(f"http://127.0.0.1:{int(line.split()[-1])}/mcp", process)


def stop_http_server(server: HttpServer) -> None:
    server.process.terminate()
    server.process.wait()
    assert server.process.stdout is not None
    server.process.stdout.close()
