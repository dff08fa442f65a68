"""Kernel memory per turn: RSS growth of a real kernel (jupyter_client) over many
``%%agent`` turns against the scripted loopback model, each turn a command and a patch
whose approval cards a click answers, as in a person's session.

The conversation itself grows with every turn, and so does what any cell costs a kernel
(IPython's input history, the execution count): the note gives the first as the JSON of
the session's items; the baseline is the second, the growth per cell of as many plain
cells run in the same kernel just before the turns.

    .venv/bin/python bench/kernel_memory_bench.py [TURNS]
"""

from __future__ import annotations

import json
import os
import queue
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agent_magics.testing import ScriptedResponsesServer, custom_tool_call, function_call, message

WARMUP = 10  # turns before the first reading: imports, the session, the first scans
PROBE = """
def _bench_probe():
    import gc, json, ipywidgets
    gc.collect()
    with open("/proc/self/status") as f:
        rss = next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    agent = get_ipython().magics_manager.registry["AgentMagics"].agent
    history = agent.session.history if agent.session is not None else []
    size = len(json.dumps(history, default=str))
    return [rss, len(ipywidgets.Widget.widgets), size]
"""


def script(turns: int) -> list[Any]:
    """Each turn a command that asks and a patch that asks, then an answer. The same two
    files every turn: a folder that grows would make the turn's scan grow with it."""
    steps: list[Any] = []
    for n in range(turns):
        change = (
            "*** Add File: notes.txt\n"
            if n == 0
            else f"*** Update File: notes.txt\n@@\n-turn {n - 1}\n"
        )
        patch = f"*** Begin Patch\n{change}+turn {n}\n*** End Patch\n"
        steps.append([function_call("exec_command", {"cmd": f"echo {n} > out.txt"}, f"c{n}")])
        steps.append([custom_tool_call("apply_patch", patch, f"p{n}")])
        steps.append([message(f"Turn {n}: out.txt and notes.txt say {n}.")])
    return steps


class Driver:
    """A kernel in a scratch folder (its own HOME and IPYTHONDIR) and a client that
    clicks every Approve button it sees, as a person would."""

    def __init__(self, tmp: Path) -> None:
        from jupyter_client.manager import KernelManager

        for name in ("ws", "home", "ipython"):
            (tmp / name).mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "HOME": str(tmp / "home"), "IPYTHONDIR": str(tmp / "ipython")}
        self.km = KernelManager(kernel_name="python3")  # as load_ext_kernel does
        self.km.start_kernel(cwd=str(tmp / "ws"), env=env)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.buttons: dict[str, bool] = {}  # Approve buttons seen: comm id -> clicked

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)

    def run(self, code: str, timeout: float = 120.0) -> None:
        """Run a cell to idle, clicking Approve buttons meanwhile."""
        msg_id = self.kc.execute(code)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                msg = self.kc.get_iopub_msg(timeout=1)
            except queue.Empty:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "comm_open":
                state = content["data"].get("state", {})
                if state.get("_model_name") == "ButtonModel" and state["description"] == "Approve":
                    self.buttons[content["comm_id"]] = False
                    if not state.get("disabled"):
                        self._click(content["comm_id"])  # the card asks
            elif kind == "error":
                raise RuntimeError("\n".join(content["traceback"]))
            elif (
                kind == "status"
                and msg["parent_header"].get("msg_id") == msg_id
                and content["execution_state"] == "idle"
            ):
                return
        raise TimeoutError(f"no idle after {timeout} s: {code[:60]!r}")

    def _click(self, comm_id: str) -> None:
        if self.buttons.get(comm_id) is False:
            self.buttons[comm_id] = True
            data = {"method": "custom", "content": {"event": "click"}}
            self.kc.shell_channel.send(
                self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
            )

    def probe(self) -> list[int]:
        msg_id = self.kc.execute("", silent=True, user_expressions={"v": "_bench_probe()"})
        while True:
            reply = self.kc.get_shell_msg(timeout=60)
            if reply["parent_header"].get("msg_id") == msg_id:
                found = reply["content"]["user_expressions"]["v"]
                if found["status"] != "ok":
                    raise RuntimeError(f"probe failed: {found}")
                value: list[int] = json.loads(found["data"]["text/plain"])
                return value


def kernel_memory(turns: int, tmp: Path | None = None) -> dict[str, Any]:
    """KB of kernel RSS per turn over ``turns`` turns after a warm-up, and per plain cell
    over as many plain cells run just before them in the same kernel."""
    folder = Path(tmp or tempfile.mkdtemp(prefix="kernel_memory_"))
    driver = Driver(folder)
    try:
        with ScriptedResponsesServer(script(WARMUP + turns)) as server:
            cell = f"%%agent --base-url {server.base_url} -c allow_login_shell=false -a untrusted\n"
            driver.run("%load_ext agent_magics")
            driver.run(PROBE)
            for n in range(WARMUP):
                driver.run(f"{cell}turn {n}")
            warm = driver.probe()
            for n in range(turns):
                driver.run(f"_bench_{n % 3} = 'cell {n}'")
            plain, clicked = driver.probe(), sum(driver.buttons.values())
            start = time.monotonic()
            for n in range(WARMUP, WARMUP + turns):
                driver.run(f"{cell}turn {n}")
            spent = time.monotonic() - start
            after = driver.probe()
            requests = len(server.requests)
    finally:
        driver.close()
    return {
        "turns": turns,
        "warmup": WARMUP,
        "per_turn_kb": (after[0] - plain[0]) / turns,
        "per_cell_kb": (plain[0] - warm[0]) / turns,
        "history_kb": (after[2] - plain[2]) / 1024 / turns,
        "widgets_left": after[1],
        "clicks": sum(driver.buttons.values()) - clicked,
        "requests": requests,
        "seconds_per_turn": spent / turns,
    }


if __name__ == "__main__":
    print(kernel_memory(int(sys.argv[1]) if len(sys.argv) > 1 else 200))
