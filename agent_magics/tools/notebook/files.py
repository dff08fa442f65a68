"""The files that hold a notebook: its own and Jupyter's checkpoint of it."""

from __future__ import annotations

from pathlib import Path

CHECKPOINTS = ".ipynb_checkpoints"


def notebook_files(notebook: Path | None) -> list[Path]:
    """The files that hold ``notebook``'s content: its own, and the checkpoint Jupyter
    keeps of it (what "Revert to checkpoint" brings back)."""
    if notebook is None:
        return []
    checkpoint = notebook.parent / CHECKPOINTS / f"{notebook.stem}-checkpoint{notebook.suffix}"
    return [notebook, checkpoint]
