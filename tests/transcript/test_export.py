"""Export: a real session, run by ``agent-magics exec`` against the scripted server and
saved by it, written as .ipynb (valid by nbformat), .md and .html by ``agent-magics
export``; a damaged file exports what it holds; secrets and scripts stay out."""

from __future__ import annotations

import base64
import json
import re
import subprocess
from pathlib import Path
from typing import Any

import nbformat
import pytest

from agent_magics.testing import ScriptedResponsesServer, custom_tool_call, function_call, message
from agent_magics.transcript.export import live_document, write_document
from agent_magics.transcript.export_html import to_html
from agent_magics.transcript.export_md import MAX_IMAGE_BYTES, MAX_OUTPUT_LINES, to_markdown
from agent_magics.transcript.ipynb import to_notebook
from agent_magics.transcript.saved import fold
from tests.helpers.cli import agent_magics

API_KEY = "sk-export-test-key-0123456789"
TOKEN = "tok-export-deploy-abcdefghij"
PATCH = "*** Begin Patch\n*** Add File: notes.txt\n+first line\n*** End Patch\n"
COMMAND = "echo listing-start && ls && echo $DEPLOY_TOKEN"
ANSWER = "Added **notes.txt**. <script>alert('x')</script>"
PROMPT = f"add notes; the key is {API_KEY}"


def cli(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return agent_magics(cwd, *args, env={"OPENAI_API_KEY": API_KEY, "DEPLOY_TOKEN": TOKEN})


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder where ``agent-magics exec`` ran one turn: a command, a patch, an answer."""
    ws = tmp_path_factory.mktemp("ws")
    script = [
        [function_call("exec_command", {"cmd": COMMAND}, "call_cmd")],
        [custom_tool_call("apply_patch", PATCH, "call_patch")],
        [message(ANSWER)],
    ]
    with ScriptedResponsesServer(script) as server:
        argv = ["exec", "--provider", "responses", "--base-url", server.base_url, "-m", "m"]
        argv += ["-a", "never", "-c", "allow_login_shell=false", PROMPT]
        done = cli(ws, *argv)
    assert done.returncode == 0, done.stderr
    assert (ws / "notes.txt").read_text() == "first line\n"
    return ws


def export(ws: Path, name: str, *more: str) -> subprocess.CompletedProcess[str]:
    return cli(ws, "export", "last", name, *more)


@pytest.mark.slow
def test_the_notebook_validates_and_holds_the_prompt_commands_outputs_and_patch(
    saved: Path,
) -> None:
    done = export(saved, "session.ipynb")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Exported session ") and done.stdout.count("\n") == 1
    assert done.stdout.rstrip().endswith(f"(1 turn) to {saved / 'session.ipynb'}.")
    assert (saved / "session.ipynb").stat().st_mode & 0o777 == 0o600
    nb = nbformat.read(saved / "session.ipynb", as_version=4)
    nbformat.validate(nb)
    markdown = [c.source for c in nb.cells if c.cell_type == "markdown"]
    code = {c.metadata["agent_magics"]["tool"]: c for c in nb.cells if c.cell_type == "code"}
    assert "> add notes; the key is [redacted]" in markdown[1]
    assert code["exec_command"].source == COMMAND
    assert code["exec_command"].metadata["agent_magics"]["status"] == "ok"
    assert code["exec_command"].metadata["agent_magics"]["exit_code"] == 0
    [out] = code["exec_command"].outputs
    assert out.output_type == "stream" and out.text.startswith("listing-start\n")
    assert "notes.txt" not in out.text  # ls ran before the patch
    assert code["apply_patch"].source == PATCH
    assert code["apply_patch"].outputs[0].text == (
        "Success. Updated the following files:\nA notes.txt\n"
    )
    assert ANSWER in markdown
    assert all(c.execution_count is None for c in nb.cells if c.cell_type == "code")


@pytest.mark.slow
def test_the_markdown_reads_as_the_turn_went(saved: Path) -> None:
    assert export(saved, "session.md").returncode == 0
    text = (saved / "session.md").read_text()
    assert "## Turn 1 · " in text
    assert "\n\n> add notes; the key is [redacted]\n\n" in text
    assert f"**exec_command** `{COMMAND}` · done · exit code 0 · " in text
    assert f"```console\n$ {COMMAND}\n```" in text
    assert (
        "<details><summary>Output (2 lines)</summary>\n\n```text\nlisting-start\n[redacted]\n```"
        in text
    )
    assert "**apply_patch** `Add notes.txt` · done · exit code 0 · " in text
    assert (
        "```diff\n*** Begin Patch\n*** Add File: notes.txt\n+first line\n*** End Patch\n```" in text
    )
    assert f"\n\n{ANSWER}\n\n" in text
    assert "\n\n*Tokens: 30 in · 15 out · 45 total*\n\n" in text
    assert text.endswith("\n\n---\n\n*Session total: Tokens: 30 in · 15 out · 45 total*\n")


@pytest.mark.slow
def test_the_html_page_has_no_script_and_shows_the_calls(saved: Path) -> None:
    assert export(saved, "session.html").returncode == 0
    page = (saved / "session.html").read_text()
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert('x')&lt;/script&gt;" in page
    assert f"$ {COMMAND.replace('&', '&amp;')}" in page
    assert '<span style="color:#1a7f37">+first line</span>' in page
    assert "<strong>notes.txt</strong>" in page  # the answer's markdown, rendered
    assert "http" not in page.replace("http://", "")  # nothing fetched from elsewhere


@pytest.mark.slow
def test_secrets_never_reach_an_export(saved: Path) -> None:
    for name in ("secret.ipynb", "secret.md", "secret.html"):
        assert export(saved, name).returncode == 0
        data = (saved / name).read_text()
        assert API_KEY not in data and TOKEN not in data, name
        assert "[redacted]" in data


@pytest.mark.slow
def test_an_existing_file_is_kept_unless_forced(saved: Path) -> None:
    target = saved / "kept.md"
    target.write_text("mine\n")
    refused = export(saved, "kept.md")
    assert refused.returncode == 1
    assert refused.stderr == f"agent-magics: {target} exists already; add --force to replace it.\n"
    assert target.read_text() == "mine\n"
    assert export(saved, "kept.md", "--force").returncode == 0
    assert target.read_text().startswith("# Agent session ")
    wrong = export(saved, "kept.txt")
    assert wrong.returncode == 1 and "must end in .ipynb, .md or .html" in wrong.stderr


@pytest.mark.slow
def test_a_damaged_file_exports_what_it_holds_and_says_so(saved: Path, tmp_path: Path) -> None:
    [file] = (saved / ".agent_magics" / "sessions").glob("*.jsonl")
    folder = tmp_path / ".agent_magics" / "sessions"
    folder.mkdir(parents=True)
    data = file.read_bytes()
    *_, last = re.finditer(rb'"role": ?"assistant"', data)  # inside the answer's line
    cut = last.start()
    (folder / file.name).write_bytes(data[:cut])
    done = cli(tmp_path, "export", file.stem[:8], "cut.md")
    assert done.returncode == 0, done.stderr
    assert "(the file is damaged: skipped 1 unreadable line (the last one, cut off" in done.stdout
    text = (tmp_path / "cut.md").read_text()
    assert "**The session file is damaged: skipped 1 unreadable line" in text
    assert "**apply_patch** `Add notes.txt` · done" in text  # what came before is all there
    assert ANSWER not in text


# -- the document, from records ---------------------------------------------------------------

PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()


def records(*items: dict[str, Any], turn: int = 1, prompt: str = "go") -> list[dict[str, Any]]:
    head = {"type": "turn_started", "turn": turn, "time": "t", "prompt": prompt}
    return [head, *({"type": "item", "turn": turn, "item": i} for i in items)]


def output(call_id: str, value: Any) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": value}


def test_run_python_code_is_a_code_cell_with_its_text_and_figure() -> None:
    image = {"type": "input_image", "image_url": f"data:image/png;base64,{PIXEL}"}
    doc = fold(
        {"id": "s1"},
        records(
            function_call("run_python", {"code": "plot()"}, "c1"),
            output("c1", [{"type": "input_text", "text": "Out: 42"}, image]),
        ),
    )
    nb = to_notebook(doc)
    [cell] = [c for c in nb.cells if c.cell_type == "code"]
    assert cell.source == "plot()"
    assert cell.metadata["agent_magics"]["language"] == "python"
    assert [o.output_type for o in cell.outputs] == ["stream", "display_data"]
    assert cell.outputs[1].data["image/png"] == PIXEL
    assert "![output image 1](data:image/png;base64," in to_markdown(doc)


def test_images_past_the_budget_become_a_note() -> None:
    big = "data:image/png;base64," + "A" * (MAX_IMAGE_BYTES // 2 + 1)
    items = []
    for n in range(3):
        items += [
            function_call("run_python", {"code": f"fig{n}()"}, f"c{n}"),
            output(f"c{n}", [{"type": "input_image", "image_url": big}]),
        ]
    nb = to_notebook(fold({"id": "s"}, records(*items)))
    kinds = [o.output_type for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert kinds == ["display_data", "stream", "stream"]
    note = [c for c in nb.cells if c.cell_type == "code"][1].outputs[0].text
    assert note.endswith("left out: over the export's image budget)\n")


def test_long_outputs_keep_their_head_and_tail() -> None:
    lines = "\n".join(f"line {n}" for n in range(1000))
    body = f"Process exited with code 0\nOutput:\n{lines}"
    doc = fold(
        {"id": "s"},
        records(function_call("shell", {"command": ["seq", "1000"]}, "c"), output("c", body)),
    )
    [cell] = [c for c in to_notebook(doc).cells if c.cell_type == "code"]
    text = cell.outputs[0].text
    assert cell.source == "seq 1000"
    assert text.startswith("line 0\n") and text.endswith("line 999\n")
    assert f"… {1000 - MAX_OUTPUT_LINES} more lines …" in text


def test_a_planted_file_cannot_put_script_into_the_page() -> None:
    evil = "<script>steal()</script>"
    doc = fold(
        {"id": evil, "started": evil, "cwd": evil, "config": {"model": evil}},
        [
            *records(
                {
                    "type": "function_call",
                    "call_id": "c",
                    "name": evil,
                    "arguments": json.dumps({"x": evil}),
                },
                {"type": evil},
                message(f"[link](javascript:steal()) ![img](https://tracker.example/p.png) {evil}"),
                prompt=evil,
            ),
            {"type": "turn_ended", "turn": 1, "status": evil, "error": evil},
            {
                "type": "turn_diff",
                "turn": 1,
                "files": [{"path": evil, "status": evil, "diff": evil}],
            },
        ],
    )
    page = to_html(doc)
    assert "<script" not in page.lower()
    assert 'href="javascript' not in page and '<a href="https://tracker' in page
    assert "<img" not in page  # a remote image becomes a link, not a fetch
    nbformat.validate(to_notebook(doc))


def test_the_turn_diff_and_its_undo_follow_the_turn() -> None:
    diff = "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-old\n+new\n"
    doc = fold(
        {"id": "s"},
        [
            *records(message("changed")),
            {
                "type": "turn_diff",
                "turn": 1,
                "files": [{"path": "a.py", "status": "modified", "diff": diff}],
            },
            {"type": "undo", "turn": 1, "files": [{"path": "a.py"}]},
        ],
    )
    assert to_markdown(doc).endswith(
        "changed\n\n**Files changed in this turn**\n\n"
        "<details><summary>modified: `a.py`</summary>\n\n"
        f"```diff\n{diff.rstrip()}\n```\n\n</details>\n\n"
        "*The changes of this turn were undone: `a.py`.*\n"
    )
    assert '<span style="color:#cf222e">-old</span>' in to_html(doc)


def test_an_undo_of_the_open_notebooks_cells_follows_the_turn() -> None:
    cells = ['cell 3 ("# Notes") put back', 'cell 2 ("y = x + 1") removed']
    doc = fold(
        {"id": "s"},
        [*records(message("edited")), {"type": "undo", "turn": 1, "files": [], "cells": cells}],
    )
    assert to_markdown(doc).endswith(
        "edited\n\n*The changes of this turn were undone: in the open notebook "
        '`cell 3 ("# Notes") put back`, `cell 2 ("y = x + 1") removed`.*\n'
    )
    assert (
        "<p><i>The changes of this turn were undone: in the open notebook cell 3 "
        "(&quot;# Notes&quot;) put back, cell 2 (&quot;y = x + 1&quot;) removed.</i></p>"
    ) in to_html(doc)


def test_resumed_sessions_keep_their_turns_apart() -> None:
    """A resumed session's file has a second settings line; its turns follow the first's."""
    doc = fold(
        {"id": "s"},
        [
            {"type": "session_meta"},
            *records(message("one"), prompt="first"),
            {"type": "session_meta", "resumed": True},
            *records(message("two"), turn=2, prompt="second"),
        ],
    )
    assert [(t.number, t.prompt) for t in doc.turns] == [(1, "first"), (2, "second")]


def test_the_live_history_exports_without_a_file(tmp_path: Path) -> None:
    history = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "<env/>"}]},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "hi " + API_KEY}],
        },
        function_call("exec_command", {"cmd": "true"}, "c1"),
        output("c1", "Process exited with code 0\nOutput:\n"),
        message("first answer"),
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "again"}]},
        message("second answer"),
    ]
    doc = live_document(
        history, session_id="live", meta={"config": {"model": "m"}},
        redact=lambda s: s.replace(API_KEY, "[redacted]"),
    )  # fmt: skip
    path = write_document(doc, tmp_path / "live.md")
    text = path.read_text()
    assert "*This session was not saved to disk, so who approved each call" in text
    assert "## Turn 1\n\n> hi [redacted]\n\n<details><summary>Context sent with the prompt" in text
    assert "**exec_command** `true` · exit code 0\n\n```console\n$ true\n```" in text
    assert "## Turn 2\n\n> again\n\nsecond answer" in text
    assert API_KEY not in text


@pytest.mark.slow
def test_a_denied_call_reads_in_our_words(tmp_path: Path) -> None:
    """The model read Codex's error text for a denied call; the export says what
    happened instead, as the cell's card does."""
    script = [
        [function_call("exec_command", {"cmd": "touch made.txt"}, "call_touch")],
        [message("It was not allowed.")],
    ]
    with ScriptedResponsesServer(script) as server:
        argv = ["exec", "--provider", "responses", "--base-url", server.base_url, "-m", "m"]
        done = cli(tmp_path, *argv, "-a", "untrusted", "make a file")
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "made.txt").exists()
    assert export(tmp_path, "session.md").returncode == 0
    text = (tmp_path / "session.md").read_text()
    assert "**exec_command** `touch made.txt` · failed · denied" in text
    assert "Not run: it was denied, and the model was told so." in text
    assert "CreateProcess" not in text and "rejected by user" not in text


def test_each_context_sent_with_a_prompt_is_named_for_what_it_holds(tmp_path: Path) -> None:
    """The environment and the notebook's cells were both titled "Context sent with the
    prompt", two folds of the same name in one turn."""

    def user(text: str) -> dict[str, Any]:
        return {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }

    history = [
        user("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
        user("<notebook_context>\ncell 1: x = 1\n</notebook_context>"),
        user("hi"),
        message("hello"),
    ]
    doc = live_document(
        history, session_id="live", meta={"config": {"model": "m"}}, redact=lambda s: s
    )
    text = write_document(doc, tmp_path / "live.md").read_text()
    assert "<summary>The environment sent with the prompt</summary>" in text
    assert "<summary>The notebook's cells sent with the prompt</summary>" in text
    assert "Context sent with the prompt" not in text


def test_a_goal_exports_without_a_record_left_out(tmp_path: Path) -> None:
    """create_goal's extra goal_objective output (Codex's, with no call id) is part of
    the session, not a record of an unknown kind."""
    script = [
        [function_call("create_goal", {"objective": "count the rows", "token_budget": 20}, "g1")],
        [message("Goal set.")],
    ]
    with ScriptedResponsesServer(script) as server:
        argv = ["exec", "--provider", "responses", "--base-url", server.base_url, "-m", "m"]
        done = cli(tmp_path, *argv, "-a", "never", "-c", "allow_login_shell=false", "set a goal")
    assert done.returncode == 0, done.stderr
    assert export(tmp_path, "goal.md").returncode == 0
    text = (tmp_path / "goal.md").read_text()
    assert "create_goal" in text and "Goal set." in text
    assert "unknown kind" not in text
