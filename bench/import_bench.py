"""What a user waits for before the agent starts: ``import agent_magics``,
``%load_ext agent_magics`` in a real kernel, and the first turn's first request.

    .venv/bin/python bench/import_bench.py
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from typing import Any

RUNS = 7
FIRST_TURN = """
import asyncio, json, sys, tempfile, time
from pathlib import Path
from agent_magics.config import SessionConfig
from agent_magics.agent.session import Session
from agent_magics.testing import ScriptedResponsesServer, message
arrived = []
def answer(body):
    arrived.append(time.perf_counter())
    return [message("ok")]
async def main(url):
    s = Session(SessionConfig(model="m", base_url=url, cwd=Path(tempfile.mkdtemp()),
                              api_key="k", shell_type="disabled"))
    spent = []
    for _ in range(3):
        start = time.perf_counter()
        await s.run_turn("hi")
        spent.append(arrived[-1] - start)
    await s.aclose()
    return spent
with ScriptedResponsesServer([answer] * 3) as server:
    print(json.dumps(asyncio.run(main(server.base_url))))
"""


def _wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - start


def import_costs(runs: int = RUNS) -> dict[str, list[float]]:
    """Seconds of ``python -c "import agent_magics"`` and ``python -c pass``, interleaved."""
    ours, baseline = [], []
    for _ in range(runs):
        ours.append(_wall([sys.executable, "-c", "import agent_magics"]))
        baseline.append(_wall([sys.executable, "-c", "pass"]))
    return {"candidate": ours, "baseline": baseline}


def _execute(client: Any, code: str) -> float:
    start = time.perf_counter()
    reply = client.execute_interactive(code, timeout=60, output_hook=lambda msg: None)
    spent = time.perf_counter() - start
    if reply["content"]["status"] != "ok":
        raise RuntimeError(f"{code!r} failed in the kernel: {reply['content']}")
    return spent


def load_ext_costs(runs: int = RUNS) -> dict[str, list[float]]:
    """Seconds of an execute of ``%load_ext agent_magics`` in a fresh real kernel, and of
    an execute of ``pass`` just before it in the same kernel (the round trip itself)."""
    from jupyter_client.manager import start_new_kernel

    ours, baseline = [], []
    for _ in range(runs):
        km, client = start_new_kernel(kernel_name="python3")
        try:
            _execute(client, "pass")  # the first execute pays for the kernel's own set-up
            baseline.append(_execute(client, "pass"))
            ours.append(_execute(client, "%load_ext agent_magics"))
        finally:
            client.stop_channels()
            km.shutdown_kernel(now=True)
    return {"candidate": ours, "baseline": baseline}


def first_turn_costs(runs: int = RUNS) -> dict[str, list[float]]:
    """Seconds from ``Session.run_turn`` to the request reaching the scripted server: the
    first turn of a fresh process, and the third turn of the same session."""
    import json

    first, later = [], []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", FIRST_TURN], check=True, capture_output=True, text=True
        )
        spent = json.loads(out.stdout.splitlines()[-1])
        first.append(spent[0])
        later.append(spent[-1])
    return {"candidate": first, "baseline": later}


if __name__ == "__main__":
    for name, costs in (
        ("import", import_costs()),
        ("load_ext", load_ext_costs()),
        ("first_turn", first_turn_costs()),
    ):
        medians = {k: f"{statistics.median(v) * 1e3:.1f} ms" for k, v in costs.items()}
        print(name, medians)
