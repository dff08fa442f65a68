"""The model's part in ``how-the-tools-work.ipynb``, for ``record.py``.

One answer per request, in the order the notebook's ``%%agent`` cells send them. Every
cell makes one request that calls tools and one that answers from what the tools said,
so the answers that follow a tool call read its output (approved or denied, confined
or not) instead of assuming it.
"""

from __future__ import annotations

from typing import Any

from record import denied, last_output

from agent_magics.testing import function_call, message

WRITE_BOTH = (
    '(echo "written by the agent" > notes/inside.txt) 2>/dev/null'
    ' && echo "inside:  written" || echo "inside:  refused"\n'
    '(echo "written by the agent" > ../outside.txt) 2>/dev/null'
    ' && echo "outside: written" || echo "outside: refused"'
)
"""The command of the three sandbox cells: one write in the working folder, one beside
it; each reports in one word, whatever error text the sandbox mechanism gives."""

APPEND_OUTSIDE = 'echo "checked by the agent" >> ../outside.txt'
READS = [f"sleep 1; cat data/{city}.csv" for city in ("oslo", "lima", "cairo")]

MECHANISMS = (None, "none")
"""Recorded on the sandbox that works here, and as on a machine with none (Binder may
have neither bubblewrap nor Landlock: there every command asks first)."""


def exec_command(cmd: str, **extra: Any) -> dict[str, Any]:
    return function_call("exec_command", {"cmd": cmd, **extra})


def said(body: dict[str, Any]) -> str:
    """What the last command printed, as one line for the answer."""
    lines = [line.strip() for line in last_output(body).splitlines()]
    return "; ".join(line for line in lines if line.startswith(("inside:", "outside:")))


def report_writes(body: dict[str, Any]) -> list[dict[str, Any]]:
    if denied(body):
        return [message("The command did not run: it was not approved.")]
    found = said(body)
    if not found:
        return [message("The command did not run; its output says why:\n\n" + last_output(body))]
    return [message(f"The command printed: {found}.")]


def report_append(body: dict[str, Any]) -> list[dict[str, Any]]:
    if denied(body):
        return [message("Appending to `../outside.txt` was not approved, so I left it as it was.")]
    if "Sandbox(Denied" in last_output(body):
        return [message("The sandbox refused the write to `../outside.txt`; it is unchanged.")]
    return [message("I appended the line to `../outside.txt`, outside the sandbox, as approved.")]


def report_reads(body: dict[str, Any]) -> list[dict[str, Any]]:
    outputs = [
        str(item.get("output"))
        for item in body.get("input") or []
        if item.get("type") == "function_call_output"
    ][-3:]
    if any("rejected by user" in output for output in outputs):
        return [message("Some of the reads were not approved, so I cannot compare all three.")]
    return [
        message(
            "Cairo is the warmest of the three (27 °C), Lima next (19 °C), Oslo the "
            "coldest (4 °C). The three reads came in one response and ran side by side."
        )
    ]


def report_fahrenheit(body: dict[str, Any]) -> list[dict[str, Any]]:
    if denied(body):
        return [message("The call of `to_fahrenheit` was not approved.")]
    return [message(f"27 °C is {last_output(body).strip()} °F, by your `to_fahrenheit`.")]


def turns() -> list[Any]:
    return [
        # read-only, workspace-write, danger-full-access: the same command three times
        [exec_command(WRITE_BOTH)],
        report_writes,
        [exec_command(WRITE_BOTH)],
        report_writes,
        [exec_command(WRITE_BOTH)],
        report_writes,
        # a write outside the sandbox the model asks for; a person (or the headless
        # policy) decides
        [
            exec_command(
                APPEND_OUTSIDE,
                sandbox_permissions="require_escalated",
                justification="../outside.txt lies outside the working folder, which the "
                "sandbox keeps commands from writing.",
            )
        ],
        report_append,
        # a parallel batch of reads: three calls in one response
        [exec_command(cmd) for cmd in READS],
        report_reads,
        # a Python function offered as a tool
        [function_call("to_fahrenheit", {"celsius": 27})],
        report_fahrenheit,
    ]
