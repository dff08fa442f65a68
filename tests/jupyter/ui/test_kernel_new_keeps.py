"""``%%agent --new`` in real kernels (both ipykernel lines): a new conversation with the
settings in force. The first cell names a scripted server on 127.0.0.1, a model, an
approval policy and a ``-c`` setting; a later ``--new`` cell names none of them, reaches
the same server with the same settings and its own option on top, and starts from an
empty conversation in a new thread with a file of its own. "Approve for session" answers
belong to the session they were given in, so the new one asks again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_magics.store import read_session
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell

pytestmark = pytest.mark.slow

MARK = "echo ran >> marker.txt; echo ran-it"
EFFORT = "-c reasoning_effort=low"


def done_turns(kernel: Kernel) -> int:
    return len([v for v in kernel.html_values() if TURN_DONE in v])


def session_files(ws: Path) -> list[Path]:
    return sorted((ws / ".agent_magics" / "sessions").glob("*.jsonl"))


def prompts(path: Path) -> list[str]:
    return [r["prompt"] for r in read_session(path).records if r["type"] == "turn_started"]


def test_new_keeps_the_server_and_the_options(kernel: Kernel) -> None:
    with ScriptedResponsesServer([[message("one")], [message("two")]]) as server:
        options = f"-m kept-model -a untrusted {EFFORT}"
        kernel.run(agent_cell(server.base_url, options, "first question"))
        kernel.wait_for(lambda: len(server.requests) == 1 and done_turns(kernel) == 1)
        kernel.run("%%agent --new -s read-only\nsecond question")
        kernel.wait_for(lambda: len(server.requests) == 2 and done_turns(kernel) == 2)
        first, second = server.requests
    status = kernel.outputs_text(kernel.run("%agent status"))
    assert [r["model"] for r in (first, second)] == ["kept-model", "kept-model"]
    assert second["reasoning"]["effort"] == "low"
    assert "approval policy: untrusted" in status
    assert "sandbox:         read-only (" in status  # the --new cell's own option
    said: list[dict[str, Any]] = [i for i in second["input"] if i.get("role") == "user"]
    assert "second question" in json.dumps(said[-1])
    assert not [i for i in second["input"] if i.get("role") == "assistant"]
    assert "first question" not in json.dumps(second["input"])
    assert first["prompt_cache_key"] != second["prompt_cache_key"]  # a new thread
    files = {p.stem: p for p in session_files(kernel.ws)}
    assert set(files) == {first["prompt_cache_key"], second["prompt_cache_key"]}
    assert prompts(files[first["prompt_cache_key"]]) == ["first question"]
    assert prompts(files[second["prompt_cache_key"]]) == ["second question"]


def test_a_new_conversation_asks_again_what_the_old_one_approved_for_its_session(
    kernel: Kernel,
) -> None:
    script = [
        [function_call("exec_command", {"cmd": MARK}, "c1")],
        [message("marked")],
        [function_call("exec_command", {"cmd": MARK}, "c2")],
        [message("marked again")],
    ]
    with ScriptedResponsesServer(script) as server:
        kernel.execute(agent_cell(server.base_url, "-a untrusted", "mark"))
        kernel.click(kernel.wait_for(lambda: kernel.buttons("Approve for session"))[-1])
        kernel.wait_for(lambda: len(server.requests) == 2 and done_turns(kernel) == 1)
        kernel.execute("%%agent --new\nmark again")
        kernel.wait_for(lambda: len(kernel.buttons("Approve")) == 2)
        assert len(server.requests) == 3  # asked before it ran
        assert (kernel.ws / "marker.txt").read_text() == "ran\n"
        kernel.click(kernel.buttons("Approve")[-1])
        kernel.wait_for(lambda: len(server.requests) == 4 and done_turns(kernel) == 2)
        assert "ran-it" in server.outputs(3)["c2"]
    assert (kernel.ws / "marker.txt").read_text() == "ran\nran\n"


def test_new_after_a_resume_starts_empty(kernel: Kernel) -> None:
    with ScriptedResponsesServer([[message("one")], [message("two")]]) as server:
        kernel.run(agent_cell(server.base_url, "", "first question"))
        kernel.wait_for(lambda: len(server.requests) == 1 and done_turns(kernel) == 1)
        kernel.run("%agent reset")
        kernel.run("%agent resume last")  # waits for the next cell, which says --new
        kernel.run("%%agent --new\nsecond question")
        kernel.wait_for(lambda: len(server.requests) == 2 and done_turns(kernel) == 2)
        first, second = server.requests
    assert "first question" not in json.dumps(second["input"])
    assert first["prompt_cache_key"] != second["prompt_cache_key"]
    assert [prompts(p) for p in session_files(kernel.ws)] in (
        [["first question"], ["second question"]],
        [["second question"], ["first question"]],
    )
