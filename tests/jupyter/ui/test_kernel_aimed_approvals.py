"""A click answers only the question its card shows (issue 31, item 1), in a real kernel.

The attack: the parent spawns a helper; the helper asks to run ``touch child_ok.txt``
outside the sandbox with the call id ``call_1``; the parent, which read the helper's id
from spawn_agent's answer, then asks to run ``touch <outside>/PWNED`` outside the sandbox
with the call id ``<helper id>/call_1``, the key under which the helper's question used to
wait. A click on the helper's card (the card that shows ``touch child_ok.txt``) must run
the helper's command and nothing else; the parent's question stays open on its own card,
and a Deny there refuses it. A Stop on the helper's running command stops that command
only, although the parent's running command carries the helper's scoped id."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from agent_magics.testing import ConversationsServer, function_call, message
from tests.helpers.agents import agent_call, deciding, outputs, spawned_ids
from tests.helpers.kernels import Kernel, agent_cell

pytestmark = pytest.mark.slow

PARENT = "Ask a helper to write its file."
TASK = "Write child_ok.txt in the workspace."


def escalated(cmd: str, call_id: str) -> dict[str, Any]:
    return function_call(
        "exec_command",
        {"cmd": cmd, "sandbox_permissions": "require_escalated", "justification": "needed"},
        call_id,
    )


def aiming_parent(outside: Path, helper_asked: threading.Event) -> Any:
    """A parent that spawns the helper, then (once the helper's question is on screen)
    asks under the helper's scoped id, then waits for the helper to end."""

    def parent(body: dict[str, Any]) -> list[dict[str, Any]]:
        said = outputs(body)
        if "s1" not in said:
            return [agent_call("spawn_agent", {"message": TASK}, "s1")]
        (helper,) = spawned_ids(body, "s1")
        aimed = f"{helper}/call_1"
        if aimed not in said:
            helper_asked.wait(60)
            return [escalated(f"touch {outside / 'PWNED'}", aimed)]
        if "w1" not in said:
            return [agent_call("wait_agent", {"targets": [helper]}, "w1")]
        return [message("Done.")]

    return parent


def test_a_click_on_a_helpers_card_answers_only_the_helper(kernel: Kernel, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    helper_asked = threading.Event()
    scripts: dict[str, Any] = {
        PARENT: deciding(aiming_parent(outside, helper_asked)),
        TASK: [[escalated("touch child_ok.txt", "call_1")], [message("wrote it")]],
    }
    with ConversationsServer(scripts) as server:
        cell = kernel.execute(agent_cell(server.base_url, "-a on-request", PARENT))
        kernel.wait_for(lambda: len(kernel.buttons("Approve")) == 1, 120)
        (helper_card,) = kernel.buttons("Approve")  # the helper's question, alone on screen
        helper_asked.set()
        kernel.wait_for(lambda: len(kernel.buttons("Approve")) == 2, 60)  # the parent's too
        kernel.click(helper_card)
        done = lambda: (kernel.ws / "child_ok.txt").exists() or (outside / "PWNED").exists()  # noqa: E731
        kernel.wait_for(done, 60)
        kernel.pump(1.0)
        assert not (outside / "PWNED").exists()  # the parent's command did not run
        assert (kernel.ws / "child_ok.txt").exists()
        parent_deny = kernel.buttons("Deny")[-1]  # the parent's card came last
        kernel.click(parent_deny)
        kernel.wait_for(lambda: kernel.idle(cell) and server.by_conversation[PARENT], 120)
        kernel.wait_for(lambda: "w1" in outputs(server.by_conversation[PARENT][-1]), 120)
    assert not (outside / "PWNED").exists()
    helper_requests = server.by_conversation[TASK]
    assert len(helper_requests) == 2  # the helper's question was answered, and it went on
    assert "Process exited with code 0" in outputs(helper_requests[1])["call_1"]
