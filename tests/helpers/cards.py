"""Reading the cards of a turn in a real kernel as a person would (tags left out,
entities read) and answering their questions by button, for the card tests."""

from __future__ import annotations

import html
import re
import time
from typing import Any

from agent_magics.testing import ScriptedResponsesServer
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell

WAIT_S = 2.5  # how long the person takes to answer the first question


def read(text: str) -> str:
    """What a person reads of an HTML value: tags left out, entities read."""
    return html.unescape(re.sub(r"<[^>]*>", "", text))


def kept(kernel: Kernel, mime: str) -> str:
    """The last ``mime`` body the cell's display showed: the transcript it keeps (it
    replaces the widgets once the turn is over, which is after the cell went idle when
    the turn runs in the background)."""

    def bodies() -> list[str]:
        return [
            str(m["content"]["data"][mime])
            for m in kernel.log
            if m["msg_type"] in ("display_data", "update_display_data")
            and mime in m["content"].get("data", {})
        ]

    return str(kernel.wait_for(bodies)[-1])


def question(value: str) -> bool:
    """Whether an HTML value is a card's question (bold, but no status in it)."""
    return value.startswith("<b>") and "font-weight:600" not in value


def asking(kernel: Kernel, n: int) -> str:
    """What the cards read once the ``n``-th question is on screen."""
    kernel.wait_for(lambda: len(kernel.buttons("Approve")) >= n)
    kernel.wait_for(lambda: any(question(v) for v in kernel.html_values()))
    return "\n".join(read(v) for v in kernel.html_values())


def run_turn(kernel: Kernel, script: list[Any], options: str, answers: list[str]) -> list[str]:
    """Run one turn, answering its questions in order with these buttons; returns what
    the cards read at each question."""
    seen = []
    with ScriptedResponsesServer(script) as server:
        cell = kernel.execute(agent_cell(server.base_url, options))
        for n, label in enumerate(answers, 1):
            seen.append(asking(kernel, n))
            if label == "Approve" and n == 1:
                time.sleep(WAIT_S)  # the person reads the card before answering
            kernel.click(kernel.wait_for(lambda label=label: kernel.buttons(label))[-1])
            kernel.wait_for(  # answered: no question left, or the next one is up
                lambda n=n: (
                    len(kernel.buttons("Approve")) > n
                    or not any(question(v) for v in kernel.html_values())
                )
            )
        kernel.wait_for(lambda: kernel.shows(TURN_DONE), timeout=60)
        kernel.wait_for(lambda: kernel.idle(cell))
    assert len(kernel.buttons("Approve")) == len(answers)  # no other call asked
    return seen
