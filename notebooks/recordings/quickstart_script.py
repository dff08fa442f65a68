"""The model's part in ``notebooks/quickstart.ipynb``, as record.py plays it.

Each request is answered from what the conversation holds so far, not by its position,
because the path depends on the approvals: look at the sample project (``ls``, then
``cat``), run its test under ``-a untrusted``, fix the bug with a plan and a patch, and,
after the session is resumed, say what was changed. On a machine with no sandbox every
command asks first, so a headless run denies even the ``ls``: the model then says what it
could not do instead of what it would have seen. The answers are what a careful model
would say in the same folder, so the notebook reads the same offline and live.
"""

from __future__ import annotations

import json
from typing import Any

from record import denied

from agent_magics.testing import custom_tool_call, function_call, message

Body = dict[str, Any]
Items = list[dict[str, Any]]

STEPS = ["Find the bug in mean()", "Fix the divisor in stats.py", "Tell you how to check it"]

FIX = """*** Begin Patch
*** Update File: stats.py
@@
 def mean(values):
     \"\"\"The arithmetic mean of a non-empty list of numbers.\"\"\"
-    return sum(values) / (len(values) + 1)
+    return sum(values) / len(values)
*** End Patch
"""

MECHANISMS = (None, "none")
"""Recorded on the sandbox that works here, and as on a machine with none (Binder may
have neither bubblewrap nor Landlock: there every command asks first)."""

NOT_RUN = "rejected by user"


def plan(done: int) -> dict[str, Any]:
    """The plan with its first ``done`` steps completed and the next one in progress."""
    states = [
        "completed" if i < done else "in_progress" if i == done else "pending"
        for i in range(len(STEPS))
    ]
    return {"plan": [{"step": s, "status": st} for s, st in zip(STEPS, states, strict=True)]}


def exec_command(cmd: str) -> dict[str, Any]:
    return function_call("exec_command", {"cmd": cmd})


def calls(body: Body) -> list[tuple[str, str, str]]:
    """Each tool call of the conversation so far: (name, arguments, output)."""
    made: dict[str, tuple[str, str]] = {}
    out = []
    for item in body.get("input") or []:
        if item.get("type") == "function_call":
            made[item["call_id"]] = (item["name"], item.get("arguments", ""))
        elif item.get("type") == "custom_tool_call":
            made[item["call_id"]] = (item["name"], item.get("input", ""))
        elif item.get("type") in ("function_call_output", "custom_tool_call_output"):
            name, args = made.get(item.get("call_id", ""), ("", ""))
            out.append((name, args, str(item.get("output"))))
    return out


def ran(body: Body, command: str) -> bool:
    """Whether ``command`` ran (was not denied) earlier in the conversation."""
    return any(
        name == "exec_command" and json.loads(args).get("cmd") == command and NOT_RUN not in out
        for name, args, out in calls(body)
    )


def read_the_code(body: Body) -> bool:
    return ran(body, "cat README.md stats.py test_stats.py") or ran(body, "cat stats.py")


def patched(body: Body) -> bool:
    return any(name == "apply_patch" and NOT_RUN not in out for name, _, out in calls(body))


def prompt_and_turn(body: Body) -> tuple[str, list[tuple[str, str, str]]]:
    """The last prompt, and the tool calls made since it (name, arguments, output)."""
    prompt, since = "", 0
    outputs = 0
    for item in body.get("input") or []:
        if item.get("role") == "user" and item.get("type", "message") == "message":
            text = "".join(p.get("text", "") for p in item.get("content") or [])
            if not text.startswith("<"):
                prompt, since = text, outputs
        elif item.get("type") in ("function_call_output", "custom_tool_call_output"):
            outputs += 1
    return prompt, calls(body)[since:]


def look(body: Body, turn: list[tuple[str, str, str]]) -> Items:
    if not turn:
        return [exec_command("ls")]
    if len(turn) == 1 and not denied(body):
        return [exec_command("cat README.md stats.py test_stats.py")]
    if denied(body) and len(turn) == 1:
        return [
            message(
                "Listing the folder was not approved, so I have not seen the project's files "
                "and cannot tell you what it does yet."
            )
        ]
    if denied(body):
        return [
            message(
                "The folder holds `README.md`, `stats.py` and `test_stats.py`, a small Python "
                "project by the names, but reading the files was not approved, so I cannot "
                "say more."
            )
        ]
    return [
        message(
            "This is a tiny Python statistics project: `stats.py` defines `mean()`, and "
            "`test_stats.py` checks that `mean([1, 2, 3])` is 2. Reading the code, "
            "`mean()` divides by `len(values) + 1` instead of `len(values)`, so I expect "
            "that test to fail."
        )
    ]


def run_the_test(body: Body, turn: list[tuple[str, str, str]]) -> Items:
    if not turn:
        return [exec_command("python3 test_stats.py")]
    if not denied(body):
        return [
            message(
                "The test fails: `mean([1, 2, 3])` returned 1.5, not 2. `mean()` divides by "
                "`len(values) + 1` where it should divide by `len(values)`."
            )
        ]
    if read_the_code(body):
        return [
            message(
                "The test run was not approved, so I did not run it. From the code I expect "
                "`mean([1, 2, 3])` to return 1.5 instead of 2: `mean()` divides by "
                "`len(values) + 1` where it should divide by `len(values)`."
            )
        ]
    return [
        message(
            "The test run was not approved, so I did not run it, and I have not been able to "
            "read the code either: I cannot tell you what fails."
        )
    ]


def fix(body: Body, turn: list[tuple[str, str, str]]) -> Items:
    last = turn[-1][0] if turn else ""
    if not turn and not read_the_code(body):
        return [exec_command("cat stats.py")]  # it has not seen the file yet
    if last == "exec_command" and denied(body):
        return [
            message(
                "Reading `stats.py` was not approved, so I could not find the bug, and I "
                "changed nothing."
            )
        ]
    if last in ("", "exec_command"):
        return [
            function_call("update_plan", plan(1)),
            custom_tool_call("apply_patch", FIX),
        ]
    if last == "apply_patch" and denied(body):
        return [
            message(
                "The patch was not approved, so `stats.py` is unchanged. The fix is one "
                "line: `mean()` should divide by `len(values)`, not `len(values) + 1`."
            )
        ]
    if last == "apply_patch":
        return [function_call("update_plan", plan(len(STEPS)))]
    return [
        message(
            "I changed `mean()` in `stats.py` to divide by `len(values)`, so "
            "`mean([1, 2, 3])` is now 2. The diff is below; `python3 test_stats.py` "
            "checks it."
        )
    ]


def remind(body: Body, turn: list[tuple[str, str, str]]) -> Items:
    if patched(body):
        text = (
            "`mean()` in `stats.py` divided by `len(values) + 1`, so `mean([1, 2, 3])` "
            "gave 1.5 instead of 2. I changed the divisor to `len(values)`; that one "
            "line is the whole change."
        )
    elif read_the_code(body):
        text = (
            "`mean()` in `stats.py` divides by `len(values) + 1`, so `mean([1, 2, 3])` "
            "gives 1.5 instead of 2. I changed nothing: the patch was not approved."
        )
    else:
        text = (
            "I do not know yet: reading the files was not approved, so I never saw "
            "`stats.py`, and I changed nothing."
        )
    return [message(text)]


ANSWERS = {
    "What does this project do?": look,
    "Run the tests": run_the_test,
    "Fix the bug in stats.py": fix,
    "Remind me": remind,
}


def answer(body: Body) -> Items:
    prompt, turn = prompt_and_turn(body)
    for start, step in ANSWERS.items():
        if prompt.startswith(start):
            return step(body, turn)
    return [message("This recording has no answer for that prompt.")]


def turns() -> list[Any]:
    return [answer] * 30
