"""The Responses client against a real loopback server with injected faults."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agent_magics.errors import ConnectionFailed, ModelError
from agent_magics.models.base import (
    Completed,
    ItemDone,
    ModelRequest,
    OutputTextDelta,
    StreamFailed,
)
from agent_magics.models.responses import ResponsesClient
from tests.helpers.fault_server import Answer, FaultServer, ok, status

KEY = "sk-test-secret-0123456789"


@pytest.fixture
def server() -> Iterator[FaultServer]:
    srv = FaultServer([])
    yield srv
    srv.close()


def request() -> ModelRequest:
    return ModelRequest(model="m", instructions="be brief", input=[], tools=[])


async def collect(client: ResponsesClient) -> list[object]:
    return [e async for e in client.stream(request())]


async def test_body_fields_and_key_header(server: FaultServer) -> None:
    client = ResponsesClient(server.base_url, KEY)
    events = await collect(client)
    await client.aclose()
    body = server.requests[0]
    assert list(body) == [
        "model",
        "instructions",
        "input",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning",
        "store",
        "stream",
        "include",
    ]
    assert body["store"] is False and body["stream"] is True
    assert server.auth == [f"Bearer {KEY}"]
    assert any(isinstance(e, OutputTextDelta) for e in events)
    assert isinstance(events[-2], ItemDone) and isinstance(events[-1], Completed)
    assert events[-1].usage.total_tokens == 15


async def test_5xx_and_429_are_retried(server: FaultServer) -> None:
    server.answers = [status(500), status(429, retry_after_ms="10"), ok("fine")]
    retries: list[tuple[int, float, str]] = []
    client = ResponsesClient(server.base_url, KEY, on_retry=lambda *a: retries.append(a))
    events = await collect(client)
    await client.aclose()
    assert len(server.requests) == 3
    assert [r[2] for r in retries] == ["HTTP 500", "HTTP 429"]
    assert retries[1][1] == pytest.approx(0.01)
    assert isinstance(events[-1], Completed)


@pytest.mark.parametrize(
    ("code", "fragment"),
    [
        pytest.param(401, "set OPENAI_API_KEY", id="401"),
        pytest.param(403, "permissions", id="403"),
        pytest.param(404, "check --model and --base-url", id="404"),
        pytest.param(400, "rejected the request (HTTP 400)", id="400"),
    ],
)
async def test_client_errors_are_one_sentence(
    server: FaultServer, code: int, fragment: str
) -> None:
    server.answers = [status(code, error=f"bad thing {KEY}")]
    client = ResponsesClient(server.base_url, KEY)
    with pytest.raises(ModelError) as info:
        await collect(client)
    await client.aclose()
    assert fragment in str(info.value)
    assert KEY not in str(info.value)
    assert len(server.requests) == 1


async def test_retries_run_out(server: FaultServer) -> None:
    server.answers = [status(503)] * 3
    client = ResponsesClient(server.base_url, KEY, request_max_retries=2)
    with pytest.raises(ConnectionFailed, match="HTTP 503"):
        await collect(client)
    await client.aclose()
    assert len(server.requests) == 3


async def test_unreachable_server_is_one_sentence() -> None:
    client = ResponsesClient("http://127.0.0.1:9/v1", KEY, request_max_retries=1)
    with pytest.raises(ConnectionFailed, match="Could not reach the model server"):
        await collect(client)
    await client.aclose()


async def test_cut_stream_is_retryable(server: FaultServer) -> None:
    server.answers = [Answer(items=ok().items, cut_after_bytes=300)]
    client = ResponsesClient(server.base_url, KEY)
    with pytest.raises(StreamFailed) as info:
        await collect(client)
    await client.aclose()
    assert info.value.retryable
    assert "before response.completed" in info.value.message


async def test_idle_stream_times_out(server: FaultServer) -> None:
    server.answers = [Answer(items=ok().items, stall_s=2.0)]
    client = ResponsesClient(server.base_url, KEY, stream_idle_timeout_s=0.3)
    with pytest.raises(StreamFailed, match="idle timeout"):
        await collect(client)
    await client.aclose()
