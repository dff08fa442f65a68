"""``%agent review`` in a real kernel: a reviewer session of its own reads the folder's
git changes (its command runs in the real read-only sandbox), its findings land in the
cell as a card that a saved notebook keeps, and the notebook's conversation is told them
before its next turn. A scripted model on 127.0.0.1."""

from __future__ import annotations

import json

import pytest

from agent_magics.agent.review import REVIEW_INSTRUCTIONS
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.git import git
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell

pytestmark = pytest.mark.slow

FINDING = {
    "title": "[P1] Divide by the number of readings",
    "body": "`mean()` now divides by 31 whatever the month.",
    "confidence_score": 0.9,
    "priority": 1,
    "code_location": {"absolute_file_path": "stats.py", "line_range": {"start": 2, "end": 2}},
}
REVIEW = {
    "findings": [FINDING],
    "overall_correctness": "patch is incorrect",
    "overall_explanation": "The mean is wrong for every month but the long ones.",
    "overall_confidence_score": 0.8,
}


def test_a_review_shows_its_findings_and_the_next_turn_knows_them(kernel: Kernel) -> None:
    repo = kernel.ws
    git(repo, "init", "-q")
    (repo / "stats.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n")
    git(repo, "add", "stats.py")
    git(repo, "commit", "-qm", "first")
    git(repo, "checkout", "-qb", "feature")
    (repo / "stats.py").write_text("def mean(xs):\n    return sum(xs) / 31\n")
    git(repo, "commit", "-qam", "faster mean")
    turns = [
        [message("Hello.")],
        [function_call("exec_command", {"cmd": "git diff main"}, "r1")],
        [message(json.dumps(REVIEW))],
        [message("Fixed.")],
    ]
    with ScriptedResponsesServer(turns) as server:
        kernel.run(agent_cell(server.base_url, "-a untrusted", "say hello"))
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
        review = kernel.execute("%agent review --base main")
        kernel.wait_for(lambda: len(server.requests) == 3)
        kernel.wait_for(
            lambda: any("[P1] Divide" in str(o) for o in kernel.saved_outputs(review)), 60
        )
        (card,) = kernel.saved_outputs(review)
        html, text = card["data"]["text/html"], card["data"]["text/markdown"]
        assert "Review of changes against main · 1 finding · patch is incorrect" in text
        assert "- [P1] Divide by the number of readings — stats.py:2-2" in text
        assert '<b style="color:#bc4c00">[P1] Divide by the number of readings</b>' in html
        reviewer = server.requests[1]
        assert reviewer["instructions"] == REVIEW_INSTRUCTIONS
        assert "say hello" not in json.dumps(reviewer["input"])  # a conversation of its own
        assert "+    return sum(xs) / 31" in server.outputs(2)["r1"]
        kernel.run(agent_cell(server.base_url, "-a untrusted", "fix the first finding"))
        kernel.wait_for(lambda: len(server.requests) == 4)
    told = json.dumps(server.requests[3]["input"])
    assert "say hello" in told  # the notebook's conversation goes on
    assert "The person ran a review of changes against main" in told
    assert "[P1] Divide by the number of readings" in told
