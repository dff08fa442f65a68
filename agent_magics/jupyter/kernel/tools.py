"""Which kernel tools a session that lives in a kernel is offered."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_magics.tools.notebook.masking import OutputMask
from agent_magics.tools.registry import ToolHandler

if TYPE_CHECKING:
    from agent_magics.jupyter.kernel.open_notebooks import KernelNotebooks
    from agent_magics.jupyter.kernel.withheld_cells import KernelWithheld


def _nothing() -> OutputMask | None:
    return None  # no policy: nothing is withheld


class KernelTools:
    """The tools of sessions that live in ``shell`` (an IPython InteractiveShell).

    Called whenever a session rebuilds its tools (every turn), so a tool added between
    two cells is offered from the next turn on. The handlers' modules are imported on
    the first call, so loading the extension does not pay for them."""

    def __init__(
        self,
        shell: Any,
        withheld: KernelWithheld | None = None,
        own: Callable[[], Path | None] | None = None,
    ) -> None:
        self.shell = shell
        self.withheld = withheld  # the graded answers the teacher's policy withholds
        self.own = own  # the kernel's notebook, as its server names it
        self._live: KernelNotebooks | None = None  # kept: it keeps the room joined

    @property
    def live(self) -> KernelNotebooks | None:
        """The open notebooks the notebook tools reach (made by the first call)."""
        return self._live

    def __call__(self) -> list[ToolHandler]:
        from agent_magics.jupyter.kernel.inspect_variable import InspectVariableHandler
        from agent_magics.jupyter.kernel.list_variables import ListVariablesHandler
        from agent_magics.jupyter.kernel.open_notebooks import KernelNotebooks
        from agent_magics.jupyter.kernel.run_cell import RunCellHandler
        from agent_magics.jupyter.kernel.run_python import RunPythonHandler
        from agent_magics.tools.functions.registered import registered_tools
        from agent_magics.tools.handlers.edit_notebook import EditNotebookHandler
        from agent_magics.tools.handlers.read_notebook import ReadNotebookHandler

        if self._live is None:  # the notebook tools edit open notebooks live
            self._live = KernelNotebooks(self.shell, keep=True, own=self.own)
        live, withheld = self._live, self.withheld
        if withheld is None:
            mask: Callable[[], OutputMask | None] = _nothing
            notebook: list[ToolHandler] = [ReadNotebookHandler(live), EditNotebookHandler(live)]
        else:
            mask, policy = withheld.mask, withheld.solution_cells
            read = ReadNotebookHandler(live, policy, withheld.withheld)
            notebook = [read, EditNotebookHandler(live, policy)]
        return [
            RunPythonHandler(self.shell, mask),
            RunCellHandler(self.shell, live, mask),
            ListVariablesHandler(self.shell, mask),
            InspectVariableHandler(self.shell, mask),
            *notebook,
            *registered_tools(),  # the person's functions come last
        ]
