"""The runtime: parallel-safe calls overlap, the others run alone, order is kept."""

from __future__ import annotations

import asyncio

import pytest

from agent_magics.tools.context import ToolOutput
from agent_magics.tools.runtime import CallsInterrupted, aborted_output, run_calls


class Recorder:
    def __init__(self) -> None:
        self.active = 0
        self.peak = 0
        self.log: list[str] = []

    def job(self, name: str, delay: float = 0.05):  # type: ignore[no-untyped-def]
        async def run() -> ToolOutput:
            self.active += 1
            self.peak = max(self.peak, self.active)
            self.log.append(f"start {name}")
            await asyncio.sleep(delay)
            self.log.append(f"end {name}")
            self.active -= 1
            return ToolOutput(name)

        return run


async def test_parallel_calls_overlap_and_keep_order() -> None:
    rec = Recorder()
    jobs = [(f"t{i}", True, rec.job(f"t{i}", 0.05 * (4 - i))) for i in range(4)]
    outputs = await run_calls(jobs)
    assert [o.content for o in outputs] == ["t0", "t1", "t2", "t3"]
    assert rec.peak == 4


async def test_exclusive_calls_run_alone_in_order() -> None:
    rec = Recorder()
    jobs = [
        ("a", True, rec.job("a")),
        ("b", False, rec.job("b")),
        ("c", True, rec.job("c")),
        ("d", True, rec.job("d")),
    ]
    await run_calls(jobs)
    assert rec.log[:4] == ["start a", "end a", "start b", "end b"]
    assert set(rec.log[4:6]) == {"start c", "start d"}


async def test_cancel_gives_every_call_an_output() -> None:
    rec = Recorder()
    jobs = [("exec_command", True, rec.job("fast", 0.0)), ("shell", False, rec.job("slow", 10))]
    task = asyncio.ensure_future(run_calls(jobs))
    await asyncio.sleep(0.1)
    task.cancel()
    with pytest.raises(CallsInterrupted) as info:
        await task
    outputs = info.value.outputs
    assert outputs[0].content == "fast"
    assert isinstance(outputs[1].content, str)
    assert outputs[1].content.startswith("Wall time: ") and outputs[1].content.endswith(
        "seconds\naborted by user"
    )
    assert isinstance(info.value.cause, asyncio.CancelledError)


@pytest.mark.parametrize(
    ("name", "elapsed", "text"),
    [
        pytest.param("shell", 1.234, "Wall time: 1.2 seconds\naborted by user", id="shell"),
        pytest.param("shell_command", 0.0, "Wall time: 0.1 seconds\naborted by user", id="min"),
        pytest.param("exec_command", 2.0, "aborted by user after 2.0s", id="exec_command"),
        pytest.param("write_stdin", 0.01, "aborted by user after 0.1s", id="write_stdin"),
    ],
)
def test_aborted_texts(name: str, elapsed: float, text: str) -> None:
    assert aborted_output(name, elapsed).content == text
