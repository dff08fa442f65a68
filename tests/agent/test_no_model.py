"""A ``%%agent`` cell with no model configured (no key, no base URL) is told so in one
sentence and nothing runs; the offline demo recording answers only when asked for with
``--provider replay``; a turn that failed before any token was counted shows no token line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_magics.agent.providers import NO_MODEL
from agent_magics.events import TurnFailed, Usage
from agent_magics.recordings import DEMO_PROMPT, write_demo_files
from agent_magics.recordings.record_demo import FINAL
from agent_magics.transcript.markdown import transcript_markdown
from agent_magics.transcript.model import Transcript
from tests.helpers.sandbox import LINUX_MECHANISMS, require_mechanism, use_mechanism


@pytest.fixture
def ip_cwd(home: Path) -> Path:
    """The ``ip`` shell works in a folder holding the demo project, with no model set."""
    work = home / "work"
    work.mkdir()
    write_demo_files(work)
    return work


def test_a_cell_without_a_model_says_so_and_runs_nothing(
    ip: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    ip.run_cell(f"%%agent\n{DEMO_PROMPT}")
    out = capsys.readouterr().out
    assert out.strip().endswith(f"**{NO_MODEL}**")
    assert "Tokens" not in out
    assert "offline recording" not in out
    assert Path("stats.py").read_text().endswith("+ 1\n")


def test_a_cell_plays_the_demo_when_asked_for(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell(f"%%agent --provider replay\n{DEMO_PROMPT}")
    out = capsys.readouterr().out
    assert FINAL in out
    assert "*Tokens: 60 in · 30 out · 90 total*" in out
    assert "+ 1" not in Path("stats.py").read_text()


def test_the_demo_plays_after_cells_ran_before_it(
    ip: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The notebook's cells reach the model as context, not as a prompt: the recording
    matches the prompt and tool outputs only, so a person who ran cells first still
    sees the demo."""
    ip.run_cell("%unload_ext agent_magics")
    ip.run_cell("import pandas as pd\nframe = pd.DataFrame({'a': [1, 2]})")
    ip.run_cell("%load_ext agent_magics")
    ip.run_cell("print(frame.shape)")
    try:
        ip.run_cell(f"%%agent --provider replay\n{DEMO_PROMPT}")
    finally:
        ip.run_cell("del frame, pd")  # the shell is shared with later tests
    out = capsys.readouterr().out
    assert FINAL in out
    assert "+ 1" not in Path("stats.py").read_text()


@pytest.mark.parametrize(
    ("usage", "line"),
    [
        pytest.param(Usage(), None, id="nothing-counted"),
        pytest.param(Usage(10, 0, 5, 0, 15), "*Tokens: 10 in · 5 out · 15 total*", id="counted"),
    ],
)
def test_a_failed_turn_shows_tokens_only_when_some_were_used(
    usage: Usage, line: str | None
) -> None:
    t = Transcript()
    t.apply(TurnFailed("The server is down.", usage))
    text = transcript_markdown(t)
    assert text.startswith("**The server is down.**")
    assert (line in text) if line else ("Tokens" not in text)


def test_status_says_there_is_no_model_and_names_the_one_there_is(
    ip: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    ip.run_cell("%agent status")
    assert f"model:           none. {NO_MODEL}\n" in capsys.readouterr().out
    ip.run_cell("%config AgentMagics.provider = 'replay'")
    ip.run_cell("%agent status")
    assert "(replay of the demo recording shipped with the package, offline)" in (
        capsys.readouterr().out
    )
    ip.run_cell("%config AgentMagics.provider = None")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-status-test-1234567890")
    ip.run_cell("%agent status")
    out = capsys.readouterr().out
    assert "(responses at https://api.openai.com/v1)" in out and "sk-status" not in out


@pytest.mark.parametrize("mechanism", [*LINUX_MECHANISMS, "none"])
def test_status_names_what_confines_commands(
    ip: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, mechanism: str
) -> None:
    if mechanism != "none":
        require_mechanism(mechanism)
    expected = {
        "bwrap": "(commands confined by bubblewrap ",
        "landlock": "(commands confined by Landlock ABI ",
        "none": "(no mechanism works here, so every command asks first: ",
    }[mechanism]
    with use_mechanism(monkeypatch, mechanism):
        try:
            ip.run_cell("%config AgentMagics.sandbox = 'workspace-write'")
            ip.run_cell("%agent status")
            out = capsys.readouterr().out
            assert f"sandbox:         workspace-write {expected}" in out, out
            ip.run_cell("%config AgentMagics.sandbox = 'danger-full-access'")
            ip.run_cell("%agent status")
            assert "danger-full-access (commands are not confined)" in capsys.readouterr().out
        finally:  # the shell is one per process: its settings outlive the test
            ip.run_cell("%config AgentMagics.sandbox = None")
