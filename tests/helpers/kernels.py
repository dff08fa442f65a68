"""Real Jupyter kernels for the kernel and notebook tests, on several ipykernel versions.

The kernels are Python interpreters with ``ipykernel`` and this package installed:

* ``current``: the interpreter running the tests (the project venv: ipykernel 7.x);
* ``ipykernel6``: ``.venv/kernels/ipykernel6``, a second venv with ipykernel 6.29. CI
  creates it (``.ci/run``); by hand::

      python3 -m venv .venv/kernels/ipykernel6
      .venv/kernels/ipykernel6/bin/python -m pip install -e . "ipykernel==6.29.*" pandas matplotlib

* any more interpreters listed in ``AGENT_MAGICS_TEST_PYTHONS`` (separated by ``:``).

A missing ipykernel-6 venv skips its tests with that recipe as the reason, except under
CI (``CI`` set), where it is an error: the point is to run on both major versions.
Each interpreter gets a kernelspec of its own in a temporary folder.
"""

from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager

from agent_magics.transcript.html import DONE_CLASS

ROOT = Path(__file__).resolve().parents[2]
IPYKERNEL6 = Path(sys.prefix) / "kernels" / "ipykernel6" / "bin" / "python"
"""Beside the running interpreter's venv (``.venv/kernels/ipykernel6`` when the tests
run from the checkout's ``.venv``), wherever that venv is."""
RECIPE = (
    "no ipykernel 6 venv: python3 -m venv .venv/kernels/ipykernel6 && "
    '.venv/kernels/ipykernel6/bin/python -m pip install -e . "ipykernel==6.29.*" pandas matplotlib'
)


def _version(python: str) -> str:
    out = subprocess.run(
        [python, "-c", "import ipykernel; print(ipykernel.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def kernel_params() -> list[Any]:
    """One ``pytest.param(python, id=...)`` per kernel interpreter."""
    params = [pytest.param(sys.executable, id=f"ipykernel{_version(sys.executable)}")]
    if IPYKERNEL6.exists():
        params.append(pytest.param(str(IPYKERNEL6), id=f"ipykernel{_version(str(IPYKERNEL6))}"))
    elif os.environ.get("CI"):
        params.append(pytest.param(str(IPYKERNEL6), id="ipykernel6-missing"))
    else:
        params.append(
            pytest.param(str(IPYKERNEL6), id="ipykernel6", marks=pytest.mark.skip(reason=RECIPE))
        )
    for extra in filter(None, os.environ.get("AGENT_MAGICS_TEST_PYTHONS", "").split(":")):
        params.append(pytest.param(extra, id=f"ipykernel{_version(extra)}-{Path(extra).parent}"))
    return params


KERNEL_PYTHONS = kernel_params()
STOP_DEADLINE = 10.0  # seconds for a stop to end a turn; far above what a working stop takes
PLOT = (  # run_python code that draws one matplotlib figure (the saved-figure tests)
    "import matplotlib.pyplot as plt\n"
    "plt.plot(range(50), [x * x for x in range(50)])\n"
    "plt.title('squares')\n"
    "None"
)
TURN_DONE = f'class="{DONE_CLASS}"'
"""In a cell's HTML, a turn that finished: its status line (empty after an answer)."""
NO_LOGIN = "-c allow_login_shell=false"  # keep login-profile noise out of command output


def agent_cell(base_url: str, options: str, prompt: str = "go") -> str:
    """A ``%%agent`` cell against the model server at ``base_url``."""
    return f"%%agent --base-url {base_url} {NO_LOGIN} {options}\n{prompt}"


@contextmanager
def loaded_kernel(python: str, tmp_path: Path) -> Iterator[Kernel]:
    """A kernel of ``python`` working in ``tmp_path/ws``, with the extension loaded."""
    ws = tmp_path / "ws"
    ws.mkdir()
    k = Kernel(kernel_manager(python, tmp_path / "specs"), ws)
    try:
        k.run("%load_ext agent_magics")
        yield k
    finally:
        k.close()


def write_kernelspec(python: str, spec_root: Path) -> str:
    """A kernelspec for ``python`` under ``spec_root/kernels``; returns its name."""
    if not Path(python).exists():
        raise FileNotFoundError(RECIPE)
    name = "agent-magics-test"
    folder = spec_root / "kernels" / name
    folder.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"test kernel ({python})",
        "language": "python",
        "interrupt_mode": "signal",
    }
    (folder / "kernel.json").write_text(json.dumps(spec))
    return name


def kernel_manager(python: str, spec_root: Path) -> KernelManager:
    """A manager for a kernel run by ``python``."""
    name = write_kernelspec(python, spec_root)
    specs = KernelSpecManager(kernel_dirs=[str(spec_root / "kernels")])
    return KernelManager(kernel_name=name, kernel_spec_manager=specs)


class Kernel:
    """A started kernel, its client and every IOPub message seen so far."""

    def __init__(self, km: KernelManager, cwd: Path) -> None:
        self.ws = cwd  # the kernel's working folder
        self.km, self.kc = self._start(km, cwd)
        self.log: list[dict[str, Any]] = []
        self.states: dict[str, dict[str, Any]] = {}

    @staticmethod
    def _start(km: KernelManager, cwd: Path, attempts: int = 3) -> tuple[KernelManager, Any]:
        """Start the kernel; its manager and a client that has seen it ready. A kernel that
        dies before its first reply is started again by a new manager, on new ports: a
        manager picks free ports and closes them before the kernel binds them, and under
        ``pytest -n auto`` another worker's kernel or connection can take one in between
        ("Address already in use"). A failed attempt's client and manager are closed, so
        no socket of theirs is left to the collector."""
        for attempt in range(1, attempts + 1):
            km.start_kernel(cwd=str(cwd))
            kc = km.client()
            kc.start_channels()
            try:
                kc.wait_for_ready(timeout=60)
                return km, kc
            except RuntimeError:
                kc.stop_channels()
                died = not km.is_alive()
                km.shutdown_kernel(now=True)
                if not died or attempt == attempts:
                    raise
                km = KernelManager(
                    kernel_name=km.kernel_name, kernel_spec_manager=km.kernel_spec_manager
                )
        raise AssertionError("unreachable")

    def close(self) -> None:
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)

    # -- IOPub ---------------------------------------------------------------------------

    def _take(self, msg: dict[str, Any]) -> None:
        self.log.append(msg)
        content = msg["content"]
        if msg["msg_type"] == "comm_open":
            self.states[content["comm_id"]] = dict(content["data"].get("state", {}))
        elif msg["msg_type"] == "comm_msg":
            data = content.get("data", {})
            if data.get("method") in ("update", "echo_update"):
                self.states.setdefault(content["comm_id"], {}).update(data.get("state", {}))

    def pump(self, seconds: float = 0.1) -> None:
        end = time.monotonic() + seconds
        while True:
            left = end - time.monotonic()
            try:
                self._take(self.kc.get_iopub_msg(timeout=max(left, 0.01)))
            except queue.Empty:
                if left <= 0:
                    return

    def wait_for(self, what: Callable[[], Any], timeout: float = 30.0) -> Any:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            found = what()
            if found:
                return found
            self.pump(0.05)
        raise AssertionError(f"timed out waiting for {getattr(what, '__name__', what)}")

    def execute(self, code: str) -> str:
        """Send a cell; returns its msg_id (do not wait)."""
        msg_id: str = self.kc.execute(code)
        return msg_id

    def idle(self, msg_id: str) -> bool:
        return any(
            m["msg_type"] == "status"
            and m["parent_header"].get("msg_id") == msg_id
            and m["content"]["execution_state"] == "idle"
            for m in self.log
        )

    def run(self, code: str, timeout: float = 60.0) -> list[dict[str, Any]]:
        """Run a cell to idle; its IOPub messages."""
        msg_id = self.execute(code)
        self.wait_for(lambda: self.idle(msg_id), timeout)
        return [m for m in self.log if m["parent_header"].get("msg_id") == msg_id]

    def value(self, expression: str) -> Any:
        """Evaluate ``expression`` in the kernel (its repr, read back with eval)."""
        msg_id = self.kc.execute("", silent=True, user_expressions={"v": expression})
        reply = self.kc.get_shell_msg(timeout=30)
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.kc.get_shell_msg(timeout=30)
        result = reply["content"]["user_expressions"]["v"]
        assert result["status"] == "ok", result
        return eval(result["data"]["text/plain"])

    def execute_reply(self, msg_id: str) -> dict[str, Any] | None:
        """The cell ``msg_id``'s ``execute_reply``, once it came (``None`` before); shell
        replies to other requests read meanwhile are dropped."""
        while True:
            try:
                reply: dict[str, Any] = self.kc.get_shell_msg(timeout=0.01)
            except queue.Empty:
                return None
            if reply["parent_header"].get("msg_id") == msg_id:
                return reply

    def ipykernel_version(self) -> tuple[int, ...]:
        """The kernel's ipykernel as (major, minor): from 7.4 a cell can wait for its turn
        while its buttons still take clicks."""
        text = self.value("__import__('ipykernel').__version__")
        return tuple(int(p) for p in text.split(".")[:2])

    # -- widgets -------------------------------------------------------------------------

    def buttons(self, description: str) -> list[str]:
        """Comm ids of the Button widgets with this label, oldest first."""
        return [
            m["content"]["comm_id"]
            for m in self.log
            if m["msg_type"] == "comm_open"
            and m["content"]["data"].get("state", {}).get("_model_name") == "ButtonModel"
            and m["content"]["data"]["state"].get("description") == description
        ]

    def click(self, comm_id: str) -> None:
        """Send the comm message a browser sends when the button is pressed."""
        data = {"method": "custom", "content": {"event": "click"}}
        msg = self.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": data})
        self.kc.shell_channel.send(msg)

    def html_values(self) -> list[str]:
        return [
            str(s.get("value", ""))
            for s in self.states.values()
            if s.get("_model_name") == "HTMLModel"
        ]

    def shows(self, text: str) -> bool:
        return any(text in v for v in self.html_values())

    def outputs_text(self, messages: list[dict[str, Any]]) -> str:
        parts = []
        for m in messages:
            c = m["content"]
            if m["msg_type"] == "stream":
                parts.append(c["text"])
            elif m["msg_type"] in ("display_data", "execute_result", "update_display_data"):
                parts.append(str(c["data"].get("text/plain", "")))
            elif m["msg_type"] == "error":
                parts.append("\n".join(c["traceback"]))
        return "".join(parts)

    # -- what a front end saves ------------------------------------------------------------

    def saved_outputs(self, msg_id: str) -> list[dict[str, Any]]:
        """The outputs a front end keeps for the cell run by ``msg_id``, as nbformat
        dicts: its own messages in order, and every ``update_display_data`` (whichever
        request sent it) applied to the outputs with that display id, as JupyterLab
        does."""
        outputs: list[dict[str, Any]] = []
        by_display: dict[str, list[int]] = {}
        for m in self.log:
            kind, content = m["msg_type"], m["content"]
            display_id = (content.get("transient") or {}).get("display_id")
            if kind == "update_display_data":
                shown = {"output_type": "display_data", "data": content["data"]}
                for index in by_display.get(display_id, []):
                    outputs[index] = {**shown, "metadata": content.get("metadata", {})}
                continue
            if m["parent_header"].get("msg_id") != msg_id:
                continue
            if kind == "stream":
                last = outputs[-1] if outputs else None
                if last and last["output_type"] == "stream" and last["name"] == content["name"]:
                    last["text"] += content["text"]
                else:
                    outputs.append({"output_type": "stream", **content})
            elif kind in ("display_data", "execute_result", "error"):
                outputs.append({"output_type": kind, **content})
                outputs[-1].pop("transient", None)
                if display_id is not None:
                    by_display.setdefault(display_id, []).append(len(outputs) - 1)
            elif kind == "clear_output":
                outputs.clear()
                by_display.clear()
        return outputs
