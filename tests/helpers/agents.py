"""Small pieces for sub-agent tests on :class:`agent_magics.testing.ConversationsServer`
(one script per conversation): a multi_agent_v1 call as the model sends it, the tool
outputs a request carries, the agent ids its spawn calls were answered, and a script
that is one function of the conversation so far."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from agent_magics.testing import function_call

NAMESPACE = "multi_agent_v1"
MAX_REQUESTS = 50
"""How many requests of one conversation a :func:`deciding` script answers."""


def agent_call(name: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    """A call of the multi_agent_v1 namespace tool, as the model sends it."""
    return function_call(name, arguments, call_id) | {"namespace": NAMESPACE}


def outputs(body: dict[str, Any]) -> dict[str, str]:
    """``call_id -> output text`` of every tool output the request carries (but one with
    no call id: the ``goal_objective`` output after create_goal answers no call)."""
    return {
        str(i["call_id"]): str(i["output"])
        for i in body.get("input", [])
        if i.get("type") == "function_call_output" and "call_id" in i
    }


def spawned_ids(body: dict[str, Any], *call_ids: str) -> list[str]:
    """The agent ids the spawn calls ``call_ids`` were answered (those answered)."""
    said = outputs(body)
    found = []
    for call_id in call_ids:
        with contextlib.suppress(KeyError, ValueError, TypeError):
            found.append(json.loads(said[call_id])["agent_id"])
    return found


Decide = Callable[[dict[str, Any]], list[dict[str, Any]]]


def deciding(decide: Decide) -> list[Decide]:
    """A conversation's script that reads each request whole and decides its answer
    (a parent that waits until its children answered, however many waits that takes)."""
    return [decide] * MAX_REQUESTS


TASK_A = "Write a.txt in the workspace."
TASK_B = "Write b.txt in the workspace."


def touch(name: str) -> dict[str, Any]:
    """A child's command that needs approval under ``untrusted``; every child uses the same
    call id, as models do, so only scoped ids keep their cards apart."""
    return function_call("exec_command", {"cmd": f"touch {name}"}, "call_1")
