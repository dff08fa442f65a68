"""Test tools the benchmarks register: a no-op that goes through the orchestrator, and a
sleeper (parallel-safe or exclusive) for the scheduling benchmarks."""

from __future__ import annotations

import asyncio
from typing import Literal

from agent_magics.protocol.approval import ApprovalRequest
from agent_magics.tools.approval.orchestrator import GuardedCall, run_guarded
from agent_magics.tools.approval.requirement import Skip
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.sandbox import SandboxSpec
from agent_magics.tools.spec import FunctionSpec, ToolSpec, obj

NOOP_OUTPUT = ToolOutput("ok")


class NoopHandler:
    """Returns at once, but through ``run_guarded`` with a ``Skip()`` requirement,
    like a real tool that needs no approval. :meth:`work` is the attempt itself."""

    name = "bench_noop"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = True

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return FunctionSpec(self.name, "Does nothing.", obj({}))

    async def work(self, sandbox: SandboxSpec | None = None) -> ToolOutput:
        return NOOP_OUTPUT

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        request = ApprovalRequest(inv.call_id, self.name, "exec", inv.turn.cwd)
        ran = await run_guarded(inv, GuardedCall(request, Skip(), self.work, "rejected"))
        return ran.value


class SleepHandler:
    """Awaits ``asyncio.sleep(seconds)``; parallel-safe or not, as constructed."""

    payload_kind: Literal["function", "custom"] = "function"

    def __init__(self, name: str, parallel: bool, seconds: float) -> None:
        self.name = name
        self.supports_parallel = parallel
        self.seconds = seconds

    def spec(self, config: ToolsConfig | None = None) -> ToolSpec:
        return FunctionSpec(self.name, f"Sleeps {self.seconds} s.", obj({}))

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        await asyncio.sleep(self.seconds)
        return ToolOutput("slept")
