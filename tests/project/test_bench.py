"""The benchmark runner's judging: targets are numbers or nothing, skipped rows say why."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from types import ModuleType

import pytest

from tests.helpers.paths import ROOT

BENCH = ROOT / "bench"


def _load(name: str) -> ModuleType:
    sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while building
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(
    ("target", "value", "ratio", "met"),
    [
        pytest.param("<= 100 us", 99.0, 5.0, True, id="unit-bounds-value"),
        pytest.param("<= 100 us", 101.0, 0.5, False, id="unit-bounds-value-missed"),
        pytest.param("<= 2.0", 900.0, 1.9, True, id="ratio"),
        pytest.param("<= 2.0", 1.0, 2.1, False, id="ratio-missed"),
        pytest.param(">= 0.95", 1600.0, 0.9, False, id="at-least"),
        pytest.param("<= 0.8", 1.0, None, None, id="no-ratio"),
        pytest.param("", 1.0, 1.0, None, id="reference-row"),
    ],
)
def test_meets(target: str, value: float, ratio: float | None, met: bool | None) -> None:
    assert _load("_report").meets(target, value, ratio) is met


@pytest.mark.parametrize(
    "target", [">= 0.95 (they stay serial)", "(per row)", "<= fast", "~ 2.0", "<="]
)
def test_a_prose_target_is_refused(target: str) -> None:
    report = _load("_report")
    with pytest.raises(ValueError, match="a target is"):
        report.check_target(target)
    run = _load("run")
    with pytest.raises(ValueError, match="a target is"):
        run.benchmark("bench_prose", target)


def test_every_target_is_a_number_or_nothing() -> None:
    run, report = _load("run"), _load("_report")
    targets = [b.target for b in run.BENCHMARKS]
    targets += list(_load("sandbox_bench").TARGETS.values())
    targets += [_load("stream_bench").TARGET, _load("codex_bench").TARGET]
    for target in targets:
        assert report.check_target(target) == target
    assert {f"codex_turn_{c}" for c in run.CODEX_CASES} <= {b.name for b in run.BENCHMARKS}


@pytest.mark.slow
def test_codex_rows_are_skipped_without_a_binary() -> None:
    done = subprocess.run(
        [sys.executable, str(BENCH / "run.py"), "--quick", "--json"]
        + [a for c in _load("run").CODEX_CASES for a in ("--only", f"codex_turn_{c}")],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["name"] for r in rows] == [
        "codex_turn_echo",
        "codex_turn_parallel_3",
        "codex_turn_patch_3_hunks",
        "codex_turn_output_1_3mb",
        "codex_turn_session_200_calls",
    ]
    for row in rows:
        assert row["value"] is None and row["met"] is None and row["target"] == ""
        assert "--codex PATH" in row["note"] and "error" not in row
