"""A finished turn's figures, stored once in the saved notebook.

A plot turn's transcript carried every figure three times, as a data URL in its
text/html, its text/markdown and its text/plain (344 KB for one plot turn). Now the
markdown and plain text name a figure in words, and the figure is kept once: as an
``image/png`` (or jpeg, gif, webp) output of its own right below the card that drew it
when the turn ran inside its cell (awaited: headless runs, and ipykernel >= 7.4 by
default), the transcript going on in the next output, which JupyterLab, nbconvert,
nbviewer, VS Code and GitHub all show, trusted or not; inside the transcript's
text/html when the turn ran in the background, since an output displayed after its cell
ended may land in another cell, while the transcript itself is replaced in place
through its display id.
"""

from __future__ import annotations

import re
from typing import Any

DATA_URL = re.compile(r"^data:(image/(?:png|jpeg|gif|webp));base64,([A-Za-z0-9+/=\s]+)$")

BELOW = "shown below this card"
IN_HTML = "shown in this output's HTML"


def figure_words(alt: str, apart: bool) -> str:
    """What the text of a transcript says in a figure's place."""
    return f"{alt}: {BELOW if apart else IN_HTML}"


class Figure:
    """One figure as a cell output of its own: the image, and its name as plain text."""

    def __init__(self, url: str, alt: str) -> None:
        found = DATA_URL.match(url)
        if found is None:
            raise ValueError("not an embedded raster image")
        self.mimetype, self.data = found.group(1), re.sub(r"\s", "", found.group(2))
        self.alt = alt

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        return {self.mimetype: self.data, "text/plain": f"<{self.alt}>"}
