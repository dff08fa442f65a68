"""Notebook documents for the notebook tools: parsing, showing and editing cells
(:mod:`.document`), the agent's cell edits kept for ``%agent undo`` (:mod:`.cell_undo`),
and the cells nbgrader marks (:mod:`.graded`). Plain files only; the live notebook is the
kernel's (:mod:`agent_magics.jupyter.kernel.live_notebook`)."""
