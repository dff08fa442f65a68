"""End to end against the recordings of the real Codex CLI: the ground truth.

Each case runs ``python -m agent_magics exec`` against the conformance mock server (the
same server that drove Codex); the tool outputs our client sends back, and the workspace
afterwards, must equal the goldens after normalisation. The quick tier replays the same
cases in-process (tests/tools/test_conformance_replay.py).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers.conformance import golden_rels, matches_golden
from tests.helpers.conformance_replay import exec_command_line

CANDIDATE = exec_command_line(sys.executable)

# The harness's workspace snapshot leaves files to the garbage collector.
pytestmark = [
    pytest.mark.slow,  # one CLI run per recorded case
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


@pytest.mark.parametrize("rel", golden_rels())
def test_matches_codex(rel: str, conformance: Path) -> None:
    import compare  # type: ignore[import-not-found]
    import harness  # type: ignore[import-not-found]

    golden = json.loads((conformance / "goldens" / rel).read_text())
    case = json.loads((conformance / "cases" / rel).read_text())
    tail = ""

    def run_once() -> list[str]:
        nonlocal tail
        candidate = harness.run_case(case, candidate=CANDIDATE)
        tail = candidate.get("codex_stdout_tail", "")
        problems: list[str] = compare.compare_case(golden, candidate)
        return problems

    problems = matches_golden(rel, run_once)
    assert not problems, "\n".join(problems) + (f"\n--- runner output ---\n{tail}" if tail else "")


def test_all_public_cases_are_collected() -> None:
    assert len(golden_rels()) == 174
