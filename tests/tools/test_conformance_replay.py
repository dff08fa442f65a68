"""The quick tier of the conformance comparison: every recorded Codex case, replayed
through ``agent-magics exec``'s own entry point in this process (the router, the
session and the tools as the command runs them, against the same mock server), compared
with its golden exactly as the end-to-end pass compares it. The end-to-end pass
(tests/tools/test_conformance.py, one real process per case) stays the ground truth; this one
answers in seconds while a change is being made.
"""

from __future__ import annotations

import json

import pytest

from tests.helpers.conformance import compare, golden_rels, matches_golden
from tests.helpers.conformance_replay import replay_case
from tests.helpers.paths import CONFORMANCE

# The harness's workspace snapshot leaves files to the garbage collector.
pytestmark = [
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


@pytest.mark.parametrize("rel", golden_rels())
def test_replay_matches_codex(rel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    golden = json.loads((CONFORMANCE / "goldens" / rel).read_text())
    case = json.loads((CONFORMANCE / "cases" / rel).read_text())
    problems = matches_golden(
        rel, lambda: compare.compare_case(golden, replay_case(case, monkeypatch))
    )
    assert not problems, "\n".join(problems)


def test_every_case_is_replayed() -> None:
    assert len(golden_rels()) == 174
