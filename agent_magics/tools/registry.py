"""The handler protocol and the registry that maps tool names to handlers and specs."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.spec import ToolSpec

if TYPE_CHECKING:
    from agent_magics.tools.config import ToolsConfig


@runtime_checkable
class ToolHandler(Protocol):
    """A tool's behaviour. One class per file under ``tools/handlers/``.

    ``payload_kind`` is the call kind the tool takes (``function`` for JSON arguments,
    ``custom`` for freeform text). ``handle`` returns the output or raises
    :class:`~agent_magics.errors.RespondToModel` with the text the model should see.
    """

    name: str
    payload_kind: Literal["function", "custom"]
    supports_parallel: bool

    def spec(self, config: ToolsConfig) -> ToolSpec: ...

    async def handle(self, inv: ToolInvocation) -> ToolOutput: ...


@dataclass(frozen=True)
class RegisteredTool:
    handler: ToolHandler
    spec: ToolSpec | None  # None: accepted under this name, not offered to the model
    parallel: bool


class ToolRegistry:
    """Tools of one session, in the order their specs are offered."""

    def __init__(self) -> None:
        self._tools: dict[str, RegisteredTool] = {}

    def register(
        self, name: str, handler: ToolHandler, spec: ToolSpec | None, parallel: bool | None = None
    ) -> None:
        if name in self._tools:
            raise ValueError(f"tool {name!r} registered twice")
        flag = handler.supports_parallel if parallel is None else parallel
        self._tools[name] = RegisteredTool(handler, spec, flag and spec is not None)

    def get(self, name: str) -> RegisteredTool | None:
        return self._tools.get(name)

    def __contains__(self, name: str) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[str]:
        """The names offered to the model, in order (``in`` also knows the names only
        accepted, such as ``local_shell``)."""
        return iter([name for name, tool in self._tools.items() if tool.spec is not None])

    def specs(self) -> list[ToolSpec]:
        return [t.spec for t in self._tools.values() if t.spec is not None]

    def wire_specs(self) -> list[dict[str, object]]:
        return [s.to_wire() for s in self.specs()]
