"""agent_magics: a coding agent in a Jupyter cell, with the Codex tool system.

``%load_ext agent_magics`` adds the ``%%agent`` magic; :func:`ask` and :func:`ask_async`
run a turn of it from code and return the answer; :class:`Session` is the same agent
for plain Python and the ``agent-magics exec`` command.

``import agent_magics``, which every kernel that loads the extension does, imports none
of its parts: a public name (listed in ``__all__``, imported for type checkers below)
is looked up in :data:`_HOMES` when first used (PEP 562), which brings in pydantic,
httpx and the tools.

Before anything else it installs :mod:`agent_magics.import_guard`: nothing the package
imports, now or later, comes from the working folder or another folder the agent can
write.
"""

from __future__ import annotations

from agent_magics import import_guard

import_guard.install()

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing

if TYPE_CHECKING:
    from agent_magics.agent.session import Session, TurnResult
    from agent_magics.config import SessionConfig, load_config
    from agent_magics.errors import (
        AgentMagicsError,
        ArgumentError,
        ConfigError,
        ConnectionFailed,
        Fatal,
        ModelError,
        RespondToModel,
        TurnAborted,
        UserError,
    )
    from agent_magics.jupyter.ask import ask, ask_async
    from agent_magics.jupyter.ui.runner import AgentTurnFailed
    from agent_magics.protocol.approval import (
        ApprovalPolicy,
        ApprovalRequest,
        Approver,
        ReviewDecision,
        SandboxMode,
    )
    from agent_magics.tools.context import ToolInvocation, ToolOutput
    from agent_magics.tools.functions.registered import registered_tools, tool
    from agent_magics.tools.registry import ToolHandler

__version__ = "0.1.0"

_HOMES = (
    "agent_magics.errors",
    "agent_magics.config",
    "agent_magics.agent.session",
    "agent_magics.protocol.approval",
    "agent_magics.tools.context",
    "agent_magics.tools.functions.registered",
    "agent_magics.tools.registry",
    "agent_magics.jupyter.ask",
    "agent_magics.jupyter.ui.runner",
)
"""The modules the public names live in: a name is taken from the first that has it."""


def __getattr__(name: str) -> object:
    """A public name, imported from its module the first time it is asked for."""
    if name in __all__:
        from importlib import import_module

        for home in _HOMES:
            module = import_module(home)
            if name in vars(module):
                value = vars(module)[name]
                globals()[name] = value
                return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext agent_magics``: register ``%%agent`` and ``%agent``."""
    from agent_magics.jupyter.extension import load

    load(ipython)


def unload_ipython_extension(ipython: object) -> None:
    """``%unload_ext agent_magics``: stop running turns and remove the magics."""
    from agent_magics.jupyter.extension import unload

    unload(ipython)


__all__ = [
    "AgentMagicsError",
    "AgentTurnFailed",
    "ApprovalPolicy",
    "ApprovalRequest",
    "Approver",
    "ArgumentError",
    "ConfigError",
    "ConnectionFailed",
    "Fatal",
    "ModelError",
    "RespondToModel",
    "ReviewDecision",
    "SandboxMode",
    "Session",
    "SessionConfig",
    "ToolHandler",
    "ToolInvocation",
    "ToolOutput",
    "TurnAborted",
    "TurnResult",
    "UserError",
    "__version__",
    "ask",
    "ask_async",
    "load_config",
    "load_ipython_extension",
    "registered_tools",
    "tool",
]
