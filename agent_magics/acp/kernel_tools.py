"""The kernel tools of a chat, as handlers in the chat's session that call the kernel.

Each runs the kernel's own handler there (:mod:`agent_magics.jupyter.kernel.bridge`);
the specs the model reads are the kernel's own, so nothing is written twice. A tool
that runs code (run_python, run_cell) is asked about here, in the session's approvals
(so "approve for session" and the chat's own question work as for any tool), with the
question the kernel's handler would ask, learned first without running anything; then
the kernel runs exactly the code the person was asked about. The others ask nobody.
"""

from __future__ import annotations

from typing import Any, Literal

from agent_magics.acp.kernel_channel import KernelChannel, _BridgeFailed, _KernelGone
from agent_magics.errors import RespondToModel, TurnAborted
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ContentItem, FunctionPayload, ToolInvocation, ToolOutput
from agent_magics.tools.notebook.document import LiveUnavailable
from agent_magics.tools.runtimes.kernel_code import asked_in_kernel
from agent_magics.tools.spec import FunctionSpec, ToolSpec

ASKING = ("run_python", "run_cell")
"""The kernel tools that run code, so ask first."""


class Policy:
    """What the notebook's teacher's policy says, as the kernel's last answer gave it."""

    def __init__(self) -> None:
        self.solution_cells = "edit"
        self.offered: frozenset[str] = frozenset()

    def update(self, answer: dict[str, Any]) -> None:
        seen = answer.get("policy")
        if isinstance(seen, dict):
            self.solution_cells = str(seen.get("solution_cells") or "edit")
            offered = seen.get("offered")
            if isinstance(offered, list):
                self.offered = frozenset(str(n) for n in offered)


class Bridged:
    """One call to the kernel side, its answer turned into what a handler gives."""

    def __init__(self, channel: KernelChannel, policy: Policy, notebook: str) -> None:
        self.channel = channel
        self.policy = policy
        self.notebook = notebook  # named in sentences: ``analysis.ipynb``

    async def __call__(self, request: dict[str, Any]) -> dict[str, Any]:
        try:
            answer = await self.channel.call(request)
        except _KernelGone as exc:
            raise RespondToModel(
                f"the kernel of {self.notebook} cannot be reached ({exc.value}); nothing "
                "more of the call ran"
            ) from None
        except _BridgeFailed as exc:
            raise RespondToModel(
                f"the kernel of {self.notebook} did not run the call ({exc.name}: {exc.value})"
            ) from None
        self.policy.update(answer)
        if "aborted" in answer:
            raise TurnAborted(str(answer["aborted"]))
        if "unavailable" in answer:
            raise LiveUnavailable(str(answer["unavailable"]), bool(answer.get("maybe")))
        if "error" in answer:
            raise RespondToModel(str(answer["error"]))
        return answer


def tool_output(answer: dict[str, Any]) -> ToolOutput:
    """The ``output`` of an answer as a :class:`ToolOutput`."""
    out = answer.get("output")
    if not isinstance(out, dict):
        raise RespondToModel("the kernel's answer had no output")
    content = out.get("content")
    if isinstance(content, list):
        items: list[ContentItem] = [i for i in content if isinstance(i, dict)]
        return ToolOutput(items, bool(out.get("success", True)))
    return ToolOutput(str(content), bool(out.get("success", True)))


def _arguments(inv: ToolInvocation) -> str:
    if not isinstance(inv.payload, FunctionPayload):
        raise RespondToModel(f"{inv.tool_name} takes JSON arguments")
    return inv.payload.arguments


class KernelTool:
    """A kernel tool offered in a chat: its spec is the kernel's, its work done there."""

    payload_kind: Literal["function", "custom"] = "function"

    def __init__(self, spec: FunctionSpec, parallel: bool, bridged: Bridged) -> None:
        self.name = spec.name
        self._spec = spec
        self.supports_parallel = parallel and spec.name not in ASKING
        self.bridged = bridged

    @classmethod
    def from_wire(cls, wire: dict[str, Any], bridged: Bridged) -> KernelTool:
        """The tool a spec of the kernel's ``tools`` answer describes."""
        parameters = wire.get("parameters")
        spec = FunctionSpec(
            str(wire["name"]),
            str(wire.get("description") or ""),
            parameters if isinstance(parameters, dict) else {"type": "object"},
        )
        return cls(spec, bool(wire.get("parallel")), bridged)

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return self._spec

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        request = {"tool": self.name, "arguments": _arguments(inv), "call_id": inv.call_id,
                   "images": inv.turn.supports_images}  # fmt: skip
        if self.name not in ASKING:
            return tool_output(await self.bridged({"op": "call", **request}))
        prepared = await self.bridged({"op": "prepare", **request})
        asked = prepared.get("ask")
        if not isinstance(asked, dict):
            raise RespondToModel("the kernel's answer had no question")
        code = str(asked.get("code", ""))
        key = (self.name,)  # as the kernel's handler keys it; no kernel picks another tool's

        async def run() -> ToolOutput:
            return tool_output(await self.bridged({"op": "run", **request, "code": code}))

        rejected = str(asked.get("rejected") or "The user did not allow it; nothing ran.")
        return await asked_in_kernel(inv, self.name, code, key, rejected, run)
