"""``%agent review [--uncommitted | --base BRANCH | --commit SHA [--title T] | WORDS]``:
a reviewer session reads the changes of the notebook's folder and its findings land in
the cell as a card (:mod:`agent_magics.transcript.review_card`).

The reviewer is a session of its own (:func:`agent_magics.agent.review.reviewer`): it
only reads, asks nothing, and its conversation does not join the notebook's. The
notebook's conversation is told the findings before its next turn, so a later cell can
say "fix the first one".
"""

from __future__ import annotations

import argparse
import shlex
from typing import TYPE_CHECKING, Any

from agent_magics.agent.review import ReviewOutput, ReviewTarget, review_note
from agent_magics.errors import UserError, for_person

if TYPE_CHECKING:
    from agent_magics.jupyter.ui.magics_state import MagicsState

USAGE = "%agent review [--uncommitted | --base BRANCH | --commit SHA [--title TITLE] | WORDS]"


class ReviewCard:
    """The findings for ``display``: HTML, markdown and plain text."""

    def __init__(self, hint: str, output: ReviewOutput) -> None:
        self.hint, self.output = hint, output

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, str]:
        from agent_magics.text.inert import terminal_safe
        from agent_magics.transcript.review_card import (
            review_html,
            review_markdown,
            review_plain,
        )

        return {
            "text/html": review_html(self.hint, self.output),
            "text/markdown": review_markdown(self.hint, self.output),
            "text/plain": terminal_safe(review_plain(self.hint, self.output)),
        }


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # a sentence in the cell, not SystemExit
        raise UserError(f"{message} (usage: {USAGE})")


def review_target(words: str) -> ReviewTarget:
    """What ``%agent review``'s words ask for; uncommitted changes when they name none."""
    parser = _Parser(prog="%agent review", add_help=False)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--uncommitted", action="store_true")
    which.add_argument("--base", metavar="BRANCH")
    which.add_argument("--commit", metavar="SHA")
    parser.add_argument("--title")
    parser.add_argument("instructions", nargs="*")
    try:
        args = parser.parse_args(shlex.split(words))
    except ValueError as exc:  # an unclosed quote
        raise UserError(f"{exc} (usage: {USAGE})") from None
    named = args.uncommitted or args.base is not None or args.commit is not None
    if args.instructions and named:
        raise UserError(f"give a target or instructions, not both (usage: {USAGE})")
    if args.title is not None and args.commit is None:
        raise UserError("--title goes with --commit.")
    if args.base is not None:
        return ReviewTarget("base", args.base)
    if args.commit is not None:
        return ReviewTarget("commit", args.commit, args.title)
    if args.instructions:
        return ReviewTarget("custom", " ".join(args.instructions))
    return ReviewTarget("uncommitted")


def review_command(magics: MagicsState, words: str) -> None:
    """Run the review; the cell shows that it runs, then the card in its place."""
    from agent_magics.agent.review import reviewer, run_review
    from agent_magics.tools.sandbox.jupyter import runtime_secrets

    target = review_target(words)
    config = magics.current_config()
    if config is None:
        return
    hint = target.hint()
    asking = magics.session

    async def review() -> ReviewCard:
        session = reviewer(config, magics.agent.offers, runtime_secrets)
        try:
            output, _ = await run_review(session, target)
        except BaseException:
            if asking is not None and asking is magics.session:
                asking.add_note(review_note(target, None))
            raise
        finally:
            await session.aclose()
        if asking is not None and asking is magics.session:  # the same conversation still
            asking.add_note(review_note(target, output))
        return ReviewCard(hint, output)

    magics.agent.in_cell(
        review,
        for_person(f"reviewing {hint}…"),
        for_person("the review was stopped before it finished."),
        for_person("the review could not run: {}"),
    )
