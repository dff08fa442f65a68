"""Reading what a run notebook keeps: its ``%%agent`` cells and the static markdown
transcript each leaves in its outputs (the notebook and Binder tests)."""

from __future__ import annotations

from typing import Any


def markdown_outputs(cell: Any) -> list[str]:
    """The ``text/markdown`` bodies a cell displayed."""
    return [
        o["data"]["text/markdown"]
        for o in cell.get("outputs", [])
        if o.get("output_type") == "display_data" and "text/markdown" in o.get("data", {})
    ]


def agent_cells(nb: Any) -> list[Any]:
    """The notebook's ``%%agent`` code cells, in order."""
    return [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%agent")]
