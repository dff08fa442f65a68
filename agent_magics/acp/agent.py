"""The ACP methods: what ``agent-magics acp`` answers a client.

``session/new`` makes one of our sessions in the client's folder, with the settings
``exec`` reads (config files, environment, the command's flags) held to the site's
teaching policy, saved as every session is; its id is the saved session's, so
``session/load`` finds it again after the process restarts (and tells the conversation
again, :mod:`.replay`) and ``session/list`` lists the folder's sessions. The client's
MCP servers start once the person allowed them (:mod:`.client_mcp`). A prompt runs one
turn (or a slash command, :mod:`.commands`); its text, its links and embedded
resources, and its images are what the model reads, and a link to a notebook attaches
that notebook's kernel (:mod:`.chat_notebook`). Approval policies are the modes.

Who answers approvals: the person in the chat, through the client's permission
questions, so the model is told a person approves (the terminal's words: a person reads
the messages and approves the calls that need it).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from acp import PROTOCOL_VERSION, RequestError
from acp.helpers import update_available_commands, update_current_mode
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
    SessionCapabilities,
    SessionInfo,
    SessionListCapabilities,
    SetSessionModeResponse,
)

from agent_magics.acp import commands
from agent_magics.acp.chat_session import ChatSession
from agent_magics.acp.client_mcp import ClientServer
from agent_magics.acp.modes import mode_state, policy_of
from agent_magics.acp.prompt_blocks import prompt_parts
from agent_magics.acp.starting import allow_client_servers, start_chat
from agent_magics.errors import UserError

_log = logging.getLogger(__name__)
SESSIONS_PAGE = 50
INVALID_PARAMS = -32602


def refused(sentence: str) -> RequestError:
    """A request refused with the person's sentence as its message (what clients show)."""
    return RequestError(INVALID_PARAMS, sentence)


class AcpAgent:
    """One client's agent: its sessions by id. ``options``: the command's own flags
    (as ``exec``'s), ``overrides``: its ``-c key=value`` settings."""

    def __init__(self, options: dict[str, Any], overrides: list[str]) -> None:
        self.options, self.overrides = options, overrides
        self.client: Any = None
        self.chats: dict[str, ChatSession] = {}
        self.images = False

    def on_connect(self, conn: Any) -> None:
        self.client = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kw: Any,
    ) -> InitializeResponse:
        from agent_magics import __version__

        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(
                load_session=True,
                prompt_capabilities=PromptCapabilities(image=True, embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True),
                session_capabilities=SessionCapabilities(list=SessionListCapabilities()),
            ),
            agent_info=Implementation(
                name="agent-magics", title="agent-magics", version=__version__
            ),
            auth_methods=[],
        )

    async def authenticate(self, method_id: str, **kw: Any) -> None:
        return None

    async def new_session(
        self, cwd: str, mcp_servers: list[ClientServer] | None = None, **kw: Any
    ) -> NewSessionResponse:
        chat = await self._start(cwd, mcp_servers, None)
        return NewSessionResponse(session_id=chat.id, modes=mode_state(chat.session.config))

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: list[ClientServer] | None = None, **kw: Any
    ) -> LoadSessionResponse:
        from agent_magics.acp.replay import replayed

        if session_id in self.chats:
            await self.chats.pop(session_id).aclose()
        chat = await self._start(cwd, mcp_servers, session_id)
        for note in chat.notes:  # where the file came from, before what it says
            chat.say(f"> {note}\n\n")
        chat.notes.clear()
        chat.say_updates(replayed(chat.session.history, chat.session.redact.text))
        await chat.flushed()
        return LoadSessionResponse(modes=mode_state(chat.session.config))

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kw: Any
    ) -> ListSessionsResponse:
        from datetime import UTC, datetime

        from agent_magics.config import load_config
        from agent_magics.store.index import list_sessions
        from agent_magics.store.paths import sessions_folder

        folder = sessions_folder(load_config(options={**self._given(), "cwd": cwd or os.getcwd()}))
        found = list_sessions(folder) if folder is not None else []
        start = int(cursor) if cursor and cursor.isdigit() else 0
        page = found[start : start + SESSIONS_PAGE]
        infos = [
            SessionInfo(
                session_id=s.id,
                cwd=cwd or os.getcwd(),
                title=s.first_prompt[:80] or None,
                updated_at=datetime.fromtimestamp(s.mtime, UTC).isoformat(),
            )
            for s in page
        ]
        more = start + SESSIONS_PAGE < len(found)
        return ListSessionsResponse(
            sessions=infos, next_cursor=str(start + SESSIONS_PAGE) if more else None
        )

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kw: Any
    ) -> SetSessionModeResponse:
        from agent_magics.teaching.bounds import PolicyRefused, bind

        chat = self._chat(session_id)
        policy = policy_of(mode_id)
        if policy is None:
            raise refused(f"No such mode: {mode_id}.")
        wanted = chat.session.config.model_copy(update={"approval_policy": policy})
        try:
            bound = bind(chat.policy, wanted, asks="this mode asks")
        except PolicyRefused as exc:
            raise refused(str(exc)) from exc
        chat.session.reconfigure(bound)
        chat.say_updates([update_current_mode(mode_id)])
        return SetSessionModeResponse()

    async def prompt(self, session_id: str, prompt: list[Any], **kw: Any) -> PromptResponse:
        chat = self._chat(session_id)
        text, context, images, notebooks = prompt_parts(prompt, Path(chat.session.config.cwd))

        async def work() -> None:
            await self._before_prompt(chat, notebooks)
            command = commands.parse(text.strip())
            if command is not None:
                await commands.COMMANDS[command[0]](chat, command[1])
                return
            await chat.session.run_turn(text, context, images=images)

        return await chat.run(work)

    async def cancel(self, session_id: str, **kw: Any) -> None:
        chat = self.chats.get(session_id)
        if chat is not None:
            await chat.cancel()

    async def aclose(self) -> None:
        for chat in list(self.chats.values()):
            await chat.aclose()
        self.chats.clear()

    # -- helpers ------------------------------------------------------------------------

    def _given(self) -> dict[str, Any]:
        return {k: v for k, v in self.options.items() if v is not None}

    async def _start(
        self, cwd: str, servers: list[ClientServer] | None, resume: str | None
    ) -> ChatSession:
        try:
            chat = start_chat(self.client, Path(cwd), self._given(), self.overrides, resume)
        except UserError as exc:
            raise refused(str(exc)) from exc
        chat.pending_mcp = list(servers or [])
        self.chats[chat.id] = chat
        chat.say_updates([update_available_commands(commands.available(chat.notebook is not None))])
        return chat

    async def _before_prompt(self, chat: ChatSession, notebooks: list[Path]) -> None:
        """What waits for the first prompt (notes, the client's MCP servers), and the
        notebooks a prompt links to."""
        for note in chat.notes:
            chat.say(f"> {note}\n\n")
        chat.notes.clear()
        if chat.pending_mcp:
            servers, chat.pending_mcp = chat.pending_mcp, []
            await allow_client_servers(chat, servers)
        for path in notebooks[:1]:
            if chat.notebook is None:
                chat.say(f"> `{path.name}` is read as a file: no Jupyter server started us.\n\n")
                continue
            try:
                chat.say(f"> {await chat.notebook.attach(path)}\n\n")
                chat.attached = str(path)
                chat.session.kill_processes()  # see commands.notebook
            except UserError as exc:
                chat.say(f"> {exc}\n\n")

    def _chat(self, session_id: str) -> ChatSession:
        chat = self.chats.get(session_id)
        if chat is None:
            raise refused(f"No such session: {session_id}.")
        return chat
