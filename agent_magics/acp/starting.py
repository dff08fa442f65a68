"""How an ACP session starts: the settings ``exec`` reads, in the client's folder, held
to the site's teaching policy; a saved session resumed when the client loads one; the
recorder; the notebook's kernel when a Jupyter server started this process; and, at the
first prompt, the client's MCP servers that the person allows (:mod:`.client_mcp`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from acp.schema import (
    ContentToolCallContent,
    McpServerStdio,
    PermissionOption,
    TextContentBlock,
    ToolCallUpdate,
)

from agent_magics.acp import client_mcp
from agent_magics.acp.chat_session import ChatSession
from agent_magics.acp.permissions import fenced
from agent_magics.errors import UserError
from agent_magics.trust import TRUST_COMMAND, project_config

if TYPE_CHECKING:
    from agent_magics.acp.chat_notebook import ChatNotebook
    from agent_magics.acp.client_mcp import ClientServer


def start_chat(
    client: Any, cwd: Path, given: dict[str, Any], overrides: list[str], resume_id: str | None
) -> ChatSession:
    from agent_magics.agent.providers import resolve_provider
    from agent_magics.agent.redaction import register_secrets
    from agent_magics.agent.session import Session
    from agent_magics.config import load_config
    from agent_magics.store.paths import sessions_folder
    from agent_magics.store.recorder import restored_fields, saved_session
    from agent_magics.teaching.bounds import bind, summary
    from agent_magics.teaching.sources import site_policy
    from agent_magics.tools.sandbox.jupyter import runtime_secrets

    if not cwd.is_absolute() or not cwd.is_dir():
        raise UserError(f"The session's folder {cwd} is not an existing absolute path.")
    options = {**given, "cwd": str(cwd.resolve())}
    config = load_config(options=options, overrides=overrides)
    folder = sessions_folder(config)
    notes: list[str] = []
    resume = None
    if resume_id is not None:
        if folder is None:
            raise UserError("Sessions are not saved here (sessions_dir), so none can load.")
        from agent_magics.store.resume import load_resume

        resume = load_resume(folder, resume_id, in_force=restored_fields(config))
        notes += resume.notes
        config = load_config(options=resume.settings | options, overrides=overrides)
    policy = site_policy()
    config = bind(policy, config).model_copy(update={"approver": "chat"})
    if (line := summary(policy)) is not None:
        notes.append(line)
    project = project_config(cwd)
    if project is not None and not project.trusted:
        notes.append(project.ignored_line(f"{TRUST_COMMAND} {project.folder}"))
    resolve_provider(config)  # with no model configured, say so before a session starts
    notebook = _notebook(cwd)
    if notebook is not None:
        register_secrets(*notebook.secrets())
    session = Session(
        config,
        extra_tools=notebook.tools if notebook else None,
        offers=policy.offers,
        kept=notebook.kept_files if notebook else None,
        secrets=runtime_secrets,  # Jupyter's runtime folder: its kernel's key, say
    )
    recorder = saved_session(session, folder, resume, say=notes.append)
    session_id = recorder.id if recorder is not None else session.thread_id
    chat = ChatSession(client, session_id, session, recorder, policy, notebook)
    chat.notes = notes
    return chat


def _notebook(cwd: Path) -> ChatNotebook | None:
    """The notebook side, when a Jupyter server started this process."""
    try:
        from agent_magics.acp.chat_notebook import ChatNotebook
    except ImportError:  # no server side installed (tornado): a chat without kernel tools
        return None
    return ChatNotebook.find(cwd)


async def allow_client_servers(chat: ChatSession, servers: list[ClientServer]) -> None:
    """Start the client's MCP servers the person allows; the model is told of the rest."""
    from agent_magics.mcp.config import validate_servers

    known = client_mcp.remembered()
    cwd = chat.session.config.cwd
    taken = set(chat.session.config.mcp_servers)
    allowed: dict[str, Any] = {}
    refused: list[str] = []
    for server in servers:
        if server.name in taken or server.name in allowed:
            refused.append(server.name)  # ours keep their name
            continue
        if client_mcp.key(server, cwd) in known or await _asked(chat, server):
            allowed[server.name] = client_mcp.settings(server)
        else:
            refused.append(server.name)
    if allowed:
        config = chat.session.config
        merged = {**config.mcp_servers, **validate_servers(allowed)}
        chat.session.reconfigure(config.model_copy(update={"mcp_servers": merged}))
    if refused:
        chat.session.add_note(client_mcp.refused_note(refused))


async def _asked(chat: ChatSession, server: ClientServer) -> bool:
    from agent_magics.text.visible import visible

    whole = visible(client_mcp.subject(server))
    call = ToolCallUpdate(
        tool_call_id=f"mcp-start-{visible(server.name)}",
        title=visible(client_mcp.title(server)),
        kind="execute",
        status="pending",
        content=[_text(fenced(whole))],
        raw_input={**client_mcp.described(server), "command": whole},
    )
    options = [PermissionOption(option_id="once", name="Allow for this session", kind="allow_once")]
    if not isinstance(server, McpServerStdio):  # a command reads files a command may change
        always = PermissionOption(
            option_id="always", name="Always allow this server", kind="allow_always"
        )
        options.append(always)
    options.append(PermissionOption(option_id="no", name="Do not start it", kind="reject_once"))
    response = await chat.ask(call, options, new=True)
    chosen = getattr(response.outcome, "option_id", "no")
    if chosen not in {o.option_id for o in options}:
        return False
    if chosen == "always":
        client_mcp.remember(server, chat.session.config.cwd)
    return chosen in ("once", "always")


def _text(text: str) -> ContentToolCallContent:
    return ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))
