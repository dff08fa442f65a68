"""The buttons of the agent's cards and questions.

Each is marked with :data:`BUTTON_CLASS`, which the JupyterLab extension
(``agent_magics/jupyter/labextension``) looks for: after a click on one, it gives the
keyboard back to the notebook, on the cell that was selected before the click.
"""

from __future__ import annotations

import ipywidgets as W

BUTTON_CLASS = "agent-magics-button"


def card_button(label: str, style: str = "", *, tooltip: str = "") -> W.Button:
    """A button as wide as its label, in one of ipywidgets' styles ("" for the plain one)."""
    button = W.Button(
        description=label, button_style=style, tooltip=tooltip, layout=W.Layout(width="auto")
    )
    button.add_class(BUTTON_CLASS)
    return button
