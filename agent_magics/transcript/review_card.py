"""A review's findings as a card: HTML for the cell, markdown and plain text beside it
(what a saved notebook shows where the HTML is not rendered). Pure functions; every
word the reviewer wrote is escaped (its bodies are rendered as markdown with HTML off)."""

from __future__ import annotations

from agent_magics.agent.review import ReviewFinding, ReviewOutput, location, review_text
from agent_magics.transcript.html import esc
from agent_magics.transcript.static_html import CARD_STYLE, MUTED, answer_html

PRIORITY_COLORS = {0: "#cf222e", 1: "#bc4c00", 2: "#9a6700", 3: "#6e7781"}
"""P0 red to P3 grey, as a badge before each finding's title."""
VERDICT_COLORS = {"patch is correct": "#1a7f37", "patch is incorrect": "#cf222e"}


def count_words(output: ReviewOutput) -> str:
    n = len(output.findings)
    return "no findings" if n == 0 else "1 finding" if n == 1 else f"{n} findings"


def heading(hint: str, output: ReviewOutput) -> str:
    """``Review of uncommitted changes · 2 findings · patch is incorrect (confidence 0.7)``."""
    parts = [f"Review of {hint}", count_words(output)]
    if output.overall_correctness:
        sure = output.overall_confidence_score
        parts.append(output.overall_correctness + (f" (confidence {sure:.1f})" if sure else ""))
    return " · ".join(parts)


def _finding_html(finding: ReviewFinding) -> str:
    color = PRIORITY_COLORS.get(finding.priority if finding.priority is not None else -1, MUTED)
    where = f'<code style="{MUTED}">{esc(location(finding))}</code>'
    sure = f' <span style="{MUTED}">· confidence {finding.confidence_score:.1f}</span>'
    title = f'<b style="color:{color}">{esc(finding.title)}</b>'
    return f"<li>{title}<br>{where}{sure}<div>{answer_html(finding.body)}</div></li>"


def review_html(hint: str, output: ReviewOutput) -> str:
    """The card: its heading (the verdict coloured), the explanation, then each finding
    with its priority's colour, its location and its body."""
    verdict = VERDICT_COLORS.get(output.overall_correctness)
    head = esc(heading(hint, output))
    if verdict is not None:
        head = head.replace(
            esc(output.overall_correctness),
            f'<span style="color:{verdict}">{esc(output.overall_correctness)}</span>',
            1,
        )
    parts = [f'<div style="{CARD_STYLE}"><div><b>{head}</b></div>']
    if output.overall_explanation.strip():
        parts.append(f"<div>{answer_html(output.overall_explanation.strip())}</div>")
    if output.findings:
        items = "".join(_finding_html(f) for f in output.findings)
        parts.append(f'<ol style="padding-left:20px">{items}</ol>')
    parts.append("</div>")
    return "".join(parts)


def review_markdown(hint: str, output: ReviewOutput) -> str:
    """The card as markdown: the heading in bold, then the review as text."""
    return f"**{heading(hint, output)}**\n\n{review_text(output)}"


def review_plain(hint: str, output: ReviewOutput) -> str:
    return f"{heading(hint, output)}\n\n{review_text(output)}"
