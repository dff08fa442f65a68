"""Trojan Source in a real kernel: ``run_python`` code whose bidi controls make a call
read as part of a string. The card that asks, the transcript the cell keeps, the
headless transcript and an export all show the controls written out (``<U+2067>``), so
the ``os.remove`` a person approves is on the screen."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest

from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.text.visible import hidden, visible
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell

pytestmark = pytest.mark.slow

# Shown with its bidi controls acting, the second line reads as one string assignment;
# it removes the file.
TROJAN = (
    'import os\nnote = "keep precious.txt\u2067"; os.remove("precious.txt"); _ = "\u2069\u202e"'
)
SHOWN = 'note = "keep precious.txt<U+2067>"; os.remove("precious.txt"); _ = "<U+2069><U+202E>"'


def script() -> list[Any]:
    return [[function_call("run_python", {"code": TROJAN}, "c1")], [message("ok")]]


def read(text: str) -> str:
    """What a person reads of an HTML value: tags left out, entities read."""
    return html.unescape(re.sub(r"<[^>]*>", "", text))


def displays(kernel: Kernel, mime: str) -> list[str]:
    """Every ``mime`` body the cell's displays showed, updates included."""
    return [
        str(m["content"]["data"][mime])
        for m in kernel.log
        if m["msg_type"] in ("display_data", "update_display_data")
        and mime in m["content"].get("data", {})
    ]


def raw_hidden(texts: list[str]) -> list[str]:
    return sorted({f"U+{ord(c):04X}" for t in texts for c in t if hidden(c)})


def test_the_card_asks_with_the_controls_written_out(kernel: Kernel) -> None:
    precious = kernel.ws / "precious.txt"
    precious.write_text("keep me\n")
    with ScriptedResponsesServer(script()) as server:
        # sent, not run to idle: on ipykernel >= 7.4 the cell stays busy until its turn ends
        cell = kernel.execute(agent_cell(server.base_url, "-a untrusted"))
        approve = kernel.wait_for(lambda: kernel.buttons("Approve"))[-1]
        asked = kernel.html_values()
        assert any(SHOWN in read(v) for v in asked)
        assert raw_hidden(asked) == []
        kernel.click(approve)
        kernel.wait_for(lambda: len(server.requests) == 2)
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
        kernel.wait_for(lambda: kernel.idle(cell))
    assert not precious.exists()  # what ran is what the card showed
    kept_html = kernel.wait_for(lambda: displays(kernel, "text/html"))
    kept_markdown = displays(kernel, "text/markdown")
    assert SHOWN in read(kept_html[-1])
    assert f"```python\n{visible(TROJAN)}\n```" in kept_markdown[-1]
    assert raw_hidden([*kernel.html_values(), *kept_html, *kept_markdown]) == []
    kernel.run("%agent export turn.md")
    exported = (kernel.ws / "turn.md").read_text()
    assert f"```python\n{visible(TROJAN)}\n```" in exported
    assert TROJAN not in exported


def test_the_headless_transcript_shows_them_too(kernel: Kernel) -> None:
    precious = kernel.ws / "precious.txt"
    precious.write_text("keep me\n")
    with ScriptedResponsesServer(script()) as server:
        kernel.run('%config AgentMagics.headless = "always"')
        kernel.run(agent_cell(server.base_url, "-a untrusted"))
        assert len(server.requests) == 2  # the turn ran to its end inside the cell
    markdown = displays(kernel, "text/markdown")
    assert "· denied · by the headless policy" in markdown[-1]
    assert f"```python\n{visible(TROJAN)}\n```" in markdown[-1]
    assert SHOWN in read(displays(kernel, "text/html")[-1])
    assert raw_hidden([*markdown, *displays(kernel, "text/html")]) == []
    assert precious.exists()
