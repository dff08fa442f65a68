"""The notebook as context, in real kernels: what cells printed, showed and raised
reaches the model before the prompt, once, within its budget, with its secrets out."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from agent_magics.jupyter.kernel.cell_log import OUTPUT_HEAD_CHARS, OUTPUT_TAIL_CHARS, cut_marker
from agent_magics.jupyter.kernel.notebook_context import DATA_NOTE
from agent_magics.models.secret import REDACTED
from agent_magics.testing import ScriptedResponsesServer, message
from tests.helpers.kernels import TURN_DONE, Kernel

pytestmark = pytest.mark.slow

FAILING = "values = [3, 4, 5]\nmean = sum(values) / (len(values) - 3)"
TOKEN = "tok-0123456789abcdef"


def texts(body: dict[str, Any]) -> list[str]:
    """The text of every message of a request's input, in order."""
    return [i["content"][0]["text"] for i in body["input"] if i.get("type") == "message"]


def contexts(body: dict[str, Any]) -> list[str]:
    return [t for t in texts(body) if t.startswith("<notebook_context>")]


def turn(kernel: Kernel, server: ScriptedResponsesServer, prompt: str, requests: int) -> None:
    kernel.run(f"%%agent --base-url {server.base_url} -c allow_login_shell=false\n{prompt}")
    kernel.wait_for(lambda: len(server.requests) == requests)
    kernel.wait_for(lambda: kernel.shows(TURN_DONE))


def test_the_failing_cell_reaches_the_model_before_the_prompt(kernel: Kernel) -> None:
    ws: Path = kernel.ws
    with ScriptedResponsesServer([[message("fixed")], [message("ok")]]) as server:
        kernel.run(f"import os\nos.environ['JPY_SESSION_NAME'] = {str(ws / 'analysis.ipynb')!r}")
        kernel.run("print('loaded', 3, 'rows')")
        failed = kernel.run(FAILING)
        assert any(m["msg_type"] == "error" for m in failed)
        preview = kernel.outputs_text(kernel.run("%agent context"))  # leaves it in place
        assert FAILING in preview and "ZeroDivisionError: division by zero" in preview
        turn(kernel, server, "fix the error above", 1)
        first = texts(server.requests[0])
        assert first[-1] == "fix the error above"
        told = first[-2]  # right before the prompt
        assert told.startswith("<notebook_context>\n<notebook>analysis.ipynb</notebook>\n")
        assert DATA_NOTE in told
        cell = re.findall(r"<cell execution_count=\"\d+\">.*?</cell>", told, re.DOTALL)[-1]
        assert f"<source>\n{FAILING}\n</source>" in cell
        error = cell.split("<error>\n")[1].split("\n</error>")[0]
        assert error.startswith("Traceback (most recent call last):\n")
        assert "mean = sum(values) / (len(values) - 3)" in error
        assert error.endswith("ZeroDivisionError: division by zero")
        assert "<output>\nloaded 3 rows\n</output>" in told
        turn(kernel, server, "and now?", 2)  # no cell ran in between
        assert contexts(server.requests[1]) == [told]  # in the history once, not sent again


def test_printed_output_and_figures_reach_the_model_budgeted(kernel: Kernel) -> None:
    with ScriptedResponsesServer([[message("seen")]]) as server:
        kernel.run("for i in range(200_000):\n    print('line', i)")
        kernel.run(
            "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\n"
            "from IPython.display import display\ndisplay({'shown': True})"
        )
        kernel.run(f"import os\nos.environ['SERVICE_TOKEN'] = {TOKEN!r}")
        kernel.run("print(os.environ['SERVICE_TOKEN'])")
        turn(kernel, server, "what happened?", 1)
        (told,) = contexts(server.requests[0])
        printed, plotted, secret = re.findall(r"<output>\n(.*?)\n</output>", told, re.DOTALL)
        assert printed.startswith("line 0\nline 1\n") and printed.endswith("line 199999")
        assert len(printed) < OUTPUT_HEAD_CHARS + OUTPUT_TAIL_CHARS + 100
        total = sum(len(f"line {i}\n") for i in range(200_000))
        assert cut_marker(total - OUTPUT_HEAD_CHARS - OUTPUT_TAIL_CHARS) in printed
        assert "[image/png output]" in plotted and "{'shown': True}" in plotted
        assert secret == REDACTED
        assert TOKEN not in str(server.requests[0])
