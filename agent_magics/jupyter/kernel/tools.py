"""Which kernel tools a session that lives in a kernel is offered."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agent_magics.tools.registry import ToolHandler

if TYPE_CHECKING:
    from agent_magics.jupyter.kernel.live_notebook import KernelLiveNotebook


class KernelTools:
    """The tools of sessions that live in ``shell`` (an IPython InteractiveShell).

    Called whenever a session rebuilds its tools (every turn), so a tool added between
    two cells is offered from the next turn on. The handlers' modules are imported on
    the first call, so loading the extension does not pay for them."""

    def __init__(self, shell: Any, solution_cells: Callable[[], str] = lambda: "edit") -> None:
        self.shell = shell
        self.solution_cells = solution_cells  # the teacher's policy for graded answers
        self._live: KernelLiveNotebook | None = None  # kept: it keeps the room joined

    def __call__(self) -> list[ToolHandler]:
        from agent_magics.jupyter.kernel.inspect_variable import InspectVariableHandler
        from agent_magics.jupyter.kernel.list_variables import ListVariablesHandler
        from agent_magics.jupyter.kernel.live_notebook import KernelLiveNotebook
        from agent_magics.jupyter.kernel.run_python import RunPythonHandler
        from agent_magics.tools.functions.registered import registered_tools
        from agent_magics.tools.handlers.edit_notebook import EditNotebookHandler
        from agent_magics.tools.handlers.read_notebook import ReadNotebookHandler

        if self._live is None:  # the notebook tools edit the open notebook live
            self._live = KernelLiveNotebook(self.shell, keep=True)
        live = self._live
        return [
            RunPythonHandler(self.shell),
            ListVariablesHandler(self.shell),
            InspectVariableHandler(self.shell),
            ReadNotebookHandler(live, self.solution_cells),
            EditNotebookHandler(live, self.solution_cells),
            *registered_tools(),  # the person's functions come last
        ]
