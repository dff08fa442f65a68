"""``agent-magics exec`` for CI and scripts, through the real CLI and loopback model servers,
held to what codex exec 0.171.0 wrote and sent (tests/conformance/compaction-0.171/
exec-features/): ``--json`` events as recorded (ids, types, keys, statuses; thread ids and
token counts compared by kind), ``--output-schema`` as the recorded ``text.format`` and,
for a Chat Completions server, as ``response_format``; ``-o`` holding the final answer
exactly; ``-i`` images reaching the server as ``input_image`` parts of the prompt."""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from agent_magics.terminal.cli import EXIT_SCHEMA_MISMATCH, EXIT_USER_ERROR
from agent_magics.testing import HttpFailure, ScriptedResponsesServer, function_call, message
from tests.helpers.chat_fault_server import chat_fault_server
from tests.helpers.fault_server import Answer
from tests.helpers.scenario_server import ScenarioServer, usage

pytestmark = pytest.mark.slow

RECORDED = Path(__file__).parent.parent / "conformance" / "compaction-0.171" / "exec-features"
SCHEMA = RECORDED / "schema.json"
ECHO = [function_call("exec_command", {"cmd": "echo hello"}, "call_1")]
FINAL = "final answer after compaction"
VERDICT = '{"verdict": "ok", "failing_tests": []}'
KEY = "sk-exec-ci-0123456789"


def environment(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    return env | {"HOME": str(tmp_path), "OPENAI_API_KEY": KEY, "SHELL": "/bin/bash"}


def exec_cli(
    tmp_path: Path, base_url: str, *options: str, provider: str = "responses"
) -> subprocess.CompletedProcess[str]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", provider]
    argv += ["--base-url", base_url, "-m", "peer-mock-model", "-C", str(ws), "-a", "never"]
    argv += [*options, "Summarise the test run as JSON."]
    return subprocess.run(
        argv, env=environment(tmp_path), cwd=tmp_path, capture_output=True, text=True,
        timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip


def run(tmp_path: Path, turns: list[Any], *options: str) -> tuple[Any, Any]:
    with ScriptedResponsesServer(turns) as server:
        done = exec_cli(tmp_path, server.base_url, *options)
    return server, done


def events(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


def by_kind(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The lines with what may differ between runs put by kind: a thread id is a
    string, a token count a whole number."""
    out = []
    for line in lines:
        line = dict(line)
        if "thread_id" in line:
            assert isinstance(line["thread_id"], str) and line["thread_id"]
            line["thread_id"] = "<thread>"
        if "usage" in line:
            assert all(isinstance(n, int) and n >= 0 for n in line["usage"].values())
            line["usage"] = dict.fromkeys(line["usage"], "<count>")
        out.append(line)
    return out


def recorded(name: str) -> list[dict[str, Any]]:
    return by_kind(events((RECORDED / name).read_text()))


def test_a_command_and_an_answer_as_codex_writes_them(tmp_path: Path) -> None:
    server, done = run(tmp_path, [ECHO, [message(FINAL)]], "--json")
    assert done.returncode == 0, done.stderr
    assert by_kind(events(done.stdout)) == recorded("exec_json_sample_toolcall.jsonl")
    assert "exec echo hello" in done.stderr  # the human log is still there, on stderr
    thread = events(done.stdout)[0]["thread_id"]
    assert server.requests[0]["prompt_cache_key"] == thread  # the session's own thread


def test_the_recorded_turn_compacted_midway_keeps_codex_ids_and_adds_one_line(
    tmp_path: Path,
) -> None:
    """The recording's turn compacted after the command (Codex writes no event for it):
    ours writes ``thread.compacted`` there, and the items keep Codex's ids."""
    answers = iter([{"items": ECHO, "usage": usage(5000)}, {"items": [message(FINAL)]}])

    def reply(index: int, body: dict[str, Any]) -> dict[str, Any]:
        if not body.get("tools"):  # the summarising request
            return {"items": [message("SUMMARY: ran echo")], "usage": usage(300)}
        return next(answers, {"items": [message("done")], "usage": usage(400)})

    server = ScenarioServer(reply)
    try:
        done = exec_cli(
            tmp_path, server.base_url, "--json", "-c", "model_auto_compact_token_limit=3000"
        )
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    lines = events(done.stdout)
    compacted = [line for line in lines if line["type"] == "thread.compacted"]
    assert compacted == [
        {"type": "thread.compacted", "trigger": "auto", "phase": "mid_turn",
         "tokens_before": 5000, "tokens_after": compacted[0]["tokens_after"]}
    ]  # fmt: skip
    assert lines.index(compacted[0]) == 4  # after the command, before the answer
    rest = [line for line in lines if line["type"] != "thread.compacted"]
    assert by_kind(rest) == recorded("exec_json_sample_toolcall.jsonl")


def test_output_schema_is_sent_as_codex_sends_it_and_the_answer_checked(tmp_path: Path) -> None:
    server, done = run(tmp_path, [[message(VERDICT)]], "--json", "--output-schema", str(SCHEMA))
    assert done.returncode == 0, done.stderr
    assert by_kind(events(done.stdout)) == recorded("exec_json_output_schema.jsonl")
    codex = json.loads((RECORDED / "exec_output_schema_request.json").read_text())
    assert server.requests[0]["text"] == codex["text"]
    assert codex["text"]["format"]["schema"] == json.loads(SCHEMA.read_text())


def test_an_answer_off_the_schema_exits_3_saying_what_did_not_match(tmp_path: Path) -> None:
    wrong = '{"verdict": 3, "failing_tests": []}'
    _, done = run(tmp_path, [[message(wrong)]], "--output-schema", str(SCHEMA))
    assert done.returncode == EXIT_SCHEMA_MISMATCH == 3
    assert done.stdout == wrong + "\n"  # the answer is still given
    sentence = (
        "agent-magics: The final answer does not match the output schema at $.verdict: "
        "3 is not of type 'string'.\n"
    )
    assert done.stderr.endswith(sentence)
    _, prose = run(tmp_path, [[message("All good!")]], "--output-schema", str(SCHEMA))
    assert prose.returncode == 3
    assert "agent-magics: The final answer is not JSON, so it does not match" in prose.stderr


@pytest.mark.parametrize(
    ("content", "sentence"),
    [
        ("{not json", "is not valid JSON: "),
        ('{"type": 12}', "is not a valid JSON Schema at $.type: "),
        ("[1]", "is not a JSON object, as a model server needs one."),
    ],
    ids=["not-json", "bad-schema", "not-object"],
)
def test_a_bad_schema_file_fails_before_any_request(
    tmp_path: Path, content: str, sentence: str
) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(content)
    server, done = run(tmp_path, [[message("unused")]], "--json", "--output-schema", str(schema))
    assert done.returncode == EXIT_USER_ERROR
    assert server.requests == []
    assert done.stdout == ""
    assert f"agent-magics: The output schema {schema} {sentence}" in done.stderr
    assert done.stderr.count("\n") == 1  # one sentence
    _, missing = run(tmp_path, [], "--output-schema", str(tmp_path / "nowhere.json"))
    assert missing.returncode == EXIT_USER_ERROR
    assert missing.stderr == (
        f"agent-magics: Cannot read the output schema {tmp_path / 'nowhere.json'}: "
        "no such file or directory.\n"
    )


@pytest.mark.parametrize("json_mode", [False, True], ids=["plain", "json"])
def test_output_last_message_holds_the_final_answer_exactly(
    tmp_path: Path, json_mode: bool
) -> None:
    text = "Two lines,\n  the second indented, no newline at the end"
    last = tmp_path / "last.txt"
    options = ["-o", str(last), *(["--json"] if json_mode else [])]
    _, done = run(tmp_path, [[message("Let me look."), *ECHO], [message(text)]], *options)
    assert done.returncode == 0, done.stderr
    assert last.read_text() == text
    if json_mode:  # stdout is the events, unchanged
        assert [e["type"] for e in events(done.stdout)][-2:] == ["item.completed", "turn.completed"]
        assert events(done.stdout)[-2]["item"]["text"] == text
    else:
        assert done.stdout == text + "\n"


def png(colour: str) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (3, 2), colour).save(out, "PNG")
    return out.getvalue()


def test_images_reach_the_server_as_input_images_of_the_prompt(tmp_path: Path) -> None:
    red, blue = tmp_path / "red.png", tmp_path / "blue.png"
    red.write_bytes(png("red"))
    blue.write_bytes(png("blue"))
    server, done = run(tmp_path, [[message("two squares")]], "-i", str(red), "--image", str(blue))
    assert done.returncode == 0, done.stderr
    prompt = server.requests[0]["input"][-1]
    url = "data:image/png;base64,{}".format
    assert prompt["content"] == [
        {"type": "input_text", "text": "<image name=[Image #1]>"},
        {"type": "input_image", "image_url": url(base64.b64encode(png("red")).decode())},
        {"type": "input_text", "text": "</image>"},
        {"type": "input_text", "text": "<image name=[Image #2]>"},
        {"type": "input_image", "image_url": url(base64.b64encode(png("blue")).decode())},
        {"type": "input_text", "text": "</image>"},
        {"type": "input_text", "text": "Summarise the test run as JSON."},
    ]


def test_an_image_that_cannot_be_read_fails_before_any_request(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a picture")
    for path, sentence in [
        (tmp_path / "gone.png", "Cannot read the image {}: no such file or directory."),
        (text, "{} is not an image that can be read (PNG, JPEG, WebP, GIF...)."),
    ]:
        server, done = run(tmp_path, [[message("unused")]], "-i", str(path))
        assert done.returncode == EXIT_USER_ERROR
        assert server.requests == []
        assert done.stderr == f"agent-magics: {sentence.format(path)}\n"


def test_a_chat_server_gets_the_schema_as_response_format_and_the_image(tmp_path: Path) -> None:
    image = tmp_path / "red.png"
    image.write_bytes(png("red"))
    server = chat_fault_server([Answer(items=[message(VERDICT)])])
    try:
        done = exec_cli(
            tmp_path, server.base_url, "--output-schema", str(SCHEMA), "-i", str(image),
            provider="chat",
        )  # fmt: skip
    finally:
        server.close()
    assert done.returncode == 0, done.stderr
    assert done.stdout == VERDICT + "\n"
    body = server.requests[0]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "codex_output_schema",
            "strict": True,
            "schema": json.loads(SCHEMA.read_text()),
        },
    }
    data_url = "data:image/png;base64," + base64.b64encode(png("red")).decode()
    assert body["messages"][-1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "<image name=[Image #1]>"},
            {"type": "image_url", "image_url": {"url": data_url}},
            {"type": "text", "text": "</image>"},
            {"type": "text", "text": "Summarise the test run as JSON."},
        ],
    }


def test_a_failing_turn_ends_with_turn_failed(tmp_path: Path) -> None:
    refused = HttpFailure(401, json.dumps({"error": {"message": "Incorrect API key provided"}}))
    _, done = run(tmp_path, [refused], "--json")
    assert done.returncode == EXIT_USER_ERROR
    lines = events(done.stdout)
    assert [line["type"] for line in lines] == [
        "thread.started",
        "turn.started",
        "error",
        "turn.failed",
    ]
    message_text = lines[-1]["error"]["message"]
    assert lines[2] == {"type": "error", "message": message_text}
    assert message_text and message_text in done.stderr  # the same sentence, on stderr too
    assert KEY not in done.stdout


def test_secrets_stay_out_of_the_events_and_the_last_message(tmp_path: Path) -> None:
    last = tmp_path / "last.txt"
    leak = f"The key is {KEY}."
    _, done = run(tmp_path, [[message(leak)]], "--json", "-o", str(last))
    assert done.returncode == 0, done.stderr
    assert KEY not in done.stdout and KEY not in last.read_text() and KEY not in done.stderr
    assert events(done.stdout)[2]["item"]["text"] == last.read_text() != leak
