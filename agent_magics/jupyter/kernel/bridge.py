"""The kernel's side of the kernel tools a chat panel's agent offers.

That agent runs outside the kernel (a process the Jupyter server started), so it sends
each call to the kernel through the server as an ``execute_request``: its code is fixed
(it imports this module from the installed package and awaits :func:`serve`), the call
travels as JSON data in the request's metadata (:data:`REQUEST_KEY`), and the answer
comes back as the reply's user expression (:func:`reply`). Nothing the model wrote is
ever part of the code the kernel runs.

Every call runs the kernel's own handlers (:class:`.tools.KernelTools`, with the
teacher's policy and its masks as a session in the kernel has them). The person is asked
in the agent's process, under its session's approvals, so the handlers that ask
(run_python, run_cell) are run twice: ``prepare`` runs one with an approver that notes
the question and says no, so nothing runs and the agent learns the exact code, key and
refusal to ask with; ``run`` runs it again with an approver that says yes only to the
very code the person was asked about (a cell edited in between runs nothing). The
notebook tools run in the agent's process; the ops ``notebook``, ``apply``, ``note`` and
``held`` lend them the kernel's live documents.

Ops and answers (one JSON object each way; see ``agent_magics.acp.kernel_tools``):
``tools`` gives the tools' specs; ``prepare``, ``run`` and ``call`` give ``output``
(content, success), ``ask`` (code, key, rejected), ``error`` (for the model),
``aborted`` or ``unavailable`` (reason, maybe). Every answer carries ``policy``.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

from agent_magics.errors import RespondToModel, TurnAborted
from agent_magics.protocol.approval import ApprovalPolicy, ApprovalRequest, ReviewDecision
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import FunctionPayload, SessionServices, ToolInvocation, TurnContext
from agent_magics.tools.notebook.cells import locate
from agent_magics.tools.notebook.document import LiveNotebook, LiveUnavailable
from agent_magics.tools.registry import ToolHandler


def own_code_paths() -> list[Path]:
    """Where this kernel takes code from (its environment, the user site, IPython's and
    Jupyter's folders, and this package itself), for the chat's sandbox to keep
    read-only: the agent runs in another environment and knows only its own."""
    import agent_magics
    from agent_magics.tools.sandbox.roots import kernel_code_paths

    package = Path(agent_magics.__file__).resolve().parent
    return [*kernel_code_paths(), package]


REQUEST_KEY = "agent_magics_bridge"
"""Where the call lies in the ``execute_request``'s metadata."""
KERNEL_TOOLS = ("run_python", "run_cell", "list_variables", "inspect_variable")
NOTEBOOK_TOOLS = ("read_notebook", "edit_notebook")
CHANGED = (
    "the code changed after the user was asked about it (the cell was edited meanwhile), "
    "so nothing ran: read the notebook again and make the call again"
)


class Reply:
    """The answer, as the reply's user expression shows it (``application/json``)."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data

    def _repr_json_(self) -> dict[str, Any]:
        return self.data


_reply: dict[str, Any] = {}
_bridge: Bridge | None = None


def reply() -> Reply:
    """The answer of the call :func:`serve` just ran, once."""
    global _reply
    data, _reply = _reply, {}
    return Reply(data)


async def serve() -> None:
    """Run the call of the request being executed (see the module's docstring)."""
    global _bridge, _reply
    from IPython import get_ipython

    shell = get_ipython()
    if _bridge is None or _bridge.shell is not shell:
        _bridge = Bridge(shell)
    parent = shell.kernel.get_parent("shell")
    request = (parent.get("metadata") or {}).get(REQUEST_KEY)
    _reply = {}  # a call interrupted before it answers leaves no stale answer
    answer = await _bridge.answer(request if isinstance(request, dict) else {})
    _reply = json.loads(json.dumps(answer, default=str))


class Bridge:
    """The kernel tools of ``shell``, as the chat's calls reach them."""

    def __init__(self, shell: Any) -> None:
        from agent_magics.jupyter.kernel.cell_log import CellLog
        from agent_magics.jupyter.kernel.jupyter_secrets import register
        from agent_magics.jupyter.kernel.own_notebook import own_notebook
        from agent_magics.jupyter.kernel.tools import KernelTools
        from agent_magics.jupyter.kernel.withheld_cells import KernelWithheld
        from agent_magics.teaching.guard import PolicyGuard

        self.shell = shell
        register(shell)  # the kernel's signing key: scrubbed from what it answers too
        magics = shell.magics_manager.registry.get("AgentMagics")
        if magics is not None:  # the extension is loaded: its tools, its policy
            self.tools: KernelTools = magics.kernel_tools
            self.policy: PolicyGuard = magics.policy
        else:
            self.policy = PolicyGuard(lambda: own_notebook(shell).path)
            policy = self.policy
            withheld = KernelWithheld(shell, CellLog(shell), lambda: policy.seen.solution_cells)
            self.tools = KernelTools(shell, withheld, lambda: policy.path)
        self.state: dict[str, Any] = {}  # the handlers' session state, kept between calls

    def handlers(self) -> dict[str, ToolHandler]:
        seen = self.policy.read()
        wanted = (*KERNEL_TOOLS, *NOTEBOOK_TOOLS)
        return {h.name: h for h in self.tools() if h.name in wanted and seen.offers(h.name)}

    async def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        handlers = self.handlers()
        try:
            answer = await self._answer(request, handlers)
        except TurnAborted as exc:
            answer = {"aborted": str(exc)}
        except LiveUnavailable as exc:
            answer = {"unavailable": exc.reason, "maybe": exc.maybe}
        except RespondToModel as exc:
            answer = {"error": exc.message}
        seen = self.policy.seen
        answer["policy"] = {"solution_cells": seen.solution_cells, "offered": sorted(handlers)}
        return answer

    async def _answer(
        self, request: dict[str, Any], handlers: dict[str, ToolHandler]
    ) -> dict[str, Any]:
        op = request.get("op")
        if op == "tools":
            config = ToolsConfig()
            specs = [h.spec(config).to_wire() | {"parallel": h.supports_parallel}
                     for h in handlers.values() if h.name in KERNEL_TOOLS]  # fmt: skip
            return {"tools": specs, "code_paths": [str(p) for p in own_code_paths()]}
        if op in ("notebook", "apply", "note", "held"):
            return await self._document(op, request)
        tool = str(request.get("tool"))
        handler = handlers.get(tool)
        if handler is None or tool not in KERNEL_TOOLS:
            raise RespondToModel(f"{tool} is not offered in this notebook's kernel")
        if op == "prepare":
            return await self._prepare(handler, request)
        if op == "run":
            code = str(request.get("code"))

            async def approve(asked: ApprovalRequest) -> ReviewDecision:
                if asked.tool_name == tool and tuple(asked.command) == (code,):
                    return ReviewDecision.APPROVED
                raise RespondToModel(CHANGED)

            return _output(await handler.handle(self._invocation(request, approve)))
        if op == "call":
            return _output(await handler.handle(self._invocation(request)))
        raise RespondToModel(f"the kernel's agent_magics does not know the call {op!r}")

    async def _prepare(self, handler: ToolHandler, request: dict[str, Any]) -> dict[str, Any]:
        """The question the call would ask (nothing runs), or the model's answer."""
        asked: list[ApprovalRequest] = []

        async def note(question: ApprovalRequest) -> ReviewDecision:
            asked.append(question)
            return ReviewDecision.DENIED

        try:
            await handler.handle(self._invocation(request, note))
        except RespondToModel as exc:
            if not asked:
                raise
            question = asked[0]
            key = list(question.keys[0]) if question.keys else [handler.name]
            return {"ask": {"code": question.command[0], "key": key, "rejected": exc.message}}
        raise RespondToModel(f"{handler.name} ran without asking; nothing more is done")

    def _invocation(self, request: dict[str, Any], approver: Any = None) -> ToolInvocation:
        """The call as the handler takes it, asking ``approver`` (``None``: nobody, the
        tool never asks); the policy is ``on-request`` so that a handler that runs code
        always asks it."""
        turn = TurnContext(
            cwd=Path.cwd(),
            approval_policy=ApprovalPolicy.ON_REQUEST,
            supports_images=bool(request.get("images", True)),
        )
        services = SessionServices(_state=self.state)
        if approver is not None:
            services = dataclasses.replace(services, approver=approver)
        call = str(request.get("call_id") or "bridge")
        payload = FunctionPayload(str(request.get("arguments") or "{}"))
        return ToolInvocation(call, str(request.get("tool")), payload, turn, services)

    async def _document(self, op: str, request: dict[str, Any]) -> dict[str, Any]:
        """The kernel's live document of the notebook ``path`` (its own, or another a
        server holds open), lent to the chat's notebook tools."""
        path = Path(str(request.get("path")))
        self.tools()  # made on the first call: the kernel's bridge to its documents
        live = self.tools.live
        if live is None:
            raise LiveUnavailable("the kernel has no bridge to its editor")
        found: LiveNotebook | None = live if await live.owns(path) else None
        if found is None:
            held = await live.held_open(path)
            if op == "held":
                return {"held": None if held is None else str(held.target)}
            found = held
        elif op == "held":
            return {"held": str(path)}
        if found is None:
            raise LiveUnavailable("no editor holds it open any more", maybe=True)
        doc = await found.open()
        try:
            if op == "notebook":
                return {"notebook": doc.notebook()}
            changed = request.get("metadata")
            keys = dict(changed) if isinstance(changed, dict) else {}

            def change(metadata: dict[str, Any]) -> None:
                metadata.update(keys)  # the top-level keys the chat's note changed

            if op == "note":
                await doc.note(change)
                return {"done": True}
            anchor = request.get("anchor")  # the cell's id: its place may have moved
            index = None if anchor is None else locate(doc, str(anchor))  # that cell alone
            cell = request.get("cell")
            edit = str(request.get("edit_mode"))
            new = cell if isinstance(cell, dict) else None
            await doc.apply(edit, index, new, change if keys else None)
            return {"done": True}
        finally:
            await doc.close()


def _output(out: Any) -> dict[str, Any]:
    """A tool's output as an answer, without the kernel's secrets (its signing key,
    the runtime folder's tokens): the chat's session scrubs what it knows, which need
    not include this kernel's key."""
    from agent_magics.agent.redaction import MIN_SECRET_LENGTH, REGISTERED
    from agent_magics.models.secret import Scrubber
    from agent_magics.tools.sandbox.jupyter import runtime_secrets

    found = (*REGISTERED, *runtime_secrets())
    scrub = Scrubber(*(s for s in found if len(s.strip()) >= MIN_SECRET_LENGTH))
    content = out.content
    if isinstance(content, str):
        content = scrub(content)
    else:
        content = [{**i, "text": scrub(i["text"])} if isinstance(i.get("text"), str) else i
                   for i in content]  # fmt: skip
    return {"output": {"content": content, "success": bool(out.success)}}
