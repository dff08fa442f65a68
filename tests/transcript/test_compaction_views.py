"""A compaction as a person reads it afterwards: the line that says when and how much,
and folded under it the messages kept and the model's summary, in ``agent-magics
export`` (markdown and HTML, read back from the session file) and in ``%agent history``
(an in-process IPython shell). Real turns against the loopback model server."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_magics.testing import ScriptedResponsesServer, message
from tests.helpers.cli import agent_magics

PROMPT = "count the rows of sales.csv"
SUMMARY = "SUMMARY-TEXT: sales.csv has 3 rows; the person wants the counts kept."
FOLDED = "What the conversation goes on from: the summary and 1 kept message(s)"
OPTS = "-a never -s danger-full-access -c allow_login_shell=false"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return agent_magics(cwd, *args, env={"OPENAI_API_KEY": "sk-views-0123456789"})


@pytest.fixture(scope="module")
def compacted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a session of one turn, then compacted by hand."""
    ws = tmp_path_factory.mktemp("ws")
    script = [[message("There are 3 rows.")], [message(SUMMARY)]]
    with ScriptedResponsesServer(script) as server:
        base = ["--provider", "responses", "--base-url", server.base_url, "-m", "m"]
        done = cli(ws, "exec", *base, "-a", "never", PROMPT)
        assert done.returncode == 0, done.stderr
        done = cli(ws, "exec", *base, "--resume", "last", "--compact", "keep the counts")
        assert done.returncode == 0, done.stderr
    assert SUMMARY in done.stdout + done.stderr
    return ws


def test_the_markdown_export_folds_the_summary_under_the_line(compacted: Path) -> None:
    assert cli(compacted, "export", "last", "session.md").returncode == 0
    text = (compacted / "session.md").read_text()
    line = text.index("*Context compacted (as asked)")
    folded = text.index(f"<details><summary>{FOLDED}</summary>", line)
    assert (
        text.index(PROMPT, folded) < text.index(SUMMARY, folded) < text.index("</details>", folded)
    )


def test_the_html_export_folds_the_summary_under_the_line(compacted: Path) -> None:
    assert cli(compacted, "export", "last", "session.html").returncode == 0
    page = (compacted / "session.html").read_text()
    start = page.index('class="agent-magics-compaction"')
    card = page[start : page.index("</details>", start)]
    assert "Context compacted (as asked)" in card and f"<summary>{FOLDED}</summary>" in card
    assert SUMMARY in card and PROMPT in card


def test_history_says_the_conversation_was_compacted(
    ip: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    script = [[message("There are 3 rows.")], [message(SUMMARY)], [message("Still 3.")]]
    with ScriptedResponsesServer(script) as server:
        ip.run_cell(f"%%agent --base-url {server.base_url} {OPTS}\n{PROMPT}")
        ip.run_cell("%agent compact keep the counts")
        ip.run_cell("%%agent\nhow many again?")
    capsys.readouterr()
    ip.run_cell("%agent history")
    text = capsys.readouterr().out
    # the live history has no sizes: what it knows is that a summary stands for the past
    assert "Context compacted: kept 1 of your message(s) and a summary." in text
    assert f"summary: {SUMMARY}" in text
    assert text.index(PROMPT) < text.index("Context compacted") < text.index("how many again?")
