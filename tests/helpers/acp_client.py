"""The SDK's own ACP client driving ``python -m agent_magics acp`` over real stdio.

:class:`Chat` records every ``session/update`` the agent sends and answers its permission
questions with the option ids given in turn (``"cancelled"``: the question is cancelled,
as a client does when its turn is cancelled). :func:`agent_process` starts the agent
with the test's home and a scripted model server.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    RequestPermissionResponse,
)
from acp.stdio import spawn_agent_process

from agent_magics.testing import ScriptedResponsesServer

KEY = "sk-dummy-acp-Z2k4W8Q7v9"
WAIT_S = 120  # a bound against a hang only: a scripted turn takes a second or two


class Chat:
    """A client that records what it is sent and answers questions from ``answers``."""

    def __init__(self, answers: list[str] | None = None) -> None:
        self.answers = list(answers or [])
        self.updates: list[Any] = []
        self.questions: list[Any] = []
        self.asked = asyncio.Event()

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.updates.append(update)

    async def request_permission(
        self, session_id: str, tool_call: Any, options: list[Any], **kw: Any
    ) -> RequestPermissionResponse:
        self.questions.append((tool_call, options))
        self.asked.set()
        answer = self.answers.pop(0) if self.answers else "cancelled"
        if answer == "cancelled":
            return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
        return RequestPermissionResponse(
            outcome=AllowedOutcome(outcome="selected", option_id=answer)
        )

    async def until(self, check: Any, timeout_s: float = 30) -> None:
        """Wait until ``check()`` holds: the SDK hands each notification to its handler
        in a task of its own, so one sent before a response may be taken after it."""
        for _ in range(int(timeout_s / 0.02)):
            if check():
                return
            await asyncio.sleep(0.02)
        raise AssertionError("the updates never came")

    async def settle(self, quiet_s: float = 0.3, timeout_s: float = 30) -> None:
        """Wait until no update has come for ``quiet_s``: a response (a prompt's end)
        may be taken before the notifications sent ahead of it (see :meth:`until`)."""
        seen, quiet = len(self.updates), 0.0
        for _ in range(int(timeout_s / 0.02)):
            await asyncio.sleep(0.02)
            quiet = 0.0 if len(self.updates) != seen else quiet + 0.02
            seen = len(self.updates)
            if quiet >= quiet_s:
                return

    def kinds(self) -> list[str]:
        return [u.session_update for u in self.updates]

    def text(self) -> str:
        """The agent's message, its chunks joined."""
        return "".join(
            u.content.text for u in self.updates if u.session_update == "agent_message_chunk"
        )

    def calls(self, status: str | None = None) -> list[Any]:
        found = [u for u in self.updates if u.session_update in ("tool_call", "tool_call_update")]
        return [u for u in found if status is None or u.status == status]


def agent_env(home: Path, server: ScriptedResponsesServer, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    return env | {
        "HOME": str(home),
        "OPENAI_API_KEY": KEY,
        "OPENAI_BASE_URL": server.base_url,
        "AGENT_MAGICS_MODEL": "m",
        "AGENT_MAGICS_PROVIDER": "responses",
        **extra,
    }


@contextlib.asynccontextmanager
async def agent_process(
    chat: Chat, env: dict[str, str], cwd: Path, *args: str, python: str = sys.executable
) -> AsyncIterator[Any]:
    """An initialized connection to a new agent process."""
    argv = ["-m", "agent_magics", "acp", "-c", "allow_login_shell=false", *args]
    async with spawn_agent_process(chat, python, *argv, env=env, cwd=cwd) as (conn, process):
        await asyncio.wait_for(
            conn.initialize(
                protocol_version=PROTOCOL_VERSION, client_capabilities=ClientCapabilities()
            ),
            60,
        )
        conn.process = process
        yield conn


async def ask(conn: Any, chat: Chat, session_id: str, text: str) -> Any:
    """Send ``text`` as a prompt; its response, once the updates before it were taken."""
    prompt = [{"type": "text", "text": text}]
    reply = await asyncio.wait_for(conn.prompt(session_id=session_id, prompt=prompt), WAIT_S)
    await chat.settle()
    return reply
