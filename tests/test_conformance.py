"""End to end against the recordings of the real Codex CLI.

Each case runs ``python -m agent_magics exec`` against the conformance mock server (the
same server that drove Codex); the tool outputs our client sends back, and the workspace
afterwards, must equal the goldens after normalisation.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import CONFORMANCE

# Session files go to the run's home, as Codex keeps its own under CODEX_HOME: the
# recorded workspaces hold only what the tools did. The cases were recorded with Codex's
# shell snapshot off, so ours is off too.
CANDIDATE = (
    f"{sys.executable} -m agent_magics exec --base-url {{base_url}} -m {{model}} -a never "
    "-s danger-full-access -c apply_patch_tool_type={apply_patch_tool_type} "
    "-c experimental_supported_tools={tools} -c sessions_dir=~/.agent_magics/sessions "
    "-c shell_snapshot=false"
)


def _goldens() -> list[str]:
    root = CONFORMANCE / "goldens"
    if not root.is_dir():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.json"))


# The harness's workspace snapshot leaves files to the garbage collector.
pytestmark = [
    pytest.mark.slow,  # one CLI run per recorded case
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


@pytest.mark.parametrize("rel", _goldens())
def test_matches_codex(rel: str, conformance: Path) -> None:
    import compare  # type: ignore[import-not-found]
    import harness  # type: ignore[import-not-found]

    golden = json.loads((conformance / "goldens" / rel).read_text())
    case = json.loads((conformance / "cases" / rel).read_text())
    candidate = harness.run_case(case, candidate=CANDIDATE)
    problems = compare.compare_case(golden, candidate)
    tail = candidate.get("codex_stdout_tail", "")
    assert not problems, "\n".join(problems) + (f"\n--- runner output ---\n{tail}" if tail else "")


def test_all_public_cases_are_collected(conformance: Path) -> None:
    assert len(_goldens()) == 174
