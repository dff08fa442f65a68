"""A long notebook conversation in a real kernel against a model with an 8k window: 40
``%%agent`` cells, none fails on its length, every request fits, ``%agent status`` and
the footer say how full the window is, ``%agent compact`` compacts by hand, and after a
kernel restart ``%agent resume last`` continues from the compacted history, not the
whole past."""

from __future__ import annotations

import json

import pytest

from tests.helpers.kernels import Kernel
from tests.helpers.scenario_server import WindowServer

pytestmark = pytest.mark.slow

WINDOW = 8192
OPTIONS = f"-m local-model -a never -s danger-full-access -c model_context_window={WINDOW}"


def step(n: int) -> str:
    return f"step {n}: look at part {n} of the data. " + "x" * 1200


def cell(base_url: str, n: int) -> str:
    return f"%%agent --base-url {base_url} {OPTIONS}\n{step(n)}"


def test_forty_cells_fit_an_8k_window_and_resume_compacted(kernel: Kernel) -> None:
    server = WindowServer(WINDOW)
    try:
        for n in range(1, 41):
            out = kernel.outputs_text(kernel.run(cell(server.base_url, n), timeout=90))
            assert "Traceback" not in out and "AgentTurnFailed" not in out, out
        assert server.summaries >= 3  # compacted again and again, never overflowing
        assert max(server.sizes) <= WINDOW
        status = kernel.outputs_text(kernel.run("%agent status"))
        assert f"of a {WINDOW:,}-token window" in status
        assert any("context " in v and "% of 8,192" in v for v in kernel.html_values())  # footer
        assert any("The conversation fills" in v for v in kernel.html_values())  # past 80%

        kernel.run("%agent compact keep the step numbers")
        done = "Context compacted (as asked)"
        kernel.wait_for(lambda: done in kernel.outputs_text(kernel.log), timeout=60)
        summarising = [r for r in server.requests if not r.get("tools")]
        assert "keep the step numbers" in json.dumps(summarising[-1]["input"][-1])

        kernel.km.restart_kernel(now=True)
        kernel.kc.wait_for_ready(timeout=60)
        kernel.run("%load_ext agent_magics")
        kernel.run("%agent resume last")
        before = len(server.requests)
        kernel.run(cell(server.base_url, 41), timeout=90)
        # (ipykernel 6: in the background; a loaded runner may take a while)
        kernel.wait_for(lambda: len(server.requests) > before, timeout=90)
        resumed = server.requests[before]
        sent = json.dumps(resumed["input"])
        assert "step 41:" in sent and "step 1:" not in sent  # the compacted history
        assert server.sizes[before] <= WINDOW
    finally:
        server.close()
