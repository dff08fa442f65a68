"""A session as markdown, and the pieces of markdown the notebook export shares.

Outputs are trimmed to a head and a tail (``MAX_OUTPUT_LINES``, ``MAX_OUTPUT_CHARS``)
and images embedded up to ``MAX_IMAGE_BYTES`` for the whole document, so an export
stays a document a person can open, whatever the session printed. What a call ran (its
command, code, patch, the files a turn changed) goes through
:func:`~agent_magics.text.visible.visible`: the record shows what ran, nothing hidden in it.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass

from agent_magics.events import Usage
from agent_magics.text.markdown import fence, inline_code
from agent_magics.text.visible import visible
from agent_magics.transcript.agent_text import agent_header, ending_text
from agent_magics.transcript.calls import clip_output, parse_arguments
from agent_magics.transcript.document import (
    SessionDoc,
    command,
    decided_by,
    ended_status,
    notice_title,
    patch,
    python,
    recorded_output,
    recorded_status,
    turn_diff,
)
from agent_magics.transcript.markdown import compaction_markdown
from agent_magics.transcript.model import (
    AgentRun,
    CompactionBlock,
    NoticeBlock,
    TextBlock,
    ToolBlock,
    Transcript,
)

MAX_OUTPUT_LINES = 200  # lines of one tool output kept: head and tail halves
MAX_OUTPUT_CHARS = 20_000
MAX_IMAGE_BYTES = 8_000_000  # data URLs embedded in one document, all images together
SUMMARY_CHARS = 120
PATH_ARGS = {
    "read_file": "file_path",
    "list_dir": "dir_path",
    "view_image": "path",
    "web_search": "query",
}
DECISIONS = {
    ("approved", "user"): "approved",
    ("approved_for_session", "user"): "approved for this session",
    ("approved", "policy"): "approved earlier for this session",
    ("approved_for_session", "policy"): "approved earlier for this session",
    ("denied", "user"): "denied",
    ("denied", "policy"): "denied by policy",
    ("abort", "user"): "stopped",
}
STATUS_WORDS = {"ok": "done"}
USAGE_KEYS = (
    ("input_tokens", "in"),
    ("cached_input_tokens", "cached"),
    ("output_tokens", "out"),
    ("reasoning_output_tokens", "reasoning"),
    ("total_tokens", "total"),
)


def quote(text: str) -> str:
    return "\n".join(f"> {line}".rstrip() for line in text.splitlines() or [""])


def clip(text: str, max_lines: int = MAX_OUTPUT_LINES, max_chars: int = MAX_OUTPUT_CHARS) -> str:
    """Head and tail of a long text, as a card clips it, with a document's larger limits."""
    return clip_output(text, max_lines, max_chars)


@dataclass
class ImageBudget:
    """How many bytes of images a document may still embed."""

    left: int = MAX_IMAGE_BYTES

    def take(self, url: str) -> bool:
        if len(url) > self.left:
            return False
        self.left -= len(url)
        return True

    @staticmethod
    def note(url: str) -> str:
        return f"(an image of {len(url):,} bytes, left out: over the export's image budget)"


def one_line(text: str, limit: int = SUMMARY_CHARS) -> str:
    lines = text.strip().splitlines() or [""]
    line, cut = lines[0], len(lines) > 1
    if len(line) > limit:
        line, cut = line[: limit - 1], True
    return line + " …" if cut else line


def summary(call: ToolBlock) -> str:
    """One line that says what a call did, hidden characters written out."""
    return one_line(visible(_summary(call)))


def _summary(call: ToolBlock) -> str:
    for text in (command(call), python(call)):
        if text is not None:
            return text
    patched = patch(call)
    if patched is not None:
        found = re.findall(r"^\*\*\* (Add|Update|Delete) File: (.+)$", patched, re.MULTILINE)
        return ", ".join(f"{verb} {path.strip()}" for verb, path in found) or "patch"
    args = parse_arguments(call.arguments)
    if args is None:
        return call.arguments
    key = PATH_ARGS.get(call.tool_name)
    if key and isinstance(args.get(key), str):
        return str(args[key])
    return json.dumps(args, ensure_ascii=False)


def call_facts(call: ToolBlock) -> list[str]:
    """Status, exit code, who decided, how long: the facts a call's line lists."""
    status = recorded_status(call)
    facts = [STATUS_WORDS.get(status, status)] if status else []
    code = recorded_output(call)[1]
    if code is not None:
        facts.append(f"exit code {code}")
    if call.decision is not None:
        by = decided_by(call) or "user"
        facts.append(DECISIONS.get((call.decision.value, by), f"{call.decision.value} ({by})"))
    if call.output is None and status is None:
        facts.append("no output recorded")
    if call.duration_s is not None:
        facts.append(f"{call.duration_s:.2f} s")
    return facts


def call_line(call: ToolBlock) -> str:
    return " · ".join([f"**{call.tool_name}** {inline_code(summary(call))}", *call_facts(call)])


def output_block(call: ToolBlock) -> str:
    text = recorded_output(call)[0]
    if call.output is None or not text:  # an exit code alone is on the call's line
        return ""
    n = len(text.splitlines())
    size = f"{n} line{'' if n == 1 else 's'}"
    body = fence(clip(text), "text")
    return f"<details><summary>Output ({size})</summary>\n\n{body}\n\n</details>"


def images_markdown(call: ToolBlock, budget: ImageBudget) -> list[str]:
    return [
        f"![output image {n}]({url})" if budget.take(url) else f"*{budget.note(url)}*"
        for n, url in enumerate(call.images, 1)
    ]


def tool_markdown(call: ToolBlock, budget: ImageBudget) -> str:
    """A call as markdown: its line, what it ran, its output (collapsed), its images."""
    parts = [call_line(call)]
    if (ran := command(call)) is not None:
        parts.append(fence(f"$ {visible(ran)}", "console"))
    elif (patched := patch(call)) is not None:
        parts.append(fence(visible(patched.rstrip("\n")), "diff"))
    elif (code := python(call)) is not None:
        parts.append(fence(visible(code.rstrip("\n")), "python"))
    parts.append(output_block(call))
    parts.extend(images_markdown(call, budget))
    parts.extend(agent_markdown(run, budget) for run in call.agents)
    return "\n\n".join(p for p in parts if p)


def agent_markdown(run: AgentRun, budget: ImageBudget) -> str:
    """A sub-agent the call spawned: its header, then what it did, quoted."""
    parts = [f"**Sub-agent** {inline_code(visible(agent_header(run)))}"]
    if (ending := ending_text(run)) is not None:
        parts.append(inline_code(visible(ending)))
    for entry in run.transcript.blocks:
        if isinstance(entry, ToolBlock):
            parts.append(tool_markdown(entry, budget))
        elif isinstance(entry, TextBlock | NoticeBlock):
            parts.append(text_markdown(entry))
    return quote("\n\n".join(p for p in parts if p))


def usage_line(usage: dict[str, int] | Usage | None) -> str | None:
    if isinstance(usage, Usage):
        usage = asdict(usage)
    if not usage or not usage.get("total_tokens"):
        return None
    shown = [f"{usage[key]:,} {word}" for key, word in USAGE_KEYS if usage.get(key)]
    return "Tokens: " + " · ".join(shown)


def diff_markdown(turn: Transcript) -> str:
    """The files the turn changed, one collapsed diff each, and any undo of them."""
    files = turn_diff(turn)
    parts = ["**Files changed in this turn**"] if files else []
    for f in files:
        title = f"{f.status}: {inline_code(visible(f.path))}"
        body = fence(clip(visible(f.diff.rstrip("\n"))), "diff") if f.diff else ""
        parts.append(f"<details><summary>{title}</summary>\n\n{body}\n\n</details>")
    if turn.undone or turn.undone_cells:
        said = [", ".join(inline_code(p) for p in turn.undone)] if turn.undone else []
        if turn.undone_cells:
            cells = ", ".join(inline_code(visible(c)) for c in turn.undone_cells)
            said.append(f"in the open notebook {cells}")
        parts.append(f"*The changes of this turn were undone: {'; '.join(said)}.*")
    return "\n\n".join(parts)


def turn_end_line(turn: Transcript) -> str:
    parts = []
    status = ended_status(turn)
    if status and status != "done":
        parts.append(f"**Turn {status}**" + (f": {turn.message}" if turn.message else ""))
    elif turn.message:
        parts.append(f"**{turn.message}**")
    if (usage := usage_line(turn.usage)) is not None:
        parts.append(f"*{usage}*")
    return "\n\n".join(parts)


def header_lines(doc: SessionDoc) -> list[str]:
    lines = [f"# Agent session {inline_code(doc.id)}", ""]
    rows = [
        ("Started", doc.started),
        ("Last resumed", doc.resumed),
        ("Model", doc.model),
        ("Folder", doc.cwd),
    ]
    for name, value in rows:
        if value:
            lines.append(f"- {name}: {inline_code(value)}")
    lines.append(f"- Turns: {len(doc.turns)}")
    if doc.damaged:
        lines += ["", f"**The session file is damaged: {doc.damaged}; this is what it holds.**"]
    if doc.skipped:
        lines += ["", f"*{doc.skipped} records of an unknown kind were left out.*"]
    if doc.note:
        lines += ["", f"*{doc.note}*"]
    return lines


def text_markdown(entry: TextBlock | NoticeBlock) -> str:
    if isinstance(entry, TextBlock):
        return entry.text.strip()
    if entry.kind == "item":
        return f"*(a {inline_code(entry.text)} item, not shown)*"
    if isinstance(entry, CompactionBlock):
        return compaction_markdown(entry)
    body = fence(clip(entry.text), "text")
    return f"<details><summary>{notice_title(entry)}</summary>\n\n{body}\n\n</details>"


def turn_markdown(turn: Transcript, budget: ImageBudget) -> str:
    when = f" · {turn.started}" if turn.started else ""
    prompt = quote(turn.prompt) if turn.prompt is not None else "*(prompt not recorded)*"
    parts = [f"## Turn {turn.number}{when}", prompt]
    for entry in turn.blocks:
        if isinstance(entry, ToolBlock):
            parts.append(tool_markdown(entry, budget))
        elif isinstance(entry, TextBlock | NoticeBlock):
            parts.append(text_markdown(entry))
    parts += [diff_markdown(turn), turn_end_line(turn)]
    return "\n\n".join(p for p in parts if p)


def to_markdown(doc: SessionDoc) -> str:
    budget = ImageBudget()
    parts = ["\n".join(header_lines(doc))]
    parts.extend(turn_markdown(turn, budget) for turn in doc.turns)
    if (total := usage_line(doc.usage())) is not None:
        parts.append(f"---\n\n*Session total: {total}*")
    return "\n\n".join(parts) + "\n"
