"""Recordings: written from live sessions of both protocols, played back offline; the
shipped demo plays only when asked for (``replay``), and with no model configured a turn
says so in one sentence before sending anything; mismatches end the turn with one
sentence; the API key is in no recording, output or error."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_magics import Session, SessionConfig
from agent_magics.agent.providers import NO_MODEL, OFFLINE_HINT, create_client, resolve_provider
from agent_magics.config import load_config
from agent_magics.errors import ConfigError, ModelError
from agent_magics.models.replay import DEMO_FOLDER, LIVE_HINT, ReplayClient, load_recording
from agent_magics.models.secret import MIN_PIECE, Scrubber
from agent_magics.protocol.approval import approve_all, deny_all
from agent_magics.recordings import DEMO_FILES, DEMO_PROMPT, write_demo_files
from agent_magics.recordings.record_demo import FINAL
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from tests.helpers.chat_fault_server import chat_sse
from tests.helpers.fault_server import Answer, FaultServer, responses_sse, status
from tests.helpers.kernels import NO_LOGIN, Kernel

KEY = "sk-replay-secret-1357913579"
PROTOCOLS = [pytest.param("responses", id="responses"), pytest.param("chat", id="chat")]
ENCODERS = {"responses": responses_sse, "chat": chat_sse}
PLAN = {"plan": [{"step": "look", "status": "in_progress"}]}


def offline_config(folder: Path, **options: Any) -> SessionConfig:
    """What a person gets with no key, no base URL and no config files."""
    return load_config(cwd=folder, options=options, env={}, home=folder)


def script(final: str = "Planned.") -> list[Answer]:
    return [
        Answer(items=[function_call("update_plan", PLAN, "c1")]),
        Answer(items=[message(final)]),
    ]


async def record(
    folder: Path, protocol: str, path: Path, final: str = "Planned."
) -> tuple[str, list[dict[str, Any]]]:
    server = FaultServer(script(final), encode=ENCODERS[protocol])
    try:
        config = SessionConfig(
            model="m",
            provider=protocol,
            base_url=server.base_url,
            api_key=KEY,
            cwd=folder,
            shell_type="disabled",
            record_path=path,
        )
        session = Session(config)
        result = await session.run_turn("make a plan")
        await session.aclose()
    finally:
        server.close()
    return result.final_text, server.requests


# -- the shipped demo ----------------------------------------------------------------------


@pytest.mark.parametrize("provider", ["auto", "responses", "chat"])
def test_no_key_and_no_base_url_means_no_model(tmp_path: Path, provider: str) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_provider(offline_config(tmp_path, provider=provider))
    assert str(info.value) == NO_MODEL
    with pytest.raises(ConfigError):
        create_client(offline_config(tmp_path, provider=provider))
    wanted = "responses" if provider == "auto" else provider
    assert resolve_provider(offline_config(tmp_path, provider=provider, api_key=KEY)) == wanted
    local = offline_config(tmp_path, provider=provider, base_url="http://127.0.0.1:1/v1")
    assert resolve_provider(local) == wanted


def test_the_recording_plays_only_when_asked_for(tmp_path: Path) -> None:
    assert resolve_provider(offline_config(tmp_path, provider="replay")) == "replay"
    assert isinstance(create_client(offline_config(tmp_path, provider="replay")), ReplayClient)
    live = offline_config(tmp_path, api_key=KEY)
    assert not isinstance(create_client(live), ReplayClient)


async def test_no_model_fails_the_demo_prompt_before_anything_runs(tmp_path: Path) -> None:
    write_demo_files(tmp_path)
    session = Session(offline_config(tmp_path), approver=approve_all)
    with pytest.raises(ConfigError) as info:
        await session.run_turn(DEMO_PROMPT)
    await session.aclose()
    assert str(info.value) == NO_MODEL
    assert session.usage.total_tokens == 0
    assert (tmp_path / "stats.py").read_text().endswith("+ 1\n")


def test_the_demo_sentence_names_every_demo_file() -> None:
    assert all(name in DEMO_FOLDER for name in DEMO_FILES)


async def test_shipped_demo_plays_offline(tmp_path: Path) -> None:
    write_demo_files(tmp_path)
    session = Session(offline_config(tmp_path, provider="replay"), approver=approve_all)
    result = await session.run_turn(DEMO_PROMPT)
    await session.aclose()
    assert result.final_text == FINAL
    assert "+ 1" not in (tmp_path / "stats.py").read_text()
    assert result.usage.total_tokens > 0 and session.usage == result.usage
    with pytest.raises(ModelError) as info:
        await session.run_turn("and now?")
    assert str(info.value) == f"This is the offline demo and it has no more answers; {LIVE_HINT}"


async def test_other_prompt_gets_one_sentence_and_history_stays(tmp_path: Path) -> None:
    write_demo_files(tmp_path)
    session = Session(offline_config(tmp_path, provider="replay"), approver=approve_all)
    with pytest.raises(ModelError) as info:
        await session.run_turn("write me a poem")
    await session.aclose()
    assert str(info.value) == (
        "This is the offline demo and this request does not match it "
        f"(it expects the prompt {DEMO_PROMPT!r} {DEMO_FOLDER}); {LIVE_HINT}"
    )
    assert session.history == []  # nothing answered: the prompt is not kept to be sent twice
    assert (tmp_path / "stats.py").read_text().endswith("+ 1\n")


async def test_different_tool_output_gets_one_sentence(tmp_path: Path) -> None:
    write_demo_files(tmp_path)
    (tmp_path / "stats.py").write_text("def mean(values):\n    return 0\n")
    session = Session(offline_config(tmp_path, provider="replay"), approver=approve_all)
    with pytest.raises(ModelError) as info:
        await session.run_turn(DEMO_PROMPT)
    await session.aclose()
    assert str(info.value) == (  # which tool's output, and the first line of it that differs
        "This is the offline demo and this request does not match it (the output of "
        "exec_command differs from the recorded one, '    return 0' here where it recorded "
        f"'    return sum(values) / len(values) + 1': it runs {DEMO_FOLDER}); {LIVE_HINT}"
    )
    items = [i.wire() for i in session.history]
    calls = [i["call_id"] for i in items if i["type"] == "function_call"]
    assert calls == [i["call_id"] for i in items if i["type"] == "function_call_output"]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        pytest.param(None, "Cannot read the recording", id="missing"),
        pytest.param("not json\n", "Cannot read the recording", id="not-json"),
        pytest.param('{"hello": 1}\n', "is not a recording of a model session", id="foreign"),
    ],
)
def test_bad_recording_file(tmp_path: Path, text: str | None, fragment: str) -> None:
    path = tmp_path / "r.jsonl"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ConfigError, match=fragment):
        load_recording(path)


# -- record, then replay -------------------------------------------------------------------


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_recorded_session_replays(tmp_path: Path, protocol: str) -> None:
    path = tmp_path / "rec" / "session.jsonl"
    live_text, sent = await record(tmp_path, protocol, path)
    text = path.read_text()
    assert KEY not in text
    lines = [json.loads(line) for line in text.splitlines()]
    assert lines[0] == {"format": "agent_magics.recording", "version": 1, "provider": protocol}
    assert [line["request"] for line in lines[1:]] == sent
    if protocol == "chat":
        assert lines[1]["response"][-1] == "[DONE]"

    other = tmp_path / "elsewhere"
    other.mkdir()
    config = offline_config(other, provider="replay", replay_path=str(path), shell_type="disabled")
    session = Session(config)
    result = await session.run_turn("make a plan")
    await session.aclose()
    assert result.final_text == live_text == "Planned."
    outputs = [i.wire() for i in session.history if i.type == "function_call_output"]
    assert [o["output"] for o in outputs] == ["Plan updated"]


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_key_echoed_by_the_model_is_scrubbed_even_in_pieces(
    tmp_path: Path, protocol: str
) -> None:
    path = tmp_path / "echo.jsonl"
    live_text, _ = await record(tmp_path, protocol, path, final=f"The key is {KEY}, see?")
    assert live_text == "The key is [redacted], see?"
    text = path.read_text()
    pieces = {KEY[i : i + MIN_PIECE] for i in range(len(KEY) - MIN_PIECE + 1)}
    assert not [p for p in pieces if p in text]
    assert "[redacted]" in text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(f"a {KEY} b", "a [redacted] b", id="whole"),
        pytest.param(f"x{KEY[:12]}", "x[redacted]", id="head"),
        pytest.param(f"{KEY[-13:]}!", "[redacted]!", id="tail"),
        pytest.param(f"{KEY[:5]} {KEY[5:12]}", f"{KEY[:5]} {KEY[5:12]}", id="short-pieces-stay"),
        pytest.param(f"{KEY[-9:]}!", f"{KEY[-9:]}!", id="under-a-piece-stays"),
        pytest.param("nothing here", "nothing here", id="clean"),
    ],
)
def test_scrubber(text: str, expected: str) -> None:
    assert Scrubber(KEY)(text) == expected


# -- the command line ------------------------------------------------------------------------


def cli(folder: Path, *args: str, key: bool = True) -> subprocess.CompletedProcess[str]:
    """``agent-magics exec`` in ``folder`` (also its HOME), with or without an API key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_MAGICS_"))}
    env |= {"OPENAI_API_KEY": KEY, "HOME": str(folder)} if key else {"HOME": str(folder)}
    return subprocess.run(
        [sys.executable, "-m", "agent_magics", "exec", "-C", str(folder), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_cli_records_and_replays_without_the_key(tmp_path: Path, protocol: str) -> None:
    path = tmp_path / "cli.jsonl"
    server = FaultServer(script(), encode=ENCODERS[protocol])
    try:
        live = cli(
            tmp_path, "--provider", protocol, "--base-url", server.base_url, "--record", str(path),
            "-c", 'shell_type="disabled"', "make a plan",
        )  # fmt: skip
    finally:
        server.close()
    assert live.returncode == 0, live.stderr
    assert live.stdout == "Planned.\n"
    assert "tokens: " in live.stderr
    replayed = cli(
        tmp_path, "--provider", "replay", "-c", f"replay_path={json.dumps(str(path))}",
        "-c", 'shell_type="disabled"', "make a plan",
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    assert replayed.stdout == live.stdout
    for out in (live.stdout, live.stderr, replayed.stdout, replayed.stderr, path.read_text()):
        assert KEY not in out


def test_cli_error_is_one_sentence_without_the_key(tmp_path: Path) -> None:
    server = FaultServer([status(401, error=f"Incorrect API key provided: {KEY}")])
    try:
        result = cli(tmp_path, "--base-url", server.base_url, "hello")
    finally:
        server.close()
    assert result.returncode == 1
    assert result.stdout == ""
    session, _, said = result.stderr.partition("\n")
    assert session.startswith("session: ")  # the id of the saved session comes first
    assert said == (
        "agent-magics: The model server rejected the API key (HTTP 401); "
        "set OPENAI_API_KEY to a valid key.\n"
    )


@pytest.mark.parametrize(
    "options",
    [
        pytest.param([], id="auto"),
        pytest.param(["--provider", "responses"], id="responses"),
        pytest.param(["--provider", "chat"], id="chat"),
    ],
)
def test_cli_without_a_model_says_so_and_sends_nothing(tmp_path: Path, options: list[str]) -> None:
    write_demo_files(tmp_path)  # even the demo's own prompt is not answered by the recording
    result = cli(tmp_path, *options, "-m", "gpt-5.1-codex", DEMO_PROMPT, key=False)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == f"agent-magics: {NO_MODEL}\n"  # no session line, no tokens line
    assert not (tmp_path / ".agent_magics" / "sessions").exists()
    assert (tmp_path / "stats.py").read_text().endswith("+ 1\n")


def test_cli_plays_the_demo_when_asked_for(tmp_path: Path) -> None:
    write_demo_files(tmp_path)
    result = cli(tmp_path, "--provider", "replay", DEMO_PROMPT, key=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout == FINAL + "\n"
    assert "60 in" in result.stderr  # the usage line
    assert "+ 1" not in (tmp_path / "stats.py").read_text()
    other = cli(tmp_path, "--provider", "replay", "add a test for parse_date", key=False)
    assert other.returncode == 1
    assert other.stderr.endswith(
        f"agent-magics: This is the offline demo and this request does not match it (it "
        f"expects the prompt {DEMO_PROMPT!r} {DEMO_FOLDER}); {LIVE_HINT}\n"
    )
    assert "tokens" not in other.stderr.lower()


def test_short_keys_are_matched_whole_only() -> None:
    scrub = Scrubber("peer-mock-key")
    assert scrub("peer-mock files and peer-mock-key") == "peer-mock files and [redacted]"


# -- notebooks' recordings: several paths and sessions, %agent recording ------------------

RUN = "python3 -c 'print(6 * 7)'"


def ran_or_not(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The model's answer after the command: it read whether the person let it run."""
    outputs = [i for i in body.get("input", []) if i.get("type") == "function_call_output"]
    said = str(outputs[-1]["output"]) if outputs else ""
    return [message("It was not run." if "rejected by user" in said else "It printed 42.")]


async def one_turn(folder: Path, prompt: str, approver: Any, **options: Any) -> str:
    """One turn of a session made as a notebook cell makes it (no key, no base URL of its
    own unless ``options`` give one); its final text."""
    config = offline_config(folder, approval_policy="untrusted", **options)
    session = Session(config, approver=approver)
    try:
        return (await session.run_turn(prompt)).final_text
    finally:
        await session.aclose()


async def record_run(folder: Path, path: Path, prompt: str, approver: Any) -> str:
    """A live run against a scripted model, recorded to ``path`` (appended when it exists)."""
    turns = [[function_call("exec_command", {"cmd": RUN}, "c1")], ran_or_not]
    with ScriptedResponsesServer(turns) as server:
        return await one_turn(
            folder,
            prompt,
            approver,
            base_url=server.base_url,
            record_path=str(path),
            sandbox_mode="danger-full-access",  # asked under untrusted all the same
        )


async def test_a_recording_holding_the_approved_and_the_denied_path_plays_either(
    tmp_path: Path,
) -> None:
    path = tmp_path / "two-paths.jsonl"
    (tmp_path / "rec").mkdir()
    assert await record_run(tmp_path / "rec", path, "run it", approve_all) == "It printed 42."
    assert await record_run(tmp_path / "rec", path, "run it", deny_all) == "It was not run."
    for approver, expected in [(deny_all, "It was not run."), (approve_all, "It printed 42.")]:
        here = tmp_path / f"play-{expected[3:6]}"  # another folder: the cwd is masked
        here.mkdir()
        played = await one_turn(
            here, "run it", approver, offline_recording=str(path), sandbox_mode="danger-full-access"
        )
        assert played == expected  # the path this run took, whichever was recorded first


async def test_a_second_session_appends_to_the_recording_and_both_play(tmp_path: Path) -> None:
    path = tmp_path / "sessions.jsonl"
    first, second = tmp_path / "one", tmp_path / "two"
    first.mkdir(), second.mkdir()
    await record_run(first, path, "first session", approve_all)
    await record_run(second, path, "second session", approve_all)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [("request" in line) for line in lines] == [False] + [True] * 4  # one header
    play = tmp_path / "play"
    play.mkdir()
    for prompt in ("second session", "first session"):  # either, in any order
        played = await one_turn(
            play,
            prompt,
            approve_all,
            offline_recording=str(path),
            sandbox_mode="danger-full-access",
        )
        assert played == "It printed 42."
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps({"format": "agent_magics.recording", "provider": "chat"}) + "\n")
    with pytest.raises(ConfigError, match="holds something other than a responses recording"):
        await record_run(first, other, "first session", approve_all)
    assert len(other.read_text().splitlines()) == 1  # the other file is left as it was


def everything_shown(kernel: Kernel) -> str:
    """All the text the kernel showed so far: streams, errors, displays and widgets."""
    return kernel.outputs_text(kernel.log) + "\n".join(kernel.html_values())


@pytest.mark.slow
def test_agent_recording_says_which_applies_and_a_mismatch_names_the_prompt(
    kernel: Kernel, tmp_path: Path
) -> None:
    """In a real kernel: ``%agent recording`` says in one sentence whether the recording
    plays (no model configured) or a live model is used (a base URL set); a cell whose
    prompt the recording does not hold ends with the sentence naming the one it does."""
    kernel.run(  # no model configured, whatever the test run's environment holds
        "import os\n"
        "for k in [k for k in os.environ if k.startswith(('OPENAI_', 'AGENT_MAGICS_'))]:\n"
        "    del os.environ[k]"
    )
    path = kernel.ws / "recordings" / "plan.jsonl"
    missing = kernel.outputs_text(kernel.run("%agent recording recordings/plan.jsonl"))
    assert "no model is configured and there is no recording at recordings/plan.jsonl" in missing
    asyncio.run(record(tmp_path, "responses", path))  # a real recording of "make a plan"
    offline = kernel.outputs_text(kernel.run("%agent recording recordings/plan.jsonl"))
    assert offline.startswith(
        "agent: no model is configured, so the agent plays the recording recordings/plan.jsonl:"
    )
    assert "set OPENAI_API_KEY (or OPENAI_BASE_URL and AGENT_MAGICS_MODEL)" in offline

    kernel.run("os.environ['OPENAI_BASE_URL'] = 'http://127.0.0.1:9/v1'")
    live = kernel.outputs_text(kernel.run("%agent recording"))
    assert live.startswith(f"agent: a model is configured, so {path} is not played: ")
    assert live.rstrip().endswith(" (responses at http://127.0.0.1:9/v1).")
    kernel.run("del os.environ['OPENAI_BASE_URL']")  # back to no model, before any turn

    kernel.run(f"%%agent -C {kernel.ws} {NO_LOGIN}\nwrite me a poem", timeout=120)
    sentence = (
        "This is an offline recording and this request does not match it (it expects the "
        f"prompt 'make a plan': run the cells as they are); {OFFLINE_HINT}"
    )
    kernel.wait_for(lambda: sentence in everything_shown(kernel), timeout=120)
    # the recorded prompt plays, and the saved session names the recording, not the
    # default model (it said gpt-5.1-codex answered)
    kernel.run(f"%%agent --new -C {kernel.ws} {NO_LOGIN}\nmake a plan", timeout=120)
    sessions = kernel.outputs_text(kernel.run("%agent sessions"))
    assert "recording plan.jsonl" in sessions and "gpt-5" not in sessions


async def test_an_approval_answered_otherwise_says_so_and_a_changed_last_prompt_names_it(
    tmp_path: Path,
) -> None:
    """A recording holding the approved path, played with the call denied, names the
    approval (it said a tool output differed, blaming a changed cell); a changed prompt
    after the recorded ones names the prompt (it said the recording had no more
    answers)."""
    script = [
        [function_call("exec_command", {"cmd": "touch made.txt"}, "call_touch")],
        [message("Made it.")],
        [message("Bye.")],
    ]
    path = tmp_path / "r.jsonl"
    with ScriptedResponsesServer(script) as server:
        config = offline_config(
            tmp_path, base_url=server.base_url, record_path=path, approval_policy="untrusted"
        )
        session = Session(config, approver=approve_all)
        await session.run_turn("make a file")
        await session.run_turn("thanks")
        await session.aclose()
    (tmp_path / "made.txt").unlink()
    played = offline_config(
        tmp_path, provider="replay", replay_path=path, approval_policy="untrusted"
    )
    session = Session(played, approver=deny_all)
    with pytest.raises(ModelError) as info:
        await session.run_turn("make a file")
    await session.aclose()
    assert "went another way at an approval card or a stopped turn" in str(info.value)
    assert "every card approved or every card denied" in str(info.value)
    session = Session(played, approver=approve_all)
    await session.run_turn("make a file")
    with pytest.raises(ModelError) as info:
        await session.run_turn("thanks a lot")
    await session.aclose()
    assert "it expects the prompt 'thanks'" in str(info.value)
