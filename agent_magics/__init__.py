"""agent_magics: a coding agent in a Jupyter cell, with the Codex tool system.

``%load_ext agent_magics`` adds the ``%%agent`` magic; :class:`Session` is the same agent
for plain Python and the ``agent-magics exec`` command.
"""

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
from agent_magics.session import Session, TurnResult
from agent_magics.tools.approval import (
    ApprovalPolicy,
    ApprovalRequest,
    Approver,
    ReviewDecision,
    SandboxMode,
)
from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.functions import registered_tools, tool
from agent_magics.tools.registry import ToolHandler

__version__ = "0.1.0"


def load_ipython_extension(ipython: object) -> None:
    """``%load_ext agent_magics``: register ``%%agent`` and ``%agent``."""
    from agent_magics.magics import load

    load(ipython)


def unload_ipython_extension(ipython: object) -> None:
    """``%unload_ext agent_magics``: stop running turns and remove the magics."""
    from agent_magics.magics import unload

    unload(ipython)


__all__ = [
    "AgentMagicsError",
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
    "load_config",
    "load_ipython_extension",
    "registered_tools",
    "tool",
]
