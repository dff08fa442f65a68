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


def transcript(cell: Any) -> str:
    """An ``%%agent`` cell's whole saved transcript: its markdown parts in order (a
    figure splits it, each shown right below the card that drew it)."""
    return "\n\n".join(markdown_outputs(cell))


def agent_cells(nb: Any) -> list[Any]:
    """The notebook's ``%%agent`` code cells, in order."""
    return [c for c in nb.cells if c.cell_type == "code" and c.source.startswith("%%agent")]
