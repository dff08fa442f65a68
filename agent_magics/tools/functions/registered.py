"""The person's Python functions offered as tools, and ``@agent_magics.tool``.

::

    @agent_magics.tool
    def total(prices: list[float], tax: float = 0.2) -> float:
        \"\"\"Sum the prices and add the tax.\"\"\"
        return sum(prices) * (1 + tax)

    @agent_magics.tool(approval="auto", name="lookup")
    async def find_customer(customer_id: int) -> dict: ...

A session in a kernel offers every registered function from its next turn on, after the
other tools. Registering a function under a name already registered replaces it, so
running the defining cell again offers the new version. A plain :class:`Session` takes
them with ``Session(config, extra_tools=agent_magics.registered_tools)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar, overload

from agent_magics.tools.functions.schema import Approval, FunctionTool, describe_function
from agent_magics.tools.registry import ToolHandler

F = TypeVar("F", bound=Callable[..., Any])


class FunctionTools:
    """Registered functions by tool name, in the order they were first registered.

    Calling the registry gives their handlers: it is a session's ``extra_tools``."""

    def __init__(self) -> None:
        self._tools: dict[str, FunctionTool] = {}

    def add(self, tool: FunctionTool) -> FunctionTool:
        self._tools[tool.name] = tool
        return tool

    def remove(self, name: str) -> bool:
        return self._tools.pop(name, None) is not None

    def get(self, name: str) -> FunctionTool | None:
        return self._tools.get(name)

    def clear(self) -> None:
        self._tools.clear()

    def __iter__(self) -> Iterator[FunctionTool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __call__(self) -> list[ToolHandler]:
        # imported with the first turn that offers them: `import agent_magics` stays light
        from agent_magics.tools.functions.handler import PythonFunctionHandler

        return [PythonFunctionHandler(t) for t in self._tools.values()]

    def __repr__(self) -> str:
        return f"<FunctionTools: {', '.join(self._tools) or 'none'}>"


registered_tools = FunctionTools()
"""The functions registered with :func:`tool` in this process."""


@overload
def tool(function: F, /) -> F: ...


@overload
def tool(
    *, name: str | None = None, approval: Approval = "ask", description: str | None = None
) -> Callable[[F], F]: ...


def tool(
    function: F | None = None,
    /,
    *,
    name: str | None = None,
    approval: Approval = "ask",
    description: str | None = None,
) -> F | Callable[[F], F]:
    """Offer a function (sync or async) to the agent as a tool; returns it unchanged.

    The parameters' schema comes from the signature and type hints (``Annotated[int,
    "what it is"]`` or ``Field(description=...)`` describe one), the description from the
    docstring unless ``description`` is given; ``name`` defaults to the function's.
    ``approval="ask"`` (the default) asks a person before each call unless the approval
    policy is ``never`` (under the ``read-only`` sandbox it never runs unasked: ``never``
    refuses it); ``"auto"`` never asks. Raises
    :class:`~agent_magics.tools.functions.schema.ToolDefinitionError` at once for what
    cannot be a tool (``*args``/``**kwargs``, a type with no JSON form, a built-in
    tool's name)."""

    def register(fn: F) -> F:
        registered_tools.add(
            describe_function(fn, name=name, approval=approval, description=description)
        )
        return fn

    return register(function) if function is not None else register
