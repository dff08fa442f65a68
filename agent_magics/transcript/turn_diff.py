"""The files a turn changed, drawn as one collapsed diff per file (HTML and markdown).

Pure functions, compared exactly in tests; the live transcript, the static one and the
headless markdown place these strings. Paths and diffs go through
:func:`~agent_magics.text.visible.visible`: a change is shown with nothing in it hidden.
"""

from __future__ import annotations

import re

from agent_magics.events import FileDiff
from agent_magics.text.visible import visible
from agent_magics.transcript.html import diff_html, esc

STATUS_COLORS = {"added": "#1a7f37", "modified": "#9a6700", "deleted": "#cf222e"}


def counts(diff: str) -> tuple[int, int]:
    """Lines added and removed by a unified diff (its ``---``/``+++`` headers left out)."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++ "):
            added += 1
        elif line.startswith("-") and not line.startswith("--- "):
            removed += 1
    return added, removed


def title(files: tuple[FileDiff, ...]) -> str:
    n = len(files)
    return f"{n} file{'' if n == 1 else 's'} changed in this turn"


def file_summary(f: FileDiff) -> str:
    added, removed = counts(f.diff)
    return f"{visible(f.path)} · {f.status} · +{added} −{removed}"


def _fence(text: str) -> str:
    """A ``diff`` fence that no backtick run inside ``text`` can close."""
    ticks = "`" * max(3, 1 + max((len(m) for m in re.findall(r"`+", text)), default=0))
    return f"{ticks}diff\n{text}\n{ticks}"


def turn_diff_html(files: tuple[FileDiff, ...]) -> str:
    """A heading, then each file as a collapsed ``<details>`` holding its coloured diff."""
    rows = [f'<div style="color:#6e7781"><b>{esc(title(files))}</b></div>']
    for f in files:
        added, removed = counts(f.diff)
        color = STATUS_COLORS.get(f.status, "#6e7781")
        path = esc(visible(f.path))
        summary = (
            f'<code>{path}</code> <span style="color:{color}">{esc(f.status)}</span>'
            f' <span style="color:#6e7781">+{added} −{removed}</span>'
        )
        rows.append(f"<details><summary>{summary}</summary>{diff_html(f.diff)}</details>")
    return '<div class="agent-magics-turn-diff">' + "".join(rows) + "</div>"


def turn_diff_markdown(files: tuple[FileDiff, ...]) -> str:
    """The same as markdown: ``<details>`` blocks around ``diff`` fences (GitHub and
    JupyterLab fold them)."""
    parts = [f"**{title(files)}**"]
    for f in files:
        summary = esc(file_summary(f))
        parts.append(
            f"<details><summary>{summary}</summary>\n\n{_fence(visible(f.diff.rstrip()))}\n\n</details>"
        )
    return "\n\n".join(parts)
