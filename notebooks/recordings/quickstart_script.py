"""The model's part in ``notebooks/quickstart.ipynb``, as record.py plays it.

One answer per request, in the order the notebook sends them: look at the sample project
(``ls``, then ``cat``), run its test under ``-a untrusted`` (approved or denied: the next
answer reads which), fix the bug with a plan and a patch, and, after the session is
resumed, say what was changed. The answers are what a careful model would say in the
same folder, so the notebook reads the same offline and live.
"""

from __future__ import annotations

from typing import Any

from record import denied

from agent_magics.testing import custom_tool_call, function_call, message

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


def plan(done: int) -> dict[str, Any]:
    """The plan with its first ``done`` steps completed and the next one in progress."""
    states = [
        "completed" if i < done else "in_progress" if i == done else "pending"
        for i in range(len(STEPS))
    ]
    return {"plan": [{"step": s, "status": st} for s, st in zip(STEPS, states, strict=True)]}


def after_the_test(body: dict[str, Any]) -> list[dict[str, Any]]:
    if denied(body):
        return [
            message(
                "You declined, so I did not run the tests. From the code I expect "
                "`mean([1, 2, 3])` to return 1.5 instead of 2: `mean()` divides by "
                "`len(values) + 1` where it should divide by `len(values)`."
            )
        ]
    return [
        message(
            "The test fails: `mean([1, 2, 3])` returned 1.5, not 2. `mean()` divides by "
            "`len(values) + 1` where it should divide by `len(values)`."
        )
    ]


def turns() -> list[Any]:
    return [
        # %%agent: what does this project do?
        [function_call("exec_command", {"cmd": "ls"}, "call_ls")],
        [
            function_call(
                "exec_command", {"cmd": "cat README.md stats.py test_stats.py"}, "call_cat"
            )
        ],
        [
            message(
                "This is a tiny Python statistics project: `stats.py` defines `mean()`, and "
                "`test_stats.py` checks that `mean([1, 2, 3])` is 2. Reading the code, "
                "`mean()` divides by `len(values) + 1` instead of `len(values)`, so I expect "
                "that test to fail."
            )
        ],
        # %%agent -a untrusted: run the tests (asks first)
        [function_call("exec_command", {"cmd": "python3 test_stats.py"}, "call_test")],
        after_the_test,
        # %%agent -a on-request: fix it, with a plan
        [
            function_call("update_plan", plan(1), "call_plan1"),
            custom_tool_call("apply_patch", FIX, "call_patch"),
        ],
        [function_call("update_plan", plan(len(STEPS)), "call_plan2")],
        [
            message(
                "I changed `mean()` in `stats.py` to divide by `len(values)`, so "
                "`mean([1, 2, 3])` is now 2. The diff is below; `python3 test_stats.py` "
                "checks it."
            )
        ],
        # %agent resume last, then %%agent: what did we change?
        [
            message(
                "`mean()` in `stats.py` divided by `len(values) + 1`, so `mean([1, 2, 3])` "
                "gave 1.5 instead of 2. I changed the divisor to `len(values)`; that one "
                "line is the whole change."
            )
        ],
    ]
