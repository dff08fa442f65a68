"""The ``multi_agent_v1`` tools: spawn_agent, send_input, resume_agent, wait_agent and
close_agent, offered as one namespace in Codex's place (after view_image).

Schemas are Codex's, descriptions our own; the outputs and refusals are Codex 0.171's
byte for byte (compact JSON; see :mod:`agent_magics.agent.agent_ids`). The model calls a
member with ``namespace: "multi_agent_v1"``; the registry knows each member by the
namespace and name run together (:attr:`agent_magics.tools.router.ToolCall.key`). The
work is done by :mod:`agent_magics.agent.subagents`.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel

from agent_magics.agent.agent_ids import dumps, parse_agent_id
from agent_magics.agent.subagents import DEPTH_LIMIT, AgentNode, Child, not_found
from agent_magics.clock import current as current_clock
from agent_magics.errors import RespondToModel
from agent_magics.tools.args import decode_call
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.registry import ToolHandler
from agent_magics.tools.spec import (
    FunctionSpec,
    JsonSchema,
    NamespaceSpec,
    ToolSpec,
    array,
    boolean,
    number,
    obj,
    string,
)

NAMESPACE = "multi_agent_v1"
MIN_WAIT_MS, DEFAULT_WAIT_MS, MAX_WAIT_MS = 10_000, 30_000, 3_600_000


def _input_items() -> JsonSchema:
    item = obj(
        {
            "type": string(
                "Kind of item: text, image, local_image, audio, local_audio, skill or mention."
            ),
            "text": string("The words, for a text item."),
            "image_url": string("Address of the picture, for an image item."),
            "audio_url": string("Data URL of the sound, for an audio item."),
            "path": string(
                "File path for local_image, local_audio and skill items; for a mention, the "
                "target such as app://<connector-id> or plugin://<plugin-name>@<marketplace-name>."
            ),
            "name": string("Name shown for a skill or mention item."),
        }
    )
    return array(
        item, "The input as typed items, e.g. to name a connector explicitly (app:// paths)."
    )


def _specs() -> tuple[FunctionSpec, ...]:
    spawn = obj(
        {
            "message": string("The new agent's task in plain text (give this or items)."),
            "items": _input_items(),
            "fork_context": boolean(
                "Give the new agent this conversation so far; by default it sees only its task."
            ),
            "model": string("Another model for the new agent; leave out to keep yours."),
            "reasoning_effort": string("Another reasoning effort; leave out to keep yours."),
        },
        None,
    )
    send = obj(
        {
            "target": string("Id of the agent to write to, as spawn_agent returned it."),
            "message": string("The text to send (give this or items)."),
            "items": _input_items(),
            "interrupt": boolean(
                "Stop what the agent is doing and take this message at once; otherwise it "
                "waits its turn."
            ),
        },
        ["target"],
    )
    wait = obj(
        {
            "targets": array(
                string(), "Ids of the agents to wait for; returns when any of them is done."
            ),
            "timeout_ms": number(
                "How long to wait, in milliseconds: 30000 unless given, at least 10000, at "
                "most 3600000. Wait minutes rather than asking again and again."
            ),
        },
        ["targets"],
    )
    return (
        FunctionSpec(
            "close_agent",
            "Shut an agent down, with the agents it started, once you need it no more; "
            "answers the status it had. A finished agent still takes one of the few open "
            "slots until it is closed, so close agents you are done with.",
            obj({"target": string("Id of the agent to shut down.")}, ["target"]),
        ),
        FunctionSpec(
            "resume_agent",
            "Open again an agent that was closed, so that send_input and wait_agent reach it.",
            obj({"id": string("Id of the closed agent.")}, ["id"]),
        ),
        FunctionSpec(
            "send_input",
            "Give an agent you started another message. Set interrupt to redirect it now. "
            "Prefer this to a new agent when the work builds on what that agent already did.",
            send,
        ),
        FunctionSpec(
            "spawn_agent",
            "Start a helper agent on a separate, well-bounded piece of work that can go on "
            "while you keep working; it uses your model unless you ask for another. Answers "
            "the agent's id and a nickname. Start helpers only when the person (or the "
            "project's instructions) asks for delegation or parallel agents; wanting care or "
            "depth is no reason to. Keep urgent work that your next step depends on for "
            "yourself, give each helper a task that stands on its own and files of its own "
            "to change, ask it to list the files it changed, and do other work meanwhile "
            "instead of waiting at once.",
            spawn,
        ),
        FunctionSpec(
            "wait_agent",
            "Wait until agents reach a final status (a finished one comes with its last "
            "message). An empty status means the time ran out. A message also tells you "
            "when an agent finishes.",
            wait,
        ),
    )


class _Input(BaseModel):
    message: str | None = None
    items: list[dict[str, Any]] | None = None

    def text(self) -> str:
        """The input as the agent's user message, refused in Codex's words."""
        if self.message is not None and self.items is not None:
            raise RespondToModel("Provide either message or items, but not both")
        if self.message is None and self.items is None:
            raise RespondToModel("Provide one of: message or items")
        if self.message is not None:
            if not self.message.strip():
                raise RespondToModel("Empty message can't be sent to an agent")
            return self.message
        if not self.items:
            raise RespondToModel("Items can't be empty")
        return "\n".join(_preview(item) for item in self.items)


def _preview(item: dict[str, Any]) -> str:
    kind = item.get("type")
    if kind == "text":
        return str(item.get("text") or "")
    if kind == "image":
        return "[image]"
    if kind in ("local_image", "skill", "mention"):
        return f"[{kind}:{item.get('name') or item.get('path') or ''}]"
    return "[input]"


class SpawnAgentArgs(_Input):
    fork_context: bool = False
    agent_type: str | None = None
    model: str | None = None
    reasoning_effort: str | None = None


class SendInputArgs(_Input):
    target: str
    interrupt: bool = False


class ResumeAgentArgs(BaseModel):
    id: str


class WaitArgs(BaseModel):
    targets: list[str]
    timeout_ms: int | None = None


class CloseAgentArgs(BaseModel):
    target: str


class _Member:
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = False

    def __init__(self, node: AgentNode, spec: FunctionSpec) -> None:
        self.node, self._spec, self.name = node, spec, spec.name

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return self._spec

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        return ToolOutput(await getattr(self, f"_{self.name}")(inv))

    async def _spawn_agent(self, inv: ToolInvocation) -> str:
        args = decode_call(SpawnAgentArgs, inv)
        role = (args.agent_type or "").strip()
        if role and role != "default":
            raise RespondToModel(f"unknown agent_type '{role}'")
        prompt = args.text()
        model = self.node.session.config.model
        if args.model is not None and args.model != model:
            raise RespondToModel(
                f"Unknown model `{args.model}` for spawn_agent. Available models: {model}"
            )
        child = await self.node.spawn(inv.call_id, prompt, fork=args.fork_context, model=None)
        return dumps({"agent_id": child.agent_id, "nickname": child.nickname})

    async def _send_input(self, inv: ToolInvocation) -> str:
        args = decode_call(SendInputArgs, inv)
        agent_id = parse_agent_id(args.target)
        text = args.text()
        child = self.node.child(agent_id)
        if child.status == "shutdown":  # stopped with its parent's turn, not closed
            raise RespondToModel(f"agent with id {agent_id} is closed")
        child.submit(text, interrupt=args.interrupt)
        return dumps({"submission_id": str(uuid.uuid4())})

    async def _resume_agent(self, inv: ToolInvocation) -> str:
        agent_id = parse_agent_id(decode_call(ResumeAgentArgs, inv).id)
        if not self.node.can_spawn:
            raise RespondToModel(DEPTH_LIMIT)
        control = self.node.control
        child = control.open.get(agent_id)
        if child is None:
            closed = control.closed.get(agent_id)
            if closed is None:
                raise not_found(agent_id)
            self.node.reopen(inv.call_id, closed)
            child = closed
        return dumps({"status": child.status_value()})

    async def _wait_agent(self, inv: ToolInvocation) -> str:
        args = decode_call(WaitArgs, inv)
        if not args.targets:
            raise RespondToModel("agent ids must be non-empty")
        ids = [parse_agent_id(t) for t in args.targets]
        timeout = DEFAULT_WAIT_MS if args.timeout_ms is None else args.timeout_ms
        if timeout <= 0:
            raise RespondToModel("timeout_ms must be greater than zero")
        timeout = min(max(timeout, MIN_WAIT_MS), MAX_WAIT_MS)
        open_ = self.node.control.open
        status = _finals(ids, open_)
        if not status:
            status = await _wait_any([open_[i] for i in ids], timeout / 1000, ids, open_)
        return dumps({"status": status, "timed_out": not status})

    async def _close_agent(self, inv: ToolInvocation) -> str:
        agent_id = parse_agent_id(decode_call(CloseAgentArgs, inv).target)
        before = await self.node.child(agent_id).close()
        return dumps({"previous_status": before})


def _finals(ids: list[str], open_: dict[str, Child]) -> dict[str, object]:
    status: dict[str, object] = {}
    for agent_id in ids:
        child = open_.get(agent_id)
        if child is None:
            status[agent_id] = "not_found"
        elif child.final:
            status[agent_id] = child.status_value()
    return status


async def _wait_any(
    children: list[Child], timeout_s: float, ids: list[str], open_: dict[str, Child]
) -> dict[str, object]:
    """The final statuses once one of ``children`` is final, or none at the deadline."""
    clock = current_clock()  # a rule of the agent's, not an I/O deadline
    deadline = clock.monotonic() + timeout_s
    while True:
        left = deadline - clock.monotonic()
        if left <= 0:
            return {}
        waits = [asyncio.ensure_future(c.changed.wait()) for c in children]  # bound now
        try:
            await clock.wait(waits, left)
        finally:
            for w in waits:
                w.cancel()
        status = _finals(ids, open_)
        if status:
            return status


class MultiAgentTools:
    """The namespace: offered as one spec, its members registered one by one."""

    name = NAMESPACE
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = False

    def __init__(self, node: AgentNode, offers: Callable[[str], bool] | None = None) -> None:
        kept = [s for s in _specs() if offers is None or offers(s.name)]
        self.members: list[ToolHandler] = [_Member(node, s) for s in kept]

    def spec(self, config: ToolsConfig) -> ToolSpec:
        tools = tuple(m.spec(config) for m in self.members)
        return NamespaceSpec(
            NAMESPACE,
            "Start helper agents and manage them.",
            tuple(t for t in tools if isinstance(t, FunctionSpec)),
        )

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        raise RespondToModel(f"unsupported call: {inv.tool_name}")  # the router refuses first


def multi_agent_tools(
    node: AgentNode, offers: Callable[[str], bool] | None = None
) -> tuple[ToolHandler, ...]:
    """The namespace with the tools ``offers`` lets through (a teacher's policy may
    name one of them), or nothing when it lets none through."""
    tools = MultiAgentTools(node, offers)
    return (tools,) if tools.members else ()
