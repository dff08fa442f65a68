"""``agent-magics exec review``: a review of the folder's git changes as one headless
turn (:mod:`agent_magics.agent.review`), for CI and the terminal.

The targets are Codex's (``--uncommitted``, ``--base BRANCH``, ``--commit SHA
[--title T]``, or instructions in words, one of them). The review goes to stdout as text
laid out as Codex lays it out; with ``--json`` the turn's events go there instead, the
findings as our ``review`` item and the text as the ``agent_message``; ``-o`` writes the
text to a file. The exit statuses are ``exec``'s.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from agent_magics.agent.review import ReviewTarget
from agent_magics.errors import UserError
from agent_magics.terminal.exec_options import common_options

if TYPE_CHECKING:
    from agent_magics.events import Event

EXIT_OK = 0
REVIEW_EPILOG = (
    "The reviewer only reads: its commands run in the read-only sandbox without asking, "
    "and it has no patch, MCP or web search tools. Exit status as for exec: 0 when the "
    "review finished (whatever it found), 1 with one sentence when a person must fix "
    "something, 75 when the model server still failed after the retries, 130/143 when "
    "interrupted/terminated."
)


def build_review_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-magics exec review",
        description="Review the folder's changes: prioritised findings and a verdict.",
        epilog=REVIEW_EPILOG,
        parents=[common_options()],
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--uncommitted", action="store_true", help="the staged, unstaged and untracked changes"
    )
    which.add_argument("--base", metavar="BRANCH", help="the changes against BRANCH")
    which.add_argument("--commit", metavar="SHA", help="the changes commit SHA made")
    parser.add_argument("--title", help="the commit's title, for the prompt (with --commit)")
    parser.add_argument(
        "prompt", nargs="?", help="what to review, in words, instead of a target; '-': stdin"
    )
    parser.set_defaults(
        command="review",
        approval_policy=None,
        sandbox=None,
        web_search=None,
        resume=None,
        compact=False,
    )
    return parser


def target_of(args: argparse.Namespace) -> ReviewTarget:
    """The target the options name, or the instructions given (``-``: read from stdin)."""
    named = args.uncommitted or args.base is not None or args.commit is not None
    if args.title is not None and args.commit is None:
        raise UserError("--title goes with --commit.")
    if args.prompt is not None and named:
        raise UserError(
            "Give a target (--uncommitted, --base, --commit) or instructions, not both."
        )
    if args.base is not None:
        return ReviewTarget("base", args.base)
    if args.commit is not None:
        return ReviewTarget("commit", args.commit, args.title)
    if args.uncommitted:
        return ReviewTarget("uncommitted")
    if args.prompt is None:
        raise UserError(
            "Say what to review: --uncommitted, --base BRANCH, --commit SHA, or instructions."
        )
    words = sys.stdin.read() if args.prompt == "-" else args.prompt
    if not words.strip():
        raise UserError("The review's instructions are empty.")
    return ReviewTarget("custom", words.strip())


async def run_review_exec(args: argparse.Namespace, target: ReviewTarget) -> int:
    from agent_magics.agent.review import check_target, run_review
    from agent_magics.events import AssistantMessage, TurnFinished
    from agent_magics.terminal import exec_inputs, jsonl
    from agent_magics.terminal.console import say, usage_line
    from agent_magics.terminal.exec_session import start_exec

    session, recorder, console = await start_exec(args, review=True)
    check_target(target, session.config.cwd)  # before any request
    events = jsonl.for_session(session) if args.json else None
    held: list[Event] = []
    if events is not None:
        out = events
        jsonl.write_lines(out.started(), sys.stdout)

        def write(event: Event) -> None:
            if isinstance(event, AssistantMessage):
                return  # the reviewer's JSON: the review's own lines stand for it
            if isinstance(event, TurnFinished):
                held.append(event)  # after the review's lines
                return
            jsonl.write_lines(out.fold(event), sys.stdout)

        session.subscribe(write)
    print(f"reviewing {target.hint()}", file=sys.stderr)
    try:
        output, text = await run_review(session, target)
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
    text = session.redact.text(text)
    if events is not None:
        review = json.loads(session.redact.text(json.dumps(output.model_dump(mode="json"))))
        jsonl.write_lines(events.reviewed(text, review), sys.stdout)
        for event in held:
            jsonl.write_lines(events.fold(event), sys.stdout)
    else:
        say(text, sys.stdout)
    if args.output_last_message is not None:
        exec_inputs.write_last_message(args.output_last_message, text)
    if denied := console.summary():
        print(denied, file=sys.stderr)
    if line := usage_line(session.usage):
        print(line, file=sys.stderr)
    return EXIT_OK
