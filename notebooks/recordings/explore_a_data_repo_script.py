"""The model's part in ``explore-a-data-repo.ipynb``, played by a scripted server when
``record.py explore-a-data-repo`` records the notebook.

Each request is answered by the step it is at: the last prompt the notebook sent and how
many tool outputs came back since. The file tools take absolute paths, so the calls are
built from the working folder the request names (``<cwd>``); the recording masks it.
An answer that follows a call which may ask first reads whether it was denied, so the
model never reports what did not happen (on a machine with no sandbox even running the
script asks, and a headless run denies it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from record import denied

from agent_magics.testing import custom_tool_call, function_call, message

MECHANISMS = (None, "none")
"""Recorded on the sandbox that works here, and as on a machine with none (Binder may
have neither bubblewrap nor Landlock: there every command asks first)."""

Body = dict[str, Any]
Items = list[dict[str, Any]]
Step = Callable[[Body], Items]

LOAD = """\
import pandas as pd

readings = pd.concat(
    [pd.read_csv(p, parse_dates=["date"]) for p in sorted((workdir / "readings").glob("*.csv"))],
    ignore_index=True,
)
span = readings["date"].agg(["min", "max"]).dt.date
print(len(readings), "rows from", span["min"], "to", span["max"])
"""

PLOT = """\
import matplotlib.pyplot as plt

fig, ax = plt.subplots(figsize=(7, 3))
for station, rows in readings.groupby("station"):
    daily = rows.set_index("date")["temp_c"].asfreq("D")  # a missing day becomes a gap
    ax.plot(daily.index, daily.values, label=station)
ax.set_title("Daily mean temperature at the Lakeside stations, winter 2024")
ax.set_ylabel("°C")
ax.legend()
fig.autofmt_xdate()
plt.show()
"""

FIX = """\
*** Begin Patch
*** Update File: scripts/summarize.py
@@ def monthly(rows):
     temps = defaultdict(float)
+    days = defaultdict(int)
     rain = defaultdict(float)
     for row in rows:
         key = (row["station"], row["date"][:7])
         temps[key] += float(row["temp_c"])
+        days[key] += 1
         rain[key] += float(row["rain_mm"])
-    return {key: (temps[key] / 30, rain[key]) for key in temps}
+    return {key: (temps[key] / days[key], rain[key]) for key in temps}
*** End Patch
"""

CELL = """\
# Monthly mean temperature per station. Harbour has no readings from 12 to 19 February
# (maintenance, see README.md): each mean is over the days actually measured.
from pathlib import Path

readings = pd.concat(
    [pd.read_csv(p, parse_dates=["date"]) for p in sorted(Path("readings").glob("*.csv"))],
    ignore_index=True,
)
monthly = readings.groupby(["station", readings["date"].dt.strftime("%Y-%m")])["temp_c"]
monthly.agg(["mean", "count"]).round(1)
"""


def cwd(body: Body) -> str:
    found = re.search(r"<cwd>(.*?)</cwd>", json.dumps(body.get("input") or []))
    return json.loads(f'"{found.group(1)}"') if found else "."


def call(name: str, args: dict[str, Any] | Callable[[str], dict[str, Any]]) -> Step:
    return lambda body: [function_call(name, args(cwd(body)) if callable(args) else args)]


def say(text: str) -> Step:
    return lambda body: [message(text)]


def unless_denied(step: Step, text: str) -> Step:
    return lambda body: [message(text)] if denied(body) else step(body)


DATA = (
    "This repository holds daily readings from three weather stations (airport, harbour, "
    "hill) for January and February 2024: `stations.csv` describes the stations and "
    "`readings/2024-01.csv` and `readings/2024-02.csv` hold one row per station and day "
    "(`date`, `station`, `temp_c`, `rain_mm`). The README notes that Harbour was down from "
    "12 to 19 February, so those days have no Harbour row.\n\n"
)
BY_30 = (
    "`monthly()` divides every month's temperature sum by 30, whatever the number of "
    "readings: January has 31 days, February 29, and Harbour only 21 readings in February. "
    "I changed nothing."
)
SCRIPT_RAN = (
    "`scripts/summarize.py` prints each station's mean temperature and total rain per "
    "month. Its output looks plausible at first sight, but " + BY_30
)
SCRIPT_NOT_RUN = (
    "`scripts/summarize.py` prints each station's mean temperature and total rain per "
    "month. Running it was not approved, so I have not seen its output; but reading the "
    "code, " + BY_30
)
"""The answer after the look around; on a machine with no sandbox, running the script
asks first, so a headless run denies it and the answer says so."""


EXPLORE: list[Step | None] = [
    lambda body: [  # a parallel batch: the folder and its README at once
        function_call("list_dir", {"dir_path": cwd(body), "depth": 2}),
        function_call("read_file", {"file_path": f"{cwd(body)}/README.md"}),
    ],
    None,  # two outputs came back for the batch
    call("grep_files", lambda c: {"pattern": "temp_c", "include": "*.py", "path": c}),
    call("read_file", lambda c: {"file_path": f"{c}/scripts/summarize.py"}),
    call("shell_command", {"command": "python3 scripts/summarize.py"}),
    lambda body: [message(DATA + (SCRIPT_NOT_RUN if denied(body) else SCRIPT_RAN))],
]

LOAD_STEPS = [
    call("run_python", {"code": LOAD}),
    call("inspect_variable", {"name": "readings"}),
    say(
        "`readings` is in your notebook now: 172 rows from 2024-01-01 to 2024-02-29, with "
        "`date` as dates, `station` as text and `temp_c` and `rain_mm` as floats, and no "
        "missing values. 60 days for 3 stations would be 180 rows: the 8 missing ones are "
        "Harbour's outage."
    ),
]

PLOT_STEPS = [
    call("run_python", {"code": PLOT}),
    say(
        "In the figure the three stations move together: a cold spell in mid-January (Hill "
        "falls to about -2 °C), milder days at the start of February, and 6-8 °C at the end "
        "of February. Hill, the highest station, is the coldest line throughout and Harbour "
        "mostly the warmest. What stands out is the break in Harbour's line in mid-February: "
        "the outage from 12 to 19 February. A monthly mean has to be taken over the days that "
        "were measured, which is not what `scripts/summarize.py` does."
    ),
]

FIX_STEPS = [
    lambda body: [custom_tool_call("apply_patch", FIX)],
    unless_denied(
        call("shell_command", {"command": "python3 scripts/summarize.py"}),
        "The patch was not approved, so `scripts/summarize.py` is unchanged and still divides "
        "each month's sum by 30. The fix is to count the readings of each station and month "
        "and divide by that count.",
    ),
    unless_denied(
        say(
            "Fixed: `monthly()` now counts each station's readings per month and divides by "
            "that count instead of 30. The script now gives Harbour 6.3 °C for February, as "
            "the DataFrame does, and the January means moved by about a tenth of a degree "
            "(31 days, not 30). The rain totals were right all along."
        ),
        "The patch is in, but running the script was not approved, so I have not checked "
        "its output: run `python3 scripts/summarize.py` to see the corrected means.",
    ),
]

INSERT = {
    "path": "analysis.ipynb",
    "cell_id": "load-stations",
    "edit_mode": "insert",
    "cell_type": "code",
    "new_source": CELL,
}

NOTEBOOK_STEPS = [
    call("read_notebook", {"path": "analysis.ipynb"}),
    call("edit_notebook", INSERT),
    unless_denied(
        say(
            "I added a code cell to `analysis.ipynb`, after the cell that loads the stations: "
            "it reads both months of readings and shows each station's monthly mean "
            "temperature with the number of days behind it, and its comment notes Harbour's "
            "February gap."
        ),
        "Adding the cell was not approved, so `analysis.ipynb` is unchanged.",
    ),
]

STEPS: dict[str, list[Step | None]] = {
    "Look around": EXPLORE,
    "Load every": LOAD_STEPS,
    "Plot each": PLOT_STEPS,
    "Find the bug": FIX_STEPS,
    "analysis.ipynb": NOTEBOOK_STEPS,
}


def _prompt_and_step(body: Body) -> tuple[str, int]:
    """The last prompt, and how many tool outputs came back after it."""
    prompt, step = "", 0
    for item in body.get("input") or []:
        if item.get("role") == "user" and item.get("type", "message") == "message":
            parts = item.get("content") or []
            text = "".join(p.get("text", "") for p in parts if isinstance(p, dict))
            if not text.startswith("<"):
                prompt, step = text, 0
        elif item.get("type") in ("function_call_output", "custom_tool_call_output"):
            step += 1
    return prompt, step


def answer(body: Body) -> Items:
    prompt, step = _prompt_and_step(body)
    for key, steps in STEPS.items():
        if key in prompt:
            chosen = steps[min(step, len(steps) - 1)]
            if chosen is not None:
                return chosen(body)
    return [message("This recording has no answer for that prompt.")]


def turns() -> list[Step]:
    return [answer] * 40
