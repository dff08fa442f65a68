"""What the ``%agent`` line commands read and change of the magics that run them.

:class:`~agent_magics.jupyter.magics.AgentMagics` is the one implementation; the line
commands (:mod:`.line_commands`, :mod:`.review_command`) sit below it and name only this.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from agent_magics.agent.session import Session
    from agent_magics.config import SessionConfig
    from agent_magics.jupyter.kernel.notebook_context import NotebookContext
    from agent_magics.jupyter.kernel.own_notebook import OwnNotebook
    from agent_magics.jupyter.kernel.tools import KernelTools
    from agent_magics.jupyter.ui.controller import Controller
    from agent_magics.jupyter.ui.sticky import StickySettings
    from agent_magics.jupyter.ui.trust_question import ProjectTrust
    from agent_magics.teaching.guard import PolicyGuard


class MagicsState(Protocol):
    """The magics as a line command sees them: the kernel's shell, the settings, the
    controller of the turns and the kernel's parts it built."""

    recording: str | None
    """``%agent recording``: played when no model is set."""
    found_notebook: OwnNotebook | None

    @property
    def shell(self) -> Any: ...
    @property
    def background(self) -> bool: ...
    @property
    def sticky(self) -> StickySettings: ...
    @property
    def agent(self) -> Controller: ...
    @property
    def session(self) -> Session | None: ...
    @property
    def policy(self) -> PolicyGuard: ...
    @property
    def trust(self) -> ProjectTrust: ...
    @property
    def kernel_tools(self) -> KernelTools: ...
    @property
    def notebook(self) -> NotebookContext: ...

    def agent_cell(self, line: str, cell: str) -> Any: ...
    def current_config(self) -> SessionConfig | None: ...
    def headless_now(self) -> bool: ...
