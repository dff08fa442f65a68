"""The notebook tools' specs: ``read_notebook`` and ``edit_notebook``."""

from __future__ import annotations

from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.spec import FunctionSpec, ToolSpec, boolean, number, obj, string

READ_NOTEBOOK_DESCRIPTION = (
    "Show a Jupyter notebook (.ipynb) as numbered cells: each cell's id (what edit_notebook "
    "takes), type, execution count and source, then its outputs as text. Use it instead of "
    "reading the notebook's JSON. Images in outputs are listed; ask for them with "
    "include_images to see them."
)
EDIT_NOTEBOOK_DESCRIPTION = (
    "Change one cell of a Jupyter notebook file (.ipynb). edit_mode `replace` (the "
    "default) sets the source of the cell `cell_id` (and its type, if given), `insert` adds "
    "a new cell after `cell_id` (at the top when cell_id is omitted; cell_type is then "
    "required), `delete` removes the cell `cell_id`. Cell ids are shown by read_notebook. "
    "The notebook stays valid; a replaced code cell loses its stale outputs."
)


def read_notebook_spec(config: ToolsConfig) -> ToolSpec:
    params = obj(
        {
            "path": string("The notebook file, absolute or relative to the working folder."),
            "start_cell": number("Number of the first cell to show, counted from 1."),
            "end_cell": number("Number of the last cell to show; the last cell if omitted."),
            "include_outputs": boolean("Show the cells' outputs (true by default)."),
            "include_images": boolean("Attach the images found in the outputs shown."),
        },
        ["path"],
    )
    return FunctionSpec("read_notebook", READ_NOTEBOOK_DESCRIPTION, params)


def edit_notebook_spec(config: ToolsConfig) -> ToolSpec:
    params = obj(
        {
            "path": string("The notebook file, absolute or relative to the working folder."),
            "cell_id": string("Id of the cell to change, or to insert after."),
            "new_source": string("The cell's new source (not used by delete)."),
            "cell_type": string("code, markdown or raw; required by insert."),
            "edit_mode": string("replace (default), insert or delete."),
        },
        ["path"],
    )
    return FunctionSpec("edit_notebook", EDIT_NOTEBOOK_DESCRIPTION, params)
