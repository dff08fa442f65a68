"""One test per fault, for both protocols: a session against a loopback server on
127.0.0.1 that injects the fault. Each ends recovered, or with the exact sentence, and
with the history intact; the API key appears in no error and no event."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from agent_magics import Session, SessionConfig
from agent_magics.errors import ConnectionFailed, ModelError
from agent_magics.events import TurnFinished
from agent_magics.models.retry import retry_after, try_again_hint
from agent_magics.protocol.items import Message
from agent_magics.testing import function_call, message
from tests.helpers.chat_fault_server import chat_error
from tests.helpers.fault_run import ENCODERS, KEY, FaultRun
from tests.helpers.fault_server import Answer, failed_response, ok, status

pytestmark = pytest.mark.slow  # retries wait out real backoff on a loopback server

PROTOCOLS = [pytest.param("responses", id="responses"), pytest.param("chat", id="chat")]
ENDPOINTS = {"responses": "/responses", "chat": "/chat/completions"}


async def close(r: FaultRun) -> None:
    await r.session.aclose()
    r.assert_clean()


def prompts(r: FaultRun) -> list[str]:
    return [
        i.text
        for i in r.session.history
        if isinstance(i, Message) and i.role == "user" and not i.text.startswith("<environment")
    ]


def failed_stream(protocol: str, code: str, text: str) -> bytes:
    """A stream that fails with ``code``: ``response.failed``, or a chat error chunk."""
    return chat_error(code, text) if protocol == "chat" else failed_response(code, text)


# -- recovered ---------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_5xx_is_retried(fault_run: Callable[..., FaultRun], protocol: str) -> None:
    r = fault_run(protocol, [status(500), status(503), ok("fine")])
    assert await r.turn() == "fine"
    await close(r)
    assert [e.reason for e in r.retries] == ["HTTP 500", "HTTP 503"]
    assert r.server.requests[0] == r.server.requests[1] == r.server.requests[2]
    assert r.server.paths[0].endswith(ENDPOINTS[protocol])


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_transport_error_is_retried(
    fault_run: Callable[..., FaultRun], protocol: str
) -> None:
    r = fault_run(protocol, [Answer(hang_up=True), ok("fine")])
    assert await r.turn() == "fine"
    await close(r)
    assert [e.reason for e in r.retries] == ["RemoteProtocolError"]
    assert r.server.requests[0] == r.server.requests[1]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_429_honours_retry_after_and_retry_after_ms(
    fault_run: Callable[..., FaultRun], protocol: str
) -> None:
    answers = [status(429, retry_after="0.05"), status(429, retry_after_ms="20"), ok("fine")]
    r = fault_run(protocol, answers)
    assert await r.turn() == "fine"
    await close(r)
    assert [(e.reason, e.delay_s) for e in r.retries] == [("HTTP 429", 0.05), ("HTTP 429", 0.02)]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_failed_stream_with_try_again_hint_is_retried(
    fault_run: Callable[..., FaultRun], protocol: str
) -> None:
    text = "Rate limit reached for requests. Please try again in 30ms."
    failed = Answer(raw=failed_stream(protocol, "rate_limit_exceeded", text))
    r = fault_run(protocol, [failed, ok("fine")])
    assert await r.turn() == "fine"
    await close(r)
    assert [(e.reason, e.delay_s) for e in r.retries] == [(text, 0.03)]
    assert r.server.requests[0] == r.server.requests[1]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_dropped_stream_is_retried_without_duplicating_history(
    fault_run: Callable[..., FaultRun], protocol: str
) -> None:
    call = [function_call("update_plan", {"plan": []}, "c1")]
    payload = ENCODERS[protocol](call)
    cut = Answer(raw=payload[: len(payload) // 2])
    r = fault_run(protocol, [cut, Answer(items=call), ok("finished")])
    assert await r.turn() == "finished"
    await close(r)
    assert r.server.requests[0] == r.server.requests[1]
    assert [i.type for i in r.session.history].count("function_call") == 1
    assert r.retries[0].reason in (
        "stream closed before response.completed",
        "stream closed before the answer finished",
    )


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_idle_stream_is_retried(fault_run: Callable[..., FaultRun], protocol: str) -> None:
    stalled = Answer(items=[message("slow")], stall_s=2.0)
    r = fault_run(protocol, [stalled, ok("fine")], stream_idle_timeout_s=0.3)
    assert await r.turn() == "fine"
    await close(r)
    assert [e.reason for e in r.retries] == ["idle timeout waiting for SSE"]
    assert r.server.requests[0] == r.server.requests[1]


# -- one sentence --------------------------------------------------------------------------


def sentence(protocol: str, code: int) -> str:
    return {
        400: "The model server rejected the request (HTTP 400): bad thing [redacted]",
        401: "The model server rejected the API key (HTTP 401); set OPENAI_API_KEY to a valid key.",
        403: "The model server refused access (HTTP 403); check the API key's permissions.",
        404: f"The model server has no model 'm' or no {ENDPOINTS[protocol]} endpoint "
        "(HTTP 404); check --model and --base-url.",
    }[code]


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("code", [400, 401, 403, 404])
async def test_client_errors_are_one_exact_sentence(
    fault_run: Callable[..., FaultRun], protocol: str, code: int
) -> None:
    r = fault_run(protocol, [status(code, error=f"bad thing {KEY}"), ok("after the fix")])
    error = await r.failing_turn()
    assert isinstance(error, ModelError)
    assert str(error) == sentence(protocol, code)
    assert len(r.server.requests) == 1
    assert prompts(r) == []  # nothing was answered: the prompt is not kept to be sent twice
    assert await r.turn("again") == "after the fix"
    await close(r)
    assert prompts(r) == ["again"]
    sent = r.server.requests[1]
    said = json.dumps(sent.get("input", sent.get("messages")))
    assert '"go"' not in said  # the failed turn's prompt is not sent again


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_retry_after_beyond_the_cap_is_not_waited_for(
    fault_run: Callable[..., FaultRun], protocol: str
) -> None:
    r = fault_run(protocol, [status(429, error="slow down", retry_after="600")])
    error = await r.failing_turn()
    await close(r)
    assert isinstance(error, ConnectionFailed)
    assert str(error) == "The model server kept answering with a rate limit (HTTP 429): slow down"
    assert r.retries == []


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_5xx_retries_run_out(fault_run: Callable[..., FaultRun], protocol: str) -> None:
    r = fault_run(protocol, [status(502)] * 3, request_max_retries=2)
    error = await r.failing_turn()
    await close(r)
    assert str(error) == "The model server kept answering with a server error (HTTP 502): boom"
    assert len(r.server.requests) == 3


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_unreachable_server_is_one_sentence(tmp_path: Path, protocol: str) -> None:
    config = SessionConfig(
        provider=protocol,
        base_url="http://127.0.0.1:9/v1",
        api_key=KEY,
        cwd=tmp_path,
        request_max_retries=1,
    )
    session = Session(config)
    with pytest.raises(ConnectionFailed) as info:
        await session.run_turn("go")
    await session.aclose()
    assert str(info.value) == (
        "Could not reach the model server at http://127.0.0.1:9/v1 (ConnectError); "
        "check --base-url and that the server runs."
    )


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_failure_the_server_will_not_fix_is_not_retried(
    fault_run: Callable[..., FaultRun], protocol: str
) -> None:
    # (context_length_exceeded is not retried either: it compacts, see test_compaction_*)
    failed = Answer(raw=failed_stream(protocol, "insufficient_quota", "No quota left."))
    r = fault_run(protocol, [failed])
    error = await r.failing_turn()
    await close(r)
    assert str(error) == "The model's answer failed: No quota left. (insufficient_quota)."
    assert r.retries == [] and len(r.server.requests) == 1


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_stream_retries_run_out(fault_run: Callable[..., FaultRun], protocol: str) -> None:
    payload = ENCODERS[protocol]([message("never whole")])
    cut = Answer(raw=payload[:60])
    r = fault_run(protocol, [cut, cut, cut], stream_max_retries=2)
    error = await r.failing_turn()
    await close(r)
    assert str(error).startswith("The model's answer failed: stream closed before")
    assert str(error).endswith("(after 2 retries).")
    assert not any(isinstance(e, TurnFinished) for e in r.events)


# -- the hints themselves ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        pytest.param({"retry-after-ms": "250"}, 0.25, id="ms"),
        pytest.param({"retry-after": "2"}, 2.0, id="seconds"),
        pytest.param({"retry-after": "1.5"}, 1.5, id="float-seconds"),
        pytest.param({"retry-after-ms": "40", "retry-after": "9"}, 0.04, id="ms-wins"),
        pytest.param({"retry-after": "Thu, 01 Jan 1970 00:00:00 GMT"}, 0.0, id="date-past"),
        pytest.param({}, None, id="none"),
    ],
)
def test_retry_after_header(headers: dict[str, str], expected: float | None) -> None:
    assert retry_after(headers) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("Please try again in 1.5s.", 1.5, id="s"),
        pytest.param("Please try again in 250ms.", 0.25, id="ms"),
        pytest.param("try again in 3 seconds", 3.0, id="seconds"),
        pytest.param("no hint here", None, id="none"),
    ],
)
def test_try_again_hint(text: str, expected: float | None) -> None:
    assert try_again_hint(text) == expected
