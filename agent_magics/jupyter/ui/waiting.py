"""Whether a ``%%agent`` cell waits for its turn, and the rewrite that makes it wait.

A cell waits (stays busy until its turn ends, so Run All and the next cell see what the
turn did) when the input transformer turns it into a top-level ``await``: in headless
runs, and on ipykernel >= 7.4 unless the cell asks for the background. Older kernels
give a busy cell no widget messages, so an approval card in it could never be answered:
there the turn runs in the background, and the first such cell says why.

``--background`` is not sticky, unlike the session's options: whether a cell waits is a
property of that cell, which Run All reads in order, not a setting of the conversation.
``%config AgentMagics.background = True`` is the notebook-wide choice.
"""

from __future__ import annotations

import argparse

from agent_magics.jupyter.ui.runner import can_block, ipykernel_version


def in_background(args: argparse.Namespace, setting: bool) -> bool:
    """Whether the cell asked to return at once: ``--background``, or the
    ``background`` setting unless ``--block`` overrides it for this cell."""
    return bool(args.background or (setting and not args.block))


def awaited_call(line: str, body: list[str]) -> list[str]:
    """The cell as one awaited call of the magic, marked so that it waits."""
    magic_line = f"--_awaited {line}".strip()
    return [f"await get_ipython().run_cell_magic('agent', {magic_line!r}, {''.join(body)!r})\n"]


def background_note() -> str:
    """Why a cell that would wait runs its turn in the background."""
    version = ".".join(map(str, ipykernel_version() or ()))
    kernel = f"ipykernel {version}" if version else "This kernel"
    return (
        f"{kernel} cannot deliver button clicks to a busy cell, so this turn runs in the "
        "background: Run All will not wait for it; ipykernel 7.4 or newer waits."
    )


class BackgroundNote:
    """Says :func:`background_note` once per kernel session, and to every ``--block``
    cell (it asked for what the kernel cannot do)."""

    def __init__(self) -> None:
        self.said = False

    def take(self, kernel: object, args: argparse.Namespace, setting: bool) -> str | None:
        """The note for a cell that runs in the background, if it is due."""
        if in_background(args, setting) or can_block(kernel):
            return None  # asked for, or not run from a cell the transformer saw
        if self.said and not args.block:
            return None
        self.said = True
        return background_note()
