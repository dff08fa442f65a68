"""README.md's examples, run as a newcomer would run them.

Each fenced code block in README.md follows an HTML comment, invisible on GitHub, that
says how this file tests it: ``<!-- test: KIND -->``. A block without one fails
:func:`test_every_block_says_how_it_is_tested`, so a new example cannot go untested
unnoticed. The kinds:

``top``
    the two set-up commands: they must be the first two lines of the first block. They
    take 15 minutes and the second runs this suite, so they are not run again here;
    ``agent-magics demo`` (the end of the first) is.
``shell``
    run by ``bash -e``, in README order, in one working folder holding a copy of the
    repository's tracked files, with the venv's ``bin`` first on ``PATH``, a ``HOME`` of
    its own and no model named by the caller's environment.
``openai``
    a shell block for OpenAI, run the same way with one change: ``OPENAI_BASE_URL``
    points at a scripted Responses server on 127.0.0.1.
``chat``
    a shell block for a Chat Completions server: its ``http://127.0.0.1:11434/v1`` is
    swapped for a scripted Chat Completions server on 127.0.0.1.
``python``
    run by the venv's ``python`` in that working folder.
``workflow``
    a CI workflow (GitHub Actions YAML): its ``run`` steps but the install run in order,
    as ``openai`` blocks are, in a git checkout of that folder, with each step's
    ``env`` (``${{ secrets.* }}`` a dummy key, ``${{ inputs.* }}`` their defaults); the
    files it uploads as artifacts must exist afterwards.
``kernel``
    a notebook cell, run in README order in one real kernel (a folder and ``HOME`` of its
    own); ``%%agent`` cells that name no provider reach a scripted Responses server on
    127.0.0.1 through ``OPENAI_BASE_URL``. No cell may fail.
``output``
    what the block before it printed; it must appear in that block's output.
``config``
    a ``config.toml``: parsed and validated by the real settings loader.
``policy``
    a teacher's policy (a notebook's metadata as JSON, or a site file as TOML): read by
    the real policy parser, which must find every key valid.
``message``
    a sentence from Troubleshooting: every piece between two ``…`` must appear in what
    the real code says in that situation, produced here.
``syntax``
    Python that needs a server of its own (JupyterHub's config): compiled only.
``skip (reason)``
    not run: it installs from the network, or is the test suite itself.

Whatever the kind, every ``agent-magics`` line and every ``%%agent`` line is parsed by
the real argument parsers, every ``%agent WORD`` names a line command that exists, the
flag, setting, environment-variable and traitlet lists match the code both ways, and
every relative link and image points at a file that exists.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent_magics.testing import ScriptedResponsesServer, user_texts
from tests.helpers.chat_fault_server import chat_fault_server
from tests.helpers.fault_server import ok
from tests.helpers.paths import ROOT, package_modules

README = ROOT / "README.md"
BIN = Path(sys.executable).parent
OLLAMA = "http://127.0.0.1:11434/v1"
KINDS = {"top", "shell", "openai", "chat", "python", "kernel", "output", "config"}
KINDS |= {"policy", "message", "syntax", "skip", "workflow", "acp-client"}
FENCE = re.compile(
    r"^(?:<!-- test: (?P<kind>[^>]*?) -->\n)?```(?P<lang>\S*)\n(?P<body>.*?)^```$", re.M | re.S
)
MODEL_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENT_MAGICS_")


@dataclass(frozen=True)
class Block:
    kind: str  # the comment's first word, "" when there is none
    note: str  # the comment as written
    lang: str
    body: str
    line: int


def blocks() -> list[Block]:
    text = README.read_text()
    found = []
    for m in FENCE.finditer(text):
        note = m["kind"] or ""
        kind = note.split(" ", 1)[0]
        found.append(Block(kind, note, m["lang"], m["body"], text.count("\n", 0, m.start()) + 1))
    return found


def of_kind(*kinds: str) -> list[Block]:
    return [b for b in blocks() if b.kind in kinds]


def prose() -> str:
    """README without its code blocks."""
    return FENCE.sub("", README.read_text())


def clean_env(home: Path) -> dict[str, str]:
    """The caller's environment with a home of its own and no model named."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(MODEL_ENV)}
    env |= {"HOME": str(home), "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}"}
    env.pop("VIRTUAL_ENV", None)
    return env


def run_shell(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        stdin=subprocess.DEVNULL,
    )


# -- the file's shape ----------------------------------------------------------------------


def test_every_block_says_how_it_is_tested() -> None:
    found = blocks()
    fences = [line for line in README.read_text().splitlines() if line.startswith("```")]
    assert len(found) == len(fences) // 2  # the pattern missed no block
    unmarked = [f"line {b.line}: {b.note or 'no <!-- test: KIND --> comment'}" for b in found]
    unmarked = [u for u, b in zip(unmarked, found, strict=True) if b.kind not in KINDS]
    assert not unmarked
    for b in found:  # a skipped block says why
        assert b.kind != "skip" or re.fullmatch(r"skip \(.+\)", b.note), b.line
    outputs = [i for i, b in enumerate(found) if b.kind == "output"]
    assert all(found[i - 1].kind in ("kernel", "shell", "python") for i in outputs)


def test_the_two_commands_come_first_and_the_demo_runs(tmp_path: Path) -> None:
    first = blocks()[0]
    assert first.kind == "top"
    assert first.body.splitlines() == [
        "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/agent-magics demo",
        "python3 -m venv .venv && .venv/bin/pip install -e '.[test]' "
        "&& .venv/bin/python -m pytest -n auto",
    ]
    assert README.read_text().split("```")[0].count("\n") < 5  # nothing to read before them
    demo = first.body.splitlines()[0].rsplit("&& ", 1)[1]
    assert demo.startswith(".venv/bin/")
    demo = f"{BIN}/{demo.removeprefix('.venv/bin/')}"  # the venv running the tests, wherever
    home = tmp_path / "home"
    home.mkdir()
    done = run_shell(demo, ROOT, clean_env(home))
    assert done.returncode == 0, done.stderr
    assert "all tests passed" in done.stdout + done.stderr


def test_links_and_images_point_at_files_that_exist() -> None:
    targets = re.findall(r"\]\(([^)\s]+)\)", prose())
    local = [t for t in targets if not re.match(r"[a-z]+:", t)]
    anchors = {
        re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-")
        for h in re.findall(r"^#+ (.+)$", prose(), re.M)
    }
    assert local
    for target in local:
        if target.startswith("#"):
            assert target[1:] in anchors, target
        else:
            assert (ROOT / target.split("#")[0]).exists(), target


# -- names: flags, options, line commands, settings, variables, traitlets ------------------


def code_lines() -> Iterator[str]:
    """Every line of every block, then every inline code span, joined where a shell
    line ends in a backslash."""
    for b in blocks():
        yield from b.body.replace("\\\n", " ").splitlines()
    yield from re.findall(r"`([^`\n]+)`", prose())


def subcommand(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser:
    """The parser of one ``agent-magics`` subcommand."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found: argparse.ArgumentParser = action.choices[name]
            return found
    raise AssertionError(f"no subcommand {name}")


def options_of(words: list[str]) -> list[str]:
    return [w.split("=")[0] for w in words if w.startswith("-") and w != "-"]


def test_every_agent_magics_command_parses() -> None:
    from agent_magics.terminal.cli import build_parser, parse_args
    from agent_magics.terminal.review_exec import build_review_parser

    exec_options = set(subcommand(build_parser(), "exec")._option_string_actions)
    review_options = set(build_review_parser()._option_string_actions)
    full = 0
    for b in blocks():
        for line in b.body.replace("\\\n", " ").splitlines():
            command = line.split("#")[0].split("<")[0].strip()
            start = command.find("agent-magics ")
            if start < 0 or b.kind == "top" or "{" in command:
                continue
            parse_args(shlex.split(command[start:])[1:])  # exits on a bad flag
            full += 1
    assert full >= 5
    spans = [s for s in re.findall(r"`([^`\n]+)`", prose()) if s.startswith("agent-magics exec")]
    for span in spans:
        known = review_options if span.startswith("agent-magics exec review") else exec_options
        for option in options_of(span.replace("[", " ").replace("]", " ").split()):
            assert option in known, span
    table = set(re.findall(r"^\| `(-[^`]*)`", prose(), re.M))
    named = {o for row in table for o in re.findall(r"--?[\w-]+", row)}
    assert named == exec_options - {"-h", "--help"}  # the flag table is the whole parser


def test_chat_client_settings_start_our_acp_command() -> None:
    """An editor's settings (Zed's ``agent_servers``) are valid JSON whose command, run
    with its arguments, is ``agent-magics acp`` with options it takes."""
    from agent_magics.terminal.cli import parse_args

    found = of_kind("acp-client")
    assert found
    for b in found:
        servers = json.loads(b.body)["agent_servers"]
        for server in servers.values():
            assert Path(server["command"]).name == "agent-magics", b.line
            assert parse_args(server["args"]).command == "acp", b.line
            assert all(isinstance(v, str) for v in server.get("env", {}).values()), b.line


def test_every_cell_option_and_line_command_exists() -> None:
    from agent_magics.jupyter.magics import AgentMagics
    from agent_magics.jupyter.ui.line_commands import COMMANDS

    parser = AgentMagics.agent_cell.parser  # type: ignore[attr-defined]
    cells = 0
    for line in code_lines():
        if line.startswith("%%agent"):
            words = shlex.split(line.replace("…", ""))[1:]
            parser.parse_args(words)  # raises on an unknown option or value
            cells += 1
        for word in re.findall(r"(?<!%)%agent (\w+)", line):
            assert word in COMMANDS, line
    assert cells >= 4
    listed = re.search(r"`%agent ([a-z]+(?:\|[a-z]+)+)`", prose())
    assert listed is not None and set(listed[1].split("|")) == set(COMMANDS)


def table_names(header: str) -> set[str]:
    """The backticked names in the first column of the table whose header starts so."""
    table = prose().split(f"| {header} |", 1)[1].split("\n\n", 1)[0]
    return {n for row in table.splitlines()[2:] for n in re.findall(r"`(\w+)`", row.split("|")[1])}


def test_settings_variables_and_traitlets_match_the_code() -> None:
    from agent_magics.config import ENV_VARS, NOT_SETTINGS, SessionConfig
    from agent_magics.jupyter.magics import AgentMagics

    settings = set(SessionConfig.model_fields) - {"api_key", "cwd"} - NOT_SETTINGS
    assert table_names("setting") == settings
    source = "".join(p.read_text() for p in package_modules())
    in_code = set(ENV_VARS) | set(re.findall(r"AGENT_MAGICS_[A-Z_]+[A-Z]", source))
    in_code -= {"AGENT_MAGICS_TEST_PYTHONS"}
    assert table_names("environment variable") == in_code
    mentioned = set(re.findall(r"\b(?:OPENAI|AGENT_MAGICS)_[A-Z_]*[A-Z]\b", README.read_text()))
    assert mentioned <= in_code
    traits = set(AgentMagics.class_trait_names(config=True))
    sentence = prose().split("In a notebook the traitlets", 1)[1].split("set the same", 1)[0]
    assert set(re.findall(r"`(?:AgentMagics\.)?(\w+)`", sentence)) >= traits
    for name in re.findall(r"AgentMagics\.(\w+)", README.read_text()):
        assert name in traits, name


def test_config_blocks_are_valid_settings(tmp_path: Path) -> None:
    from agent_magics.config import build_config

    found = of_kind("config")
    assert len(found) >= 2
    for b in found:
        settings = tomllib.loads(b.body)
        build_config({"cwd": str(tmp_path)}, settings)  # raises ConfigError on a bad one


def test_teacher_policies_are_valid_policies() -> None:
    from agent_magics.teaching.policy import POLICY_KEYS, parse

    found = of_kind("policy")
    assert len(found) >= 2
    for b in found:
        data = json.loads(b.body)["agent_magics"] if b.lang == "json" else tomllib.loads(b.body)
        policy = parse(data, f"README.md:{b.line}")
        assert not policy.problems and policy.in_force, policy.problems
    keys = prose().split("The keys: ", 1)[1].split("\n\n", 1)[0]
    assert set(re.findall(r"`(\w+)`", keys)) >= set(POLICY_KEYS)


def test_python_that_needs_a_server_of_its_own_compiles() -> None:
    found = of_kind("syntax")
    assert found
    for b in found:
        compile(b.body, f"README.md:{b.line}", "exec")


# -- the examples, run ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the repository's files as a fresh clone has them: tracked, or new and
    not ignored (so a file about to be committed counts, a deleted one does not)."""
    folder = tmp_path_factory.mktemp("readme") / "clone"
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, folder / name)
    (folder.parent / "home").mkdir()
    return folder


def test_shell_blocks_run(work: Path) -> None:
    """The offline ``shell`` blocks, then OpenAI's and Ollama's examples with only the
    server's address changed, each against a scripted server on 127.0.0.1."""
    env = clean_env(work.parent / "home")
    ran = {"shell": 0, "openai": 0, "chat": 0}
    for b in of_kind("shell", "openai", "chat"):
        script, here = b.body, dict(env)
        responses = ScriptedResponsesServer(final_text="Hello from the scripted model.")
        chat = chat_fault_server([ok("Here are the files.")])
        with responses:
            if b.kind == "openai":
                here["OPENAI_BASE_URL"] = responses.base_url
            if b.kind == "chat":
                assert OLLAMA in script
                script = script.replace(OLLAMA, chat.base_url)
            done = run_shell(script, work, here)
            assert done.returncode == 0, f"README.md:{b.line}\n{done.stdout}\n{done.stderr}"
            if b.kind == "openai":
                assert responses.requests and "Hello from the scripted model." in done.stdout
                headers = {k.lower(): v for k, v in responses.headers[0].items()}
                key = "OPENAI_API_KEY=sk-..." in script  # the README's key, sent as is
                assert headers.get("authorization") == ("Bearer sk-..." if key else None)
            if b.kind == "chat":
                assert chat.paths == ["/v1/chat/completions"]
                assert chat.requests[0]["model"] == "qwen3"
                assert "Here are the files." in done.stdout
        chat.close()
        ran[b.kind] += 1
    assert all(ran.values()), ran
    # the replay example fixed the demo's bug and exported its session
    assert "+ 1" not in (work / "demo-stats" / "stats.py").read_text()
    assert "mean() gives wrong results; fix it." in (work / "demo-stats" / "session.md").read_text()


def workflow_value(value: object, inputs: dict[str, str]) -> str:
    """A step's ``env`` value with the expressions GitHub fills: a secret becomes a dummy
    key, an input its default."""

    def filled(match: re.Match[str]) -> str:
        kind, _, name = match[1].strip().partition(".")
        return "sk-ci-dummy" if kind == "secrets" else inputs[name]

    return re.sub(r"\$\{\{(.*?)\}\}", filled, str(value))


def test_the_ci_workflow_runs(work: Path, tmp_path: Path) -> None:
    """The README's workflow, as a runner would run it after the checkout: the agent's
    turn with ``--json`` and ``-o``, then the review of its changes; the artifacts it
    keeps are there, and the events are ``codex exec --json``'s."""
    import yaml

    (b,) = of_kind("workflow")
    flow = yaml.safe_load(b.body)
    (job,) = flow["jobs"].values()
    inputs = {k: v["default"] for k, v in flow[True]["workflow_dispatch"]["inputs"].items()}
    checkout = tmp_path / "checkout"
    # what the earlier blocks left: their sessions, and the repository one made
    shutil.copytree(work, checkout, ignore=shutil.ignore_patterns(".agent_magics", ".git"))
    for words in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "the pushed commit"]):
        ident = ["-c", "user.name=CI", "-c", "user.email=ci@example.org"]
        subprocess.run(["git", *ident, *words], cwd=checkout, check=True, capture_output=True)
    env = clean_env(tmp_path)
    ran = 0
    with ScriptedResponsesServer(final_text="All tests pass.") as server:
        env["OPENAI_BASE_URL"] = server.base_url
        for step in job["steps"]:
            if "run" not in step or step.get("name") == "Install":  # (the venv has it)
                continue
            here = env | {k: workflow_value(v, inputs) for k, v in step.get("env", {}).items()}
            done = run_shell(step["run"], checkout, here)
            assert done.returncode == 0, f"{step.get('name')}\n{done.stdout}\n{done.stderr}"
            ran += 1
    assert ran == 2 and len(server.requests) == 2
    assert "Run the tests and fix what fails." in json.dumps(server.requests[0]["input"])
    (upload,) = [s for s in job["steps"] if s.get("uses", "").startswith("actions/upload")]
    for name in upload["with"]["path"].split():
        assert (checkout / name).exists(), name
    events = [json.loads(line) for line in (checkout / "events.jsonl").read_text().splitlines()]
    assert events[0]["type"] == "thread.started" and events[-1]["type"] == "turn.completed"
    assert (checkout / "last-message.md").read_text() == "All tests pass."
    assert "All tests pass." in (checkout / "review.md").read_text()


@pytest.mark.slow
def test_python_blocks_run(work: Path) -> None:
    """The ``python`` blocks (nbclient runs a notebook in a real kernel)."""
    env = clean_env(work.parent / "home")
    found = of_kind("python")
    assert found
    for b in found:
        done = subprocess.run(
            [sys.executable, "-c", b.body],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, f"README.md:{b.line}\n{done.stderr[-3000:]}"
    assert (work / "quickstart-run.ipynb").exists()


def iopub_text(messages: list[dict[str, object]]) -> tuple[str, list[str]]:
    """What a cell printed (streams and plain-text results) and its errors."""
    text, errors = [], []
    for m in messages:
        content = m["content"]
        assert isinstance(content, dict)
        if m["msg_type"] == "stream":
            text.append(content["text"])
        elif m["msg_type"] in ("execute_result", "display_data"):
            text.append(content["data"].get("text/plain", ""))
        elif m["msg_type"] == "error":
            errors.append(f"{content['ename']}: {content['evalue']}")
    return "".join(text), errors


@pytest.mark.slow
def test_kernel_blocks_run_in_a_real_kernel(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.helpers.kernels import Kernel, kernel_manager

    for name in list(os.environ):
        if name.startswith(MODEL_ENV):
            monkeypatch.delenv(name)
    (tmp_path / "home").mkdir()
    (tmp_path / "ws").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    server = ScriptedResponsesServer(final_text="The slowest test is test_big.").start()
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    kernel = Kernel(kernel_manager(sys.executable, tmp_path / "specs"), tmp_path / "ws")
    try:
        printed = ""
        agent_cells = 0
        for b in blocks():
            if b.kind == "output":
                assert b.body.strip() in printed, f"README.md:{b.line}: {printed!r}"
            if b.kind != "kernel":
                continue
            printed, errors = iopub_text(kernel.run(b.body, timeout=120))
            assert not errors, f"README.md:{b.line}: {errors}"
            assert "agent:" not in printed, f"README.md:{b.line}: {printed}"
            agent_cells += b.body.startswith("%%agent")
        assert agent_cells == 3 and len(server.requests) == 3  # the replay sends nothing
        assert server.requests[0]["model"] == "gpt-5.1-codex"
        filled, asked = (user_texts(r)[-1] for r in server.requests[1:])  # Scripted notebooks
        assert filled == 'Please count the lines of README.md; answer as {"lines": N}.'
        assert asked == "Which file did you read?"
        assert (tmp_path / "ws" / "first-session.html").exists()
        assert "+ 1" not in (tmp_path / "ws" / "stats.py").read_text()
    finally:
        kernel.close()
        server.stop()


# -- troubleshooting: the messages are the code's own --------------------------------------


def real_messages(tmp_path: Path) -> str:
    """What the code says in each of the five situations Troubleshooting names."""
    from agent_magics.jupyter.ui.waiting import background_note
    from agent_magics.terminal.demo import SAMPLE

    env = clean_env(tmp_path / "home")
    (tmp_path / "home").mkdir()
    demo = tmp_path / "demo"
    demo.mkdir()
    for name, text in SAMPLE.items():
        (demo / name).write_text(text)
    recording = ROOT / "agent_magics" / "recordings" / "demo.jsonl"
    said = [background_note()]
    runs = [
        (["exec", "hello"], {}),  # no model
        (
            ["exec", "--provider", "replay", "mean() gives wrong results; fix it."],
            {"AGENT_MAGICS_SANDBOX_MECHANISM": "none"},
        ),
        (["exec", "-c", f"offline_recording={recording}", "a prompt of my own"], {}),
    ]
    for args, extra in runs:
        done = run_shell(shlex.join(["agent-magics", *args]), demo, env | extra)
        said.append(done.stdout + done.stderr)
    project = tmp_path / "project"
    (project / ".agent_magics").mkdir(parents=True)
    (project / ".agent_magics" / "config.toml").write_text('approval_policy = "never"\n')
    done = run_shell("agent-magics exec --provider replay hello", project, env)
    said.append(done.stdout + done.stderr)
    return "\n".join(said)


def test_troubleshooting_quotes_what_the_code_says(tmp_path: Path) -> None:
    found = of_kind("message")
    assert len(found) == 5
    said = " ".join(real_messages(tmp_path).split())
    for b in found:
        for piece in b.body.split("…"):
            piece = " ".join(piece.split())
            assert piece in said, f"README.md:{b.line}: {piece!r} not in\n{said}"
