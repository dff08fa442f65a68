"""The session's slash commands, as ``%agent`` has them in a cell: a prompt that starts
with ``/name`` runs the command instead of a turn (ACP clients send a chosen command as
the prompt's text), and its answer is the chat's message.

- ``/compact [what to keep]``: compact the conversation now;
- ``/status``: the model, policies, folder, tokens, the saved session and the notebook;
- ``/undo``: put back the files and the notebook cells the last turn changed, once the
  person confirms (a permission question, whose diffs are the files changed since by
  someone else);
- ``/review [uncommitted | base BRANCH | commit SHA | instructions]``: a review in a
  separate read-only session, its findings told here and to the model;
- ``/notebook PATH``: the notebook whose kernel the kernel tools act on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    ContentToolCallContent,
    PermissionOption,
    TextContentBlock,
    ToolCallUpdate,
    UnstructuredCommandInput,
)

from agent_magics.acp.permissions import fenced
from agent_magics.errors import UserError

if TYPE_CHECKING:
    from agent_magics.acp.chat_session import ChatSession
    from agent_magics.agent.review import ReviewTarget

Command = Callable[["ChatSession", str], Awaitable[None]]
HINTS = {
    "compact": ("Compact the conversation now", "what the summary must keep (optional)"),
    "status": ("The session's model, policies, tokens and notebook", None),
    "undo": ("Put back the files the last turn changed", None),
    "review": (
        "Review changes in a read-only session",
        "uncommitted | base BRANCH | commit SHA | instructions",
    ),
    "notebook": ("Work in a notebook's kernel", "path of the notebook"),
}


def available(notebooks: bool) -> list[AvailableCommand]:
    """The commands offered (``/notebook`` only where a Jupyter server started us)."""
    found = []
    for name, (description, hint) in HINTS.items():
        if name == "notebook" and not notebooks:
            continue
        shape = AvailableCommandInput(root=UnstructuredCommandInput(hint=hint)) if hint else None
        found.append(AvailableCommand(name=name, description=description, input=shape))
    return found


def parse(text: str) -> tuple[str, str] | None:
    """``(name, rest)`` when ``text`` is one of our commands."""
    if not text.startswith("/"):
        return None
    name, _, rest = text[1:].partition(" ")
    return (name, rest.strip()) if name in HINTS else None


async def compact(chat: ChatSession, rest: str) -> None:
    event = await chat.session.compact(rest)
    chat.say(f"Compacted the conversation: {event.tokens_before} → {event.tokens_after} tokens.")


async def status(chat: ChatSession, rest: str) -> None:
    config, session = chat.session.config, chat.session
    lines = [
        f"- model: `{config.model}`",
        f"- approval policy: `{config.approval_policy.value}`",
        f"- sandbox: `{config.sandbox_mode.value}`",
        f"- folder: `{config.cwd}`",
        f"- turns: {session.turns}, tokens: {session.usage.total_tokens}",
        f"- saved as: `{chat.recorder.id}`" if chat.recorder else "- not saved",
    ]
    if chat.attached is not None:
        lines.append(f"- notebook: `{chat.attached}` (the kernel tools run in its kernel)")
    chat.say("\n".join(lines) + "\n")


async def undo(chat: ChatSession, rest: str) -> None:
    from agent_magics.store.undo import plan_undo, undo_turn

    last = chat.session.changes.last
    if last is None:
        chat.say("Nothing to undo: no turn of this session changed files since the last undo.")
        return
    plan = plan_undo(last)
    if plan.refusal:
        chat.say(plan.refusal)
        return
    options = [PermissionOption(option_id="undo", name="Undo", kind="allow_once")]
    if plan.asked:
        options.append(PermissionOption(option_id="all", name="Undo all", kind="allow_once"))
    options.append(PermissionOption(option_id="cancel", name="Cancel", kind="reject_once"))
    whole = "\n\n".join([plan.summary(), *plan.diffs()])
    text = "\n\n".join([plan.summary(), *(fenced(d) for d in plan.diffs())])
    body = ContentToolCallContent(type="content", content=TextContentBlock(type="text", text=text))
    call = ToolCallUpdate(
        tool_call_id=f"undo-{chat.session.turns}", title="Undo the last turn", kind="edit",
        status="pending", content=[body], raw_input={"command": whole},
    )  # fmt: skip
    response = await chat.ask(call, options, new=True)
    chosen = getattr(response.outcome, "option_id", "cancel")
    if chosen not in {o.option_id for o in options}:
        chosen = "cancel"
    if chosen not in ("undo", "all"):
        chat.say("Undo cancelled: the files stay as the turn left them.")
        return
    record = chat.recorder.write if chat.recorder is not None else None
    everything = chosen == "all"
    chat.say(await undo_turn(chat.session.changes, plan, everything=everything, record=record))


async def review(chat: ChatSession, rest: str) -> None:
    from agent_magics.agent.review import check_target, review_note, reviewer, run_review

    target = review_target(rest)
    session = chat.session
    check_target(target, session.config.cwd)
    helper = reviewer(session.config, chat.policy.offers, session.secrets)
    helper.approver = chat.approve
    helper.subscribe(chat.on_event)
    chat.say(f"Reviewing {target.hint()}…\n\n")
    try:
        output, text = await run_review(helper, target)
    finally:
        await helper.aclose()
    chat.say(session.redact.text(text))
    session.add_note(review_note(target, output))


def review_target(rest: str) -> ReviewTarget:
    from agent_magics.agent.review import ReviewTarget

    words = rest.split()
    if not words or words == ["uncommitted"]:
        return ReviewTarget("uncommitted")
    if words[0] == "base" and len(words) == 2:
        return ReviewTarget("base", words[1])
    if words[0] == "commit" and len(words) == 2:
        return ReviewTarget("commit", words[1])
    return ReviewTarget("custom", rest)


async def notebook(chat: ChatSession, rest: str) -> None:
    if chat.notebook is None:
        raise UserError("No Jupyter server started this agent, so there is no kernel to reach.")
    if not rest:
        raise UserError("Say which notebook: /notebook PATH.")
    chat.say(await chat.notebook.attach(Path(rest)))
    chat.attached = rest
    # A command still running was started under a sandbox that did not yet keep the
    # kernel's code and the notebook read-only: it goes.
    chat.session.kill_processes()


COMMANDS: dict[str, Command] = {
    "compact": compact,
    "status": status,
    "undo": undo,
    "review": review,
    "notebook": notebook,
}
