"""The path one tool call takes through the package, traced: how often control changes
module between the router's dispatch and the output item the session records, which of
the package's modules it visits, how often other modules call back into the handler's
module, and how often a sandbox-denial check runs.

    python bench/call_path.py           # one exec_command (`echo hi`), one apply_patch

Each call runs the way a session dispatches it (the registry ``build_registry`` makes,
``ToolRouter``, ``run_calls``), under ``workspace-write`` and ``on-request``, in a
temporary folder; one untraced call of each kind comes first, so that lazy imports and
the shell snapshot are not counted. Only the event loop's thread is traced.

The trace is logical: a coroutine resumed after an ``await`` or suspended at one is not
a call or a return (the event loop resumes and suspends the whole chain of awaiting
frames; counting that would measure the scheduler, not the design). Control is in the
module of the innermost frame of the package on the stack; a *module change* is a call
or a return that moves it to another module. A *re-entry* is a call into the handler's
module made by code of another module (a callback or closure the handler handed over),
not counting the router's call of ``handle``. A *denial check* is a call of a function
named ``*denied`` / ``*denial`` (``looks_sandbox_denied``, ``is_sandbox_denial``, ...),
the ones a check nests inside it not counted again.

A second, coarser count reads the same trace as a person following the call would: a
*hop* is a module change that is not half of a trip into a helper, where a trip into a
helper is a call from module A into module B that returns to A without control having
left B meanwhile (B's function called no other module of the package: a predicate, a
dataclass, a formatter). Those trips are dropped from the sequence of modules, runs of
the same module merged, and the remaining changes counted: *hops*. *Hops inside the
handler* are those made while the handler's ``handle`` runs (its first call to its
final return), with the modules they visit, and *visits to the handler's module* how
often the hops inside ``handle`` come back to it (the handler as a hub: each visit is
one more place a reader must follow the call back into).
"""

from __future__ import annotations

import asyncio
import dis
import json
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the package, if not installed

from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode
from agent_magics.protocol.items import FunctionCallOutput
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import SessionServices, TurnContext
from agent_magics.tools.handlers.toolset import build_registry
from agent_magics.tools.router import ToolRouter, tool_call_from_item
from agent_magics.tools.runtime import run_calls
from agent_magics.tools.unified_exec import close_tool_processes

PACKAGE = "agent_magics"
YIELD = dis.opmap["YIELD_VALUE"]
DENIAL = re.compile(r"(^|_)(denied|denial)$")
NOT_A_CHECK = frozenset({"write_denied"})  # the text of a denied write, not a check


def _module(frame: FrameType | None) -> str | None:
    """The module of the innermost frame of the package from ``frame`` outwards."""
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name == PACKAGE or name.startswith(PACKAGE + "."):
            return str(name)
        frame = frame.f_back
    return None


def _is_check(frame: FrameType) -> bool:
    name = frame.f_code.co_name
    return bool(DENIAL.search(name)) and name not in NOT_A_CHECK


@dataclass
class Trace:
    handler_module: str
    changes: int = 0
    modules: list[str] = field(default_factory=list)
    reentries: int = 0
    checks: int = 0
    _current: str | None = None
    _seen: set[int] = field(default_factory=set)
    _live: list[FrameType] = field(default_factory=list)  # keeps ids in _seen unique
    _in_check: list[FrameType] = field(default_factory=list)
    _dispatched: bool = False
    steps: list[tuple[str, str]] = field(default_factory=list)  # (call|return, module)
    _handle: FrameType | None = None
    handle_span: tuple[int, int] = (0, 0)  # indices into steps while ``handle`` runs

    def _move(self, module: str | None, kind: str) -> None:
        if module is None or module == self._current:
            return
        if self._current is not None:
            self.changes += 1
        self._current = module
        self.steps.append((kind, module))
        if module not in self.modules:
            self.modules.append(module)

    def hops(self, span: tuple[int, int] | None = None) -> tuple[int, list[str]]:
        """Module changes with trips into helpers dropped (see the module docstring)."""
        kept = self.hop_path(span)
        return max(len(kept) - 1, 0), list(dict.fromkeys(kept))

    def hop_path(self, span: tuple[int, int] | None = None) -> list[str]:
        """The modules control passes through, trips into helpers dropped."""
        steps = self.steps[span[0] : span[1]] if span else self.steps
        kept: list[str] = []
        i = 0
        while i < len(steps):
            kind, module = steps[i]
            if (
                kind == "call"
                and i + 1 < len(steps)
                and steps[i + 1][0] == "return"
                and kept
                and steps[i + 1][1] == kept[-1]
            ):
                i += 2  # a trip into a helper and back
                continue
            if not kept or kept[-1] != module:
                kept.append(module)
            i += 1
        return kept

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            if id(frame) in self._seen:
                return  # a coroutine resumed
            self._seen.add(id(frame))
            self._live.append(frame)
            module = _module(frame)
            here = frame.f_globals.get("__name__")
            if here == self.handler_module and _module(frame.f_back) != here:
                if self._dispatched:
                    self.reentries += 1
                else:
                    self._handle = frame
                    self.handle_span = (len(self.steps), len(self.steps))
                self._dispatched = True
            if module is not None and _is_check(frame):
                if not self._in_check:
                    self.checks += 1
                self._in_check.append(frame)
            self._move(module, "call")
        elif event == "return":
            code = frame.f_code.co_code
            if 0 <= frame.f_lasti < len(code) and code[frame.f_lasti] == YIELD:
                return  # a coroutine suspended at an await
            if self._in_check and self._in_check[-1] is frame:
                self._in_check.pop()
            self._move(_module(frame.f_back), "return")
            if frame is self._handle:
                self.handle_span = (self.handle_span[0], len(self.steps))


def _item(call_id: str, name: str, args: dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(args, str):
        return {"type": "custom_tool_call", "call_id": call_id, "name": name, "input": args}
    return {
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": json.dumps(args),
    }


async def _one(router: ToolRouter, turn: TurnContext, item: dict[str, Any]) -> str:
    """One call as a session makes it: parse, announce, dispatch, the output item."""
    call = tool_call_from_item(item)
    assert call is not None
    router.announce(call)
    outputs = await run_calls(
        [(call.name, router.is_parallel(call), lambda: router.dispatch(call, turn))]
    )
    return str(FunctionCallOutput(call_id=call.call_id, output=outputs[0].content).output)


async def _traced(
    router: ToolRouter, turn: TurnContext, item: dict[str, Any], handler_module: str
) -> tuple[Trace, str]:
    trace = Trace(handler_module)
    sys.setprofile(trace.profile)
    try:
        output = await _one(router, turn, item)
    finally:
        sys.setprofile(None)
    return trace, output


def _handler_module(router: ToolRouter, name: str) -> str:
    tool = router.registry.get(name)
    assert tool is not None
    handler = getattr(tool.handler, "handler", tool.handler)  # a LazyHandler's real one
    return str(type(handler).__module__)


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cwd = Path(tmp).resolve()
        services = SessionServices()
        router = ToolRouter(build_registry(ToolsConfig()), services)
        turn = TurnContext(
            cwd=cwd,
            approval_policy=ApprovalPolicy.ON_REQUEST,
            sandbox_mode=SandboxMode.WORKSPACE_WRITE,
        )
        cases: list[tuple[str, str, Callable[[int], dict[str, Any]]]] = [
            (
                "exec_command",
                "echo hi",
                lambda n: _item(f"c{n}", "exec_command", {"cmd": "echo hi"}),
            ),
            (
                "apply_patch",
                "add a file",
                lambda n: _item(
                    f"p{n}",
                    "apply_patch",
                    f"*** Begin Patch\n*** Add File: f{n}.txt\n+hi\n*** End Patch\n",
                ),
            ),
        ]
        try:
            for name, what, item in cases:
                await _one(router, turn, item(0))  # warm-up: imports, the shell snapshot
                trace, output = await _traced(router, turn, item(1), _handler_module(router, name))
                print(f"{name} ({what}, workspace-write, on-request)")
                print(f"  module changes, dispatch to recorded output: {trace.changes}")
                print(f"  package modules visited: {len(trace.modules)}")
                for module in trace.modules:
                    print(f"    {module}")
                print(f"  re-entries into {trace.handler_module}: {trace.reentries}")
                print(f"  sandbox-denial checks run: {trace.checks}")
                hops, visited = trace.hops()
                print(f"  hops (helper trips dropped), dispatch to output: {hops}")
                print(f"    among {len(visited)} modules")
                hops, visited = trace.hops(trace.handle_span)
                print(f"  hops inside the handler's handle: {hops} among {len(visited)} modules")
                path = trace.hop_path(trace.handle_span)
                back = path[1:].count(trace.handler_module)
                print(f"    of which back into {trace.handler_module}: {back}")
                print(f"  output: {output!r}"[:200])
        finally:
            await close_tool_processes(services)


if __name__ == "__main__":
    asyncio.run(main())
