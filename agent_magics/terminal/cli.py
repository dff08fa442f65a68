"""``agent-magics exec``: one headless turn in a terminal or CI, the same session as %%agent.

The final answer goes to stdout (with ``--json``, the turn's events in codex exec's
schema, :mod:`.jsonl`); tool activity and problems go to stderr. Exit status: 0 when the
turn finished, 1 with one sentence when a person must fix something, 3 when the answer
does not follow ``--output-schema`` (:mod:`.exec_inputs`), 75 when the model server
still failed after the retries, 130 when interrupted, 143 when terminated
(:mod:`.stopping`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_magics.errors import PROGRAM, ConnectionFailed, TurnAborted, UserError, for_person
from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode
from agent_magics.terminal.exec_options import common_options
from agent_magics.terminal.exec_session import prompt_from_args, start_exec
from agent_magics.terminal.stopping import (
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    _Terminated,
    until_terminated,
)
from agent_magics.tools.config import WEB_SEARCH_MODES
from agent_magics.trust import project_config, trust_project

if TYPE_CHECKING:
    from agent_magics.agent.session import Session
    from agent_magics.store.recorder import SessionRecorder

EXIT_OK, EXIT_USER_ERROR = 0, 1
EXIT_SCHEMA_MISMATCH = 3  # the turn finished, but its answer does not follow --output-schema
EXIT_SERVER_FAILED = 75  # sysexits.h's EX_TEMPFAIL: failed for now, worth retrying later
STOPPED = "the turn stopped and was recorded as aborted, its commands killed."
EXEC_EPILOG = (
    "Exit status: 0 when the turn finished, also when calls were denied (the model was "
    "told and answered; a line on stderr counts the denied calls); 1 with one sentence when "
    "a person must fix something; 3 when the answer does not follow --output-schema; "
    "75 when the model server still failed after the "
    "retries (worth retrying later); 130 when interrupted or aborted, 143 when terminated "
    "(SIGTERM, as a cancelled CI job is), the turn recorded as aborted. With stdin not a "
    "terminal nobody can answer approval questions, so calls that need one are denied: "
    "pass -a never to run them without asking, inside the sandbox chosen with -s."
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-magics", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser(
        "exec",
        help="run one turn headlessly in the current folder (exec review: review changes)",
        epilog=EXEC_EPILOG,
        parents=[common_options()],
    )
    ex.add_argument("-a", "--approval-policy", choices=[p.value for p in ApprovalPolicy])
    ex.add_argument("-s", "--sandbox", choices=[s.value for s in SandboxMode])
    ex.add_argument(
        "--web-search", choices=WEB_SEARCH_MODES, help="the model server's web search tool"
    )
    ex.add_argument(
        "--resume",
        metavar="ID|last",
        help="continue a saved session (an id, its start, or last) with this prompt",
    )
    ex.add_argument(
        "--compact",
        action="store_true",
        help="compact the resumed session's conversation instead of running a turn; "
        "the prompt, if any, says what the summary must keep",
    )
    ex.add_argument(
        "--output-schema",
        type=Path,
        metavar="FILE",
        help="a JSON Schema the final answer must follow: sent to the model server as a "
        f"strict format, then checked (exit {EXIT_SCHEMA_MISMATCH} when the answer does not match)",
    )
    ex.add_argument(
        "-i",
        "--image",
        type=Path,
        action="append",
        default=[],
        metavar="FILE",
        help="attach an image to the prompt; repeatable",
    )
    ex.add_argument("prompt", nargs="?", help="the prompt; read from stdin when absent or '-'")
    acp = sub.add_parser(
        "acp",
        help="serve the Agent Client Protocol on stdio, for chat panels (jupyter-ai, Zed, marimo)",
    )
    acp.add_argument("--base-url", help="model server URL, e.g. http://127.0.0.1:8000/v1")
    acp.add_argument("-m", "--model", help="model name")
    acp.add_argument("--provider", choices=["auto", "responses", "chat", "replay"])
    acp.add_argument(
        "-a", "--approval-policy", choices=[p.value for p in ApprovalPolicy],
        help="the sessions' first mode (the client can switch it)",
    )  # fmt: skip
    acp.add_argument("-s", "--sandbox", choices=[s.value for s in SandboxMode])
    acp.add_argument(
        "-c", "--config", action="append", default=[], metavar="KEY=VALUE",
        help="override a setting (VALUE read as TOML, else as a string); repeatable",
    )  # fmt: skip
    tr = sub.add_parser("trust", help="trust the project config (.agent_magics/config.toml)")
    tr.add_argument("folder", nargs="?", type=Path, default=Path(), help="default: here")
    sub.add_parser("demo", help="one offline turn: a scripted model drives the real tools")
    xp = sub.add_parser("export", help="write a saved session as .ipynb, .md or .html")
    xp.add_argument("session", metavar="ID|last", help="a session id, its start, or last")
    xp.add_argument("path", help="the document to write: its name ends in .ipynb, .md or .html")
    xp.add_argument("--force", action="store_true", help="replace the file if it exists")
    xp.add_argument("-C", "--cd", type=Path, help="the working folder whose sessions to read")
    return parser


def run_trust(folder: Path) -> int:
    project = project_config(folder)
    if project is None:
        print(for_person(f"{folder.resolve()} has no project config.", PROGRAM), file=sys.stderr)
        return EXIT_USER_ERROR
    print("\n".join(project.lines()) or "(it sets nothing)")
    print(for_person(f"trusted {project.file} (kept in {trust_project(project)}).", PROGRAM))
    return EXIT_OK


def run_export(args: argparse.Namespace) -> int:
    from agent_magics.config import load_config
    from agent_magics.transcript.export import export_session

    cwd = str(args.cd.resolve()) if args.cd else os.getcwd()
    words = [args.session, str(Path(args.path).resolve()), *(["--force"] if args.force else [])]
    try:
        print(export_session(words, load_config(options={"cwd": cwd}), None))
    except UserError as exc:
        print(for_person(exc, PROGRAM), file=sys.stderr)
        return EXIT_USER_ERROR
    return EXIT_OK


async def run_exec(args: argparse.Namespace, prompt: str) -> int:
    from agent_magics.terminal import exec_inputs
    from agent_magics.terminal.console import say, usage_line

    # Read before any request: a wrong file fails at once, not after a paid turn.
    schema = exec_inputs.read_output_schema(args.output_schema) if args.output_schema else None
    images = exec_inputs.read_images(args.image)
    session, recorder, console = await start_exec(args)
    if args.compact:
        return await _compact(session, recorder, prompt)
    events = None
    if args.json:
        from agent_magics.terminal import jsonl

        events = jsonl.for_session(session)
        jsonl.write_lines(events.started(), sys.stdout)
        session.subscribe(lambda event: jsonl.write_lines(events.fold(event), sys.stdout))
    try:
        result = await session.run_turn(prompt, images=images, output_schema=schema)
    except UserError as exc:
        if recorder is not None:
            recorder.fail(str(exc))
        if events is not None:
            jsonl.write_lines(events.failed(session.redact.text(str(exc))), sys.stdout)
        raise
    finally:
        await session.aclose()
        if recorder is not None:
            recorder.close()
    answer = session.redact.text(result.final_text)
    if args.output_last_message is not None:
        exec_inputs.write_last_message(args.output_last_message, answer)
    if answer and events is None:
        say(answer, sys.stdout)
    if denied := console.summary():
        print(denied, file=sys.stderr)
    if line := usage_line(result.usage):
        print(line, file=sys.stderr)
    if schema is not None and (wrong := exec_inputs.schema_mismatch(result.final_text, schema)):
        say(for_person(session.redact.text(wrong), PROGRAM))
        return EXIT_SCHEMA_MISMATCH
    return EXIT_OK


async def _compact(session: Session, recorder: SessionRecorder | None, words: str) -> int:
    """``exec --resume ID --compact [WORDS]``: the summary on stdout, the line on stderr."""
    from agent_magics.terminal.console import say

    try:
        event = await session.compact(words)
    finally:
        await session.aclose()
        if recorder is not None:
            recorder.close()
    say(session.redact.text(event.summary or "(the server kept its own summary)"), sys.stdout)
    return EXIT_OK


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line: ``exec review ...`` by its own parser (Codex's form: a review
    takes targets where a turn takes a prompt), the rest by :func:`build_parser`."""
    words = sys.argv[1:] if argv is None else list(argv)
    if words[:2] == ["exec", "review"]:
        from agent_magics.terminal.review_exec import build_review_parser

        return build_review_parser().parse_args(words[2:])
    return build_parser().parse_args(words)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.command == "demo":
        from agent_magics.terminal.demo import main as demo_main

        return demo_main()
    if args.command == "acp":
        from agent_magics.acp.main import run

        return run(args)
    if args.command == "export":
        return run_export(args)
    if args.command == "trust":
        try:
            return run_trust(args.folder)
        except UserError as exc:
            print(for_person(exc, PROGRAM), file=sys.stderr)
            return EXIT_USER_ERROR
    if args.command == "review":
        from agent_magics.terminal.review_exec import run_review_exec, target_of

        try:
            target = target_of(args)
        except UserError as exc:
            print(for_person(exc, PROGRAM), file=sys.stderr)
            return EXIT_USER_ERROR
        return ended(run_review_exec(args, target))
    if args.compact and not args.resume:
        print(for_person("--compact needs --resume ID|last.", PROGRAM), file=sys.stderr)
        return EXIT_USER_ERROR
    if args.compact:
        prompt = args.prompt or ""
    else:
        prompt = args.prompt if prompt_from_args(args) else sys.stdin.read()
    if not prompt.strip() and not args.compact:
        print(for_person("the prompt is empty.", PROGRAM), file=sys.stderr)
        return EXIT_USER_ERROR
    return ended(run_exec(args, prompt))


def ended(work: Coroutine[Any, Any, int]) -> int:
    """Run ``work`` (a turn of ``exec`` or ``exec review``) to its exit status: what a
    person must fix, a server that kept failing, an interrupt and SIGTERM each end with
    one line on stderr and their own status (see the epilog)."""
    from agent_magics.terminal.console import say

    try:
        return asyncio.run(until_terminated(work))
    except ConnectionFailed as exc:  # a job may retry these later
        say(for_person(exc, PROGRAM))
        return EXIT_SERVER_FAILED
    except UserError as exc:
        say(for_person(exc, PROGRAM))
        return EXIT_USER_ERROR
    except TurnAborted as exc:
        say(for_person(f"turn aborted: {exc}", PROGRAM))
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print(for_person(f"interrupted; {STOPPED}", PROGRAM), file=sys.stderr)
        return EXIT_INTERRUPTED
    except _Terminated:
        print(for_person(f"terminated (SIGTERM); {STOPPED}", PROGRAM), file=sys.stderr)
        return EXIT_TERMINATED


if __name__ == "__main__":
    sys.exit(main())
