"""What the tests of a chat's notebook share: notebooks, kernelspecs, an approver that
answers and keeps the questions, and a turn of a session with the chat's tools."""

from __future__ import annotations

import json
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from agent_magics import Session
from agent_magics.acp.chat_notebook import ChatNotebook
from agent_magics.events import Event
from agent_magics.protocol.approval import ApprovalRequest, ReviewDecision
from agent_magics.testing import ScriptedResponsesServer
from agent_magics.testing import message as say
from tests.helpers.agents import outputs
from tests.helpers.sessions import config_for

nbf: Any = nbformat


def write_notebook(path: Path, first: str = "total = 41") -> None:
    nb = nbf.v4.new_notebook()
    nb.cells = [nbf.v4.new_code_cell(first, id="first"),
                nbf.v4.new_markdown_cell("# Findings", id="notes")]  # fmt: skip
    nbf.write(nb, str(path))


def bare_kernelspec(folder: Path) -> None:
    """A kernel of this interpreter that sees its installed packages but not the
    ``.pth`` files that make agent_magics importable (``-S``: no site processing), nor a
    checkout that ``PYTHONPATH`` names."""
    folder.mkdir(parents=True)
    site = sysconfig.get_paths()["purelib"]
    start = f"import sys; sys.path.append({site!r}); from ipykernel import kernelapp as k; "
    argv = [sys.executable, "-S", "-c", start + "k.launch_new_instance()", "-f",
            "{connection_file}"]  # fmt: skip
    spec = {"argv": argv, "display_name": "no agent_magics", "language": "python",
            "env": {"PYTHONPATH": ""}}  # a checkout on the test run's path stays out  # fmt: skip
    (folder / "kernel.json").write_text(json.dumps(spec))


def kernelspec_of(python: Path, folder: Path) -> None:
    """A kernel run by ``python`` (another environment's)."""
    folder.mkdir(parents=True)
    argv = [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    spec = {"argv": argv, "display_name": "its own environment", "language": "python"}
    (folder / "kernel.json").write_text(json.dumps(spec))


@dataclass
class Asked:
    decision: ReviewDecision
    requests: list[ApprovalRequest]

    async def __call__(self, request: ApprovalRequest) -> ReviewDecision:
        self.requests.append(request)
        return self.decision


async def chat_turn(
    project: Path,
    chat: ChatNotebook,
    calls: list[Any],
    policy: str,
    asked: Asked | None = None,
    **settings: Any,
) -> tuple[dict[str, str], list[Event]]:
    """One turn of a session in ``project`` with the chat's tools making ``calls``; the
    outputs the model got, by call id, and the session's events. ``settings``: more of
    the session's (its shell is off unless they say)."""
    events: list[Event] = []
    with ScriptedResponsesServer([calls, [say("done")]]) as model:
        config = config_for(project, model.base_url, approval_policy=policy, **settings)
        approver = asked if asked is not None else Asked(ReviewDecision.DENIED, [])
        session = Session(config, extra_tools=chat.tools, approver=approver, kept=chat.kept_files)
        session.subscribe(events.append)
        try:
            await session.run_turn("go")
        finally:
            await session.aclose()
        return outputs(model.requests[-1]), events
