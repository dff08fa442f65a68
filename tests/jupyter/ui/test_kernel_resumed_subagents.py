"""A sub-agent across a real kernel restart: the first kernel's cell spawns a child that
runs a command and answers; after the restart, ``%agent resume last`` gives the child
back closed (wait_agent answers Codex's ``not_found``), resume_agent reopens it, and
send_input runs it with its old conversation; ``%agent history`` then shows the child's
calls and answers nested under the spawn call. The model is scripted per conversation
on 127.0.0.1 (:mod:`tests.helpers.agents`)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_magics.testing import ConversationsServer, function_call, message
from tests.helpers.agents import agent_call, outputs
from tests.helpers.kernels import Kernel, agent_cell

pytestmark = pytest.mark.slow

PARENT, CHILD = "Ask a helper to count.", "Count the files here."
AGAIN, MORE = "Ask the helper again.", "Count them once more."


def on_child(name: str, field: str, call_id: str, **args: Any) -> Any:
    """A call on the child the first kernel's s1 spawned (its id read from the resumed
    history, as the model reads it)."""

    def turn(body: dict[str, Any]) -> list[dict[str, Any]]:
        agent_id = json.loads(outputs(body)["s1"])["agent_id"]
        named = [agent_id] if field == "targets" else agent_id
        return [agent_call(name, {**args, field: named}, call_id)]

    return turn


def ended(kernel: Kernel, cell: str) -> None:
    """Wait until the cell's turn ended and its saved transcript replaced the widgets
    (on ipykernel 6 the cell returns while its turn runs on)."""

    def drawn() -> bool:
        html = (str(o.get("data", {}).get("text/html", "")) for o in kernel.saved_outputs(cell))
        return "agent-magics-transcript" in "".join(html)

    kernel.wait_for(lambda: kernel.idle(cell) and drawn(), 120)


def test_a_child_is_reopened_after_a_kernel_restart(kernel: Kernel) -> None:
    scripts: dict[str, Any] = {
        PARENT: [
            [agent_call("spawn_agent", {"message": CHILD}, "s1")],
            on_child("wait_agent", "targets", "w1"),
        ],
        CHILD: [
            [function_call("exec_command", {"cmd": "echo child-ran"}, "c1")],
            [message("three files")],
        ],
        AGAIN: [
            on_child("wait_agent", "targets", "r1", timeout_ms=10_000),
            on_child("resume_agent", "id", "r2"),
            on_child("send_input", "target", "r3", message=MORE),
            on_child("wait_agent", "targets", "r4"),
        ],
        MORE: [[message("four files now")]],
    }
    with ConversationsServer(scripts, final_text="parent done") as server:
        ended(kernel, kernel.execute(agent_cell(server.base_url, "-a never", PARENT)))
        nickname = json.loads(outputs(server.by_conversation[PARENT][-1])["s1"])["nickname"]

        kernel.km.restart_kernel(now=True)
        kernel.kc.wait_for_ready(timeout=60)
        kernel.run("%load_ext agent_magics")
        out = kernel.outputs_text(kernel.run("%agent resume last"))
        assert "agent: Resuming session" in out, out
        ended(kernel, kernel.execute(agent_cell(server.base_url, "-a never", AGAIN)))
        history = kernel.outputs_text(kernel.run("%agent history"))

    said = {k: v for body in server.by_conversation[AGAIN] for k, v in outputs(body).items()}
    agent_id = json.loads(said["s1"])["agent_id"]
    assert said["r1"] == f'{{"status":{{"{agent_id}":"not_found"}},"timed_out":false}}'
    assert said["r2"] == '{"status":"pending_init"}'
    assert said["r4"] == (
        f'{{"status":{{"{agent_id}":{{"completed":"four files now"}}}},"timed_out":false}}'
    )
    [reopened] = server.by_conversation[MORE]  # the child's old conversation, then MORE
    texts = [json.dumps(i) for i in reopened["input"]]
    at = [next(n for n, t in enumerate(texts) if w in t) for w in (CHILD, "child-ran", MORE)]
    assert at == sorted(at)
    assert any("three files" in t and '"assistant"' in t for t in texts[at[1] : at[2]])

    lines = history.splitlines()
    spawn = next(n for n, line in enumerate(lines) if line.startswith("• spawn_agent"))
    assert lines[spawn + 2] == f"    ↳ sub-agent {nickname} · completed · {CHILD}", history
    assert lines[spawn + 3].startswith("        • exec_command: $ echo child-ran")
    assert "        agent: three files" in lines[spawn + 4 : spawn + 8]
    # As it happened: turn 1's helper as it ended then; its new work, and the message
    # that started it, under the resume_agent call of the later turn.
    reopened = next(n for n, line in enumerate(lines) if line.startswith("• resume_agent"))
    assert "four files now" not in "\n".join(lines[:reopened]), history
    assert lines[reopened + 2] == f"    ↳ sub-agent {nickname} · completed · {CHILD}", history
    later = lines[reopened + 3 :]
    assert later.index(f"        sent: {MORE}") < later.index("        agent: four files now")
