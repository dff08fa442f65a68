"""Rebuild the README's screenshots from a new user's session in JupyterLab.

A small data project is made in a temporary folder with its own venv (on top of this
interpreter, ``--system-site-packages``) and that venv's kernel; ``jupyter lab`` starts in
the project with jupyter-collaboration and a token, on 127.0.0.1; Debian's Chromium
(Playwright) clicks through a data-exploration session as a person would: load a CSV, ask
the agent to inspect and plot it, run the project's script (a pip install denied, the
script approved for the session), insert a cell, patch the script, ``%agent undo``,
restart the kernel, ``%agent resume last`` and one more turn. The model is the scripted
server of ``agent_magics.testing`` on 127.0.0.1, pointed to by ``OPENAI_BASE_URL`` as a
person would point the lab at their model server. Screenshots (1280x800, PNG, each kept
under 200 KB) go to this folder.

Slow (a minute or two) and not part of the test suite. From the repository root::

    .venv/bin/python notebooks/images/make_screenshots.py [--out FOLDER] [--keep]

``--keep`` leaves the project folder (its path is printed) to look at afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import nbformat  # noqa: E402
from PIL import Image  # noqa: E402

from agent_magics.testing import (  # noqa: E402
    ScriptedResponsesServer,
    custom_tool_call,
    function_call,
    message,
)
from tests.helpers.browser import CHROMIUM, _listening_port, free_port, stop_server  # noqa: E402
from tests.helpers.sandbox import outside_base  # noqa: E402

HERE = Path(__file__).resolve().parent
VIEWPORT: Any = {"width": 1280, "height": 800}
nbf: Any = nbformat
MAX_BYTES = 200_000
KERNEL = "project-venv"
KERNEL_NAME = "Python (project .venv)"
COMMAND = "python scripts/summarize.py data/sales.csv"

SUMMARIZE = '''"""Print the revenue per region and the best month of a sales CSV."""

import sys

import pandas as pd


def main(path: str) -> None:
    sales = pd.read_csv(path, parse_dates=["date"])
    by_region = sales.groupby("region")["revenue"].agg(["sum", "mean"]).round(2)
    print(by_region.to_string())
    month = sales.set_index("date").resample("MS")["revenue"].sum()
    print(f"best month: {month.idxmax():%Y-%m} ({month.max():,.2f})")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "data/sales.csv")
'''

README = """# Sales 2024

`data/sales.csv`: one row per order (date, region, product, units, price, revenue).
`python scripts/summarize.py data/sales.csv` prints the revenue per region.
`explore.ipynb` is where we look at the data.
"""

PLOT = """import matplotlib.pyplot as plt

monthly = sales.pivot_table(index=sales["date"].dt.to_period("M"), columns="region",
                            values="revenue", aggfunc="sum")
ax = monthly.plot(figsize=(7, 3.2), marker="o", title="Monthly revenue per region")
ax.set_xlabel("month")
ax.set_ylabel("revenue")
plt.tight_layout()
plt.show()"""

TOP5 = """top5 = sales.groupby("product")["revenue"].sum().nlargest(5)
top5"""

PATCH = """*** Begin Patch
*** Update File: scripts/summarize.py
@@ def main(path: str) -> None:
     sales = pd.read_csv(path, parse_dates=["date"])
-    by_region = sales.groupby("region")["revenue"].agg(["sum", "mean"]).round(2)
+    by_region = sales.groupby("region")["revenue"].agg(["sum", "mean", "median"]).round(2)
     print(by_region.to_string())
*** End Patch
"""


def make_project(folder: Path) -> None:
    """The data repository a person would have: a CSV, a script, a README, a notebook."""
    rng = random.Random(22)
    products = ["kettle", "toaster", "blender", "mixer", "grinder", "scale", "juicer"]
    price = {p: round(rng.uniform(15, 120), 2) for p in products}
    rows = ["date,region,product,units,price,revenue"]
    for _ in range(360):
        day = f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        product = rng.choice(products)
        units = rng.randint(1, 12)
        region = rng.choice(["north", "south", "east", "west"])
        rows.append(
            f"{day},{region},{product},{units},{price[product]},{units * price[product]:.2f}"
        )
    (folder / "data").mkdir()
    (folder / "data" / "sales.csv").write_text("\n".join([rows[0], *sorted(rows[1:])]) + "\n")
    (folder / "scripts").mkdir()
    (folder / "scripts" / "summarize.py").write_text(SUMMARIZE)
    (folder / "README.md").write_text(README)
    nb = nbf.v4.new_notebook()
    cells = [
        ("md", "# Sales 2024\nA first look at the orders."),
        ("load-ext", "%load_ext agent_magics"),
        ("load-data", 'import pandas as pd\n\nsales = pd.read_csv("data/sales.csv", '
         'parse_dates=["date"])\nsales.head()'),
        ("ask-plot", "%%agent -a untrusted\nWhat is in `sales`? Plot the monthly revenue "
         "per region."),
        ("ask-script", "%%agent\nRun the project's summary script on the data."),
        ("ask-insert", "%%agent\nAdd a cell after the one that loads the data, showing the "
         "top 5 products by revenue."),
        ("ask-patch", "%%agent\nThe summary should show the median revenue per region too. "
         "Fix the script and run it again."),
        ("undo", "%agent undo"),
        ("resume", "%agent resume last"),
        ("ask-after", "%%agent\nWhere did we leave the summary script?"),
    ]  # fmt: skip
    for cell_id, source in cells:
        if cell_id == "md":
            nb.cells.append(nbf.v4.new_markdown_cell(source, id=cell_id))
        else:
            nb.cells.append(nbf.v4.new_code_cell(source, id=cell_id))
    nb.metadata["kernelspec"] = {"name": KERNEL, "display_name": KERNEL_NAME, "language": "python"}
    nbf.write(nb, folder / "explore.ipynb")


def make_venv(folder: Path, env: dict[str, str]) -> Path:
    """The project's own venv and its kernel, as a person would set them up: ``python -m
    venv``, ``pip install`` (about 40 s from pip's cache), the kernel spec under the
    person's home. JupyterLab itself stays where it is (this interpreter's)."""
    venv = folder / ".venv"
    python = venv / "bin" / "python"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, env=env)
    packages = [f"{ROOT}[live]", "pandas", "matplotlib", "ipykernel"]
    subprocess.run(
        [python, "-m", "pip", "install", "-q", "-e", *packages],
        check=True,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip (pip's own cache, in the real home)
    subprocess.run(
        [python, "-m", "ipykernel", "install", "--user", "--name", KERNEL,
         "--display-name", KERNEL_NAME],
        check=True, capture_output=True, env=env,
    )  # fmt: skip
    return python


def step_output(body: dict[str, Any], call_id: str) -> str:
    """What a tool call answered, from a request the model received."""
    for item in body.get("input", []):
        if item.get("call_id") == call_id and item.get("type", "").endswith("_output"):
            output = item.get("output", "")
            return output if isinstance(output, str) else json.dumps(output)
    return ""


def command_output(body: dict[str, Any], call_id: str) -> str:
    """The command's own output, without the header exec_command puts before it."""
    return step_output(body, call_id).partition("Output:\n")[2].strip()


def after_script(call_id: str, lead: str) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    def answer(body: dict[str, Any]) -> list[dict[str, Any]]:
        lines = command_output(body, call_id).splitlines()
        best = next((x for x in lines if x.startswith("best month")), "no best month")
        return [message(f"{lead} The script ran: {best}.")]

    return answer


def model_script() -> list[Any]:
    """The model's side of the session, one entry per request, in order."""
    cmd = {"cmd": COMMAND}
    return [
        # Plot turn: look at the variables, then plot (run_python asks under untrusted).
        [function_call("list_variables", {}, "lv")],
        [function_call("inspect_variable", {"name": "sales", "max_rows": 5}, "iv")],
        [function_call("run_python", {"code": PLOT}, "plot")],
        [message("`sales` holds 360 orders of 2024 (date, region, product, units, price, "
                 "revenue). The plot shows each region's revenue per month.")],
        # Script turn: a pip install (denied), then the project's script.
        [function_call("exec_command", {"cmd": "pip install tabulate"}, "pip")],
        [function_call("exec_command", cmd, "run1")],
        after_script("run1", "No tabulate then; pandas prints the table itself."),
        # Insert turn: read the notebook, insert a cell after the one that loads the data.
        [function_call("read_notebook", {"path": "explore.ipynb", "include_outputs": False},
                       "rn")],
        [function_call("edit_notebook", {"path": "explore.ipynb", "cell_id": "load-data",
                                         "edit_mode": "insert", "cell_type": "code",
                                         "new_source": TOP5}, "ins")],
        [message("I added a cell after the one that loads the data: run it to see the top 5 "
                 "products by revenue.")],
        # Patch turn: add the median, run the script again (approved for the session).
        [custom_tool_call("apply_patch", PATCH, "patch")],
        [function_call("exec_command", cmd, "run2")],
        after_script("run2", "The table now has a median column."),
        # After the restart and resume: look at the script again.
        [function_call("exec_command", {"cmd": "grep -n agg scripts/summarize.py"}, "grep")],
        lambda body: [message("We left it as it was before my patch: you undid the median "
                              "column, so it prints the sum and mean per region again "
                              f"(`{command_output(body, 'grep')}`).")],
    ]  # fmt: skip


class ProjectLab:
    """``jupyter lab`` started in the project folder with the project venv's Python."""

    def __init__(self, project: Path, scratch: Path, env: dict[str, str]) -> None:
        self.token = secrets.token_hex(16)
        self.log = (scratch / "lab.log").open("w")
        runtime = scratch / "runtime"
        env = dict(
            env,
            JUPYTER_CONFIG_DIR=str(scratch / "config"),
            JUPYTER_RUNTIME_DIR=str(runtime),
            JUPYTERLAB_WORKSPACES_DIR=str(scratch / "workspaces"),
            JUPYTERLAB_SETTINGS_DIR=str(scratch / "settings"),
        )
        port = free_port()
        argv = [
            sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
            f"--IdentityProvider.token={self.token}",
        ]  # fmt: skip
        self.process = subprocess.Popen(
            argv, env=env, cwd=project, stdout=self.log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 90
        while True:
            try:
                self.port = _listening_port(runtime, port)
                status = f"{self.url}/api/status?token={self.token}"
                urllib.request.urlopen(status, timeout=1).close()
                return
            except OSError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.close()
                    raise RuntimeError((scratch / "lab.log").read_text()) from None
                time.sleep(0.3)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        stop_server(self.process, self.log)


def save_png(page: Any, path: Path) -> None:
    """A viewport screenshot, made smaller (a 256-colour palette) when over MAX_BYTES."""
    page.screenshot(path=str(path))
    if path.stat().st_size > MAX_BYTES:
        with Image.open(path) as image:
            image.convert("RGB").quantize(256).save(path, optimize=True)
    with Image.open(path) as image:
        image.save(path, optimize=True)
    print(f"{path.name}: {path.stat().st_size // 1024} KB", flush=True)


class Person:
    """Clicks and keys in JupyterLab, as a person would use them."""

    def __init__(self, page: Any, out: Path) -> None:
        self.page = page
        self.out = out

    def cell(self, source_start: str) -> Any:
        content = self.page.locator(".cm-content", has_text=source_start)
        return self.page.locator(".jp-Notebook .jp-Cell").filter(has=content).first

    def run(self, source_start: str) -> Any:
        cell = self.cell(source_start)
        cell.locator(".jp-InputPrompt").click()
        self.page.keyboard.press("Shift+Enter")
        return cell

    def click(self, name: str) -> None:
        button = self.page.get_by_role("button", name=name, exact=True).first
        button.wait_for(timeout=120_000)
        button.click()

    def wait_turn(self, cell: Any) -> None:
        cell.locator(".agent-magics-transcript").wait_for(timeout=180_000)

    def show(self, locator: Any, block: str = "start") -> None:
        locator.evaluate(f"e => e.scrollIntoView({{block: '{block}'}})")
        self.page.wait_for_timeout(400)

    def shot(self, name: str) -> None:
        save_png(self.page, self.out / name)

    def dismiss_news(self) -> None:
        no = self.page.get_by_role("button", name="No", exact=True)
        if no.count() and no.first.is_visible():
            no.first.click()


def session(person: Person, lab: ProjectLab) -> None:
    page = person.page
    page.goto(f"{lab.url}/lab/tree/explore.ipynb?token={lab.token}")
    page.get_by_text(f"{KERNEL_NAME} | Idle").wait_for(timeout=120_000)
    person.dismiss_news()
    person.run("%load_ext agent_magics")
    page.keyboard.press("Shift+Enter")  # the next cell: load the data
    # Plot turn: run_python asks; the figure shows in the card.
    plot = person.run("What is in `sales`?")
    person.click("Approve")
    person.wait_turn(plot)
    person.show(plot.get_by_text("run_python", exact=True).first)
    person.shot("plot-turn.png")
    # Script turn: deny the pip install, approve the script for the session.
    script = person.run("Run the project's summary script")
    person.click("Deny")
    page.get_by_text(COMMAND).first.wait_for(timeout=120_000)
    page.get_by_role("button", name="Approve for session", exact=True).wait_for()
    person.show(page.get_by_role("button", name="Approve for session").first, "end")
    person.shot("approval-card.png")
    person.click("Approve for session")
    person.wait_turn(script)
    # Insert turn: the cell appears live after the data cell.
    insert = person.run("Add a cell after the one that loads the data")
    person.click("Approve")
    person.wait_turn(insert)
    person.show(person.cell("top5 = "), "center")
    person.shot("live-insert.png")
    # Patch turn: the patch's diff on its card, then the script again without a question.
    patch = person.run("The summary should show the median")
    approve = page.get_by_role("button", name="Approve", exact=True).first
    approve.wait_for(timeout=120_000)
    person.show(approve, "end")
    person.shot("patch-approval.png")
    approve.click()
    person.wait_turn(patch)
    diff = patch.locator(".agent-magics-turn-diff").first
    diff.locator("summary").first.click()
    person.show(diff, "center")
    person.shot("turn-diff.png")
    # Undo: it asks first.
    undo = person.run("%agent undo")
    button = undo.get_by_role("button", name="Undo", exact=True)
    button.wait_for(timeout=60_000)
    person.show(button, "end")
    person.shot("undo.png")
    button.click()
    undo.get_by_text("summarize.py").last.wait_for(timeout=60_000)
    # Restart the kernel from the menu, load the extension again, resume.
    page.get_by_text("Kernel", exact=True).first.click()
    page.get_by_text("Restart Kernel…", exact=True).click()
    page.locator(".jp-Dialog .jp-mod-accept").click()
    page.get_by_text(f"{KERNEL_NAME} | Idle").wait_for(timeout=120_000)
    page.wait_for_timeout(1500)
    person.run("%load_ext agent_magics")
    resume = person.run("%agent resume last")
    resume.locator(".jp-OutputArea-output").first.wait_for(timeout=60_000)
    after = person.run("Where did we leave the summary script?")
    person.wait_turn(after)
    person.show(resume, "start")
    person.shot("resumed-session.png")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=HERE, help="where the PNGs go")
    parser.add_argument("--keep", action="store_true", help="keep the project folder")
    args = parser.parse_args()
    if CHROMIUM is None:
        print("Debian's chromium is needed (apt-get install -y chromium)", file=sys.stderr)
        return 2
    from playwright.sync_api import sync_playwright

    # Not under /tmp: a home there lies in a writable root, and then even grep asks.
    scratch = Path(tempfile.mkdtemp(prefix="newuser-", dir=outside_base()))
    project = scratch / "sales-2024"
    project.mkdir()
    (scratch / "home").mkdir()
    make_project(project)
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH"}}
    env["HOME"] = str(scratch / "home")  # a new user: no settings, no session key yet
    make_venv(project, env)
    args.out.mkdir(parents=True, exist_ok=True)
    with ScriptedResponsesServer(model_script()) as server:
        env["OPENAI_BASE_URL"] = server.base_url
        lab = ProjectLab(project, scratch, env)
        try:
            with sync_playwright() as p:
                chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
                try:
                    page = chromium.new_context(viewport=VIEWPORT).new_page()
                    session(Person(page, args.out), lab)
                except Exception:
                    page.screenshot(path=str(scratch / "failure.png"), full_page=True)
                    print(f"failed; see {scratch}/failure.png and lab.log", file=sys.stderr)
                    args.keep = True
                    raise
                finally:
                    chromium.close()
        finally:
            lab.close()
            print(f"model requests: {len(server.requests)}", flush=True)
    if args.keep:
        print(f"project kept in {project}")
    else:
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
