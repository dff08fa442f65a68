"""The static transcript as markdown: readable in a saved notebook without widget state.

Pure functions, like :mod:`.render`, whose summaries and output clipping they reuse. A
call's command, code, patch or proposed cell goes through
:func:`~agent_magics.text.visible.visible`, as on the cards.
"""

from __future__ import annotations

from agent_magics.events import PlanUpdated
from agent_magics.text.markdown import fence, inline_code
from agent_magics.text.visible import visible
from agent_magics.transcript.agent_text import agent_header, ending_text
from agent_magics.transcript.calls import (
    STATUS_LABELS,
    call_summary,
    clip_output,
    command_text,
    decision_text,
    notebook_edit,
    output_title,
    patch_text,
    python_code,
    shown_output,
    turn_status_text,
    usage_text,
)
from agent_magics.transcript.card_text import took_text
from agent_magics.transcript.denials import denial_summary, denied_block, note_for
from agent_magics.transcript.figures import figure_words
from agent_magics.transcript.goal_text import goal_markdown
from agent_magics.transcript.model import (
    AgentRun,
    Block,
    CompactionBlock,
    DiffBlock,
    TextBlock,
    ToolBlock,
    Transcript,
)
from agent_magics.transcript.terminal import call_workdir
from agent_magics.transcript.turn_diff import turn_diff_markdown


def plan_markdown(plan: PlanUpdated) -> str:
    lines = [f"*{plan.explanation}*"] if plan.explanation else []
    for step in plan.plan:
        if step.status == "completed":
            lines.append(f"- [x] {step.step}")
        elif step.status == "in_progress":
            lines.append(f"- [ ] **{step.step}** (in progress)")
        else:
            lines.append(f"- [ ] {step.step}")
    return "\n".join(lines)


def tool_markdown(
    block: ToolBlock, policy_note: str | None = None, figures_apart: bool = False
) -> str:
    # run_python's code is shown in full below: its first line is not repeated here
    in_full = python_code(block.tool_name, block.arguments) is not None
    summary = None if in_full else call_summary(block.tool_name, block.arguments, block.kind)
    shown = f" {inline_code(summary)}" if summary else ""  # "": the call has no arguments
    decided, took = decision_text(block), took_text(block)
    took = f" ({took})" if took else ""
    head = f"**{block.label}**{shown} · {STATUS_LABELS[block.status]}{took}"
    parts = [head + (f" · {decided}" if decided else "")]
    command = command_text(block.tool_name, block.arguments)
    patch = patch_text(block.tool_name, block.arguments, block.kind)
    if command is not None:
        parts.append(fence(f"$ {visible(command)}", "console"))
        if (where := call_workdir(block.tool_name, block.arguments)) is not None:
            parts.append(f"in {inline_code(visible(where))}")
    elif patch is not None:
        parts.append(fence(visible(patch.rstrip("\n")), "diff"))
    elif (source := python_code(block.tool_name, block.arguments)) is not None:
        parts.append(fence(visible(source.rstrip("\n")), "python"))
    elif (cell := notebook_edit(block.tool_name, block.arguments, block.cell_place)) is not None:
        lang = {"code": "python", "markdown": "markdown"}.get(cell[1], "")
        where, source = visible(cell[0]), cell[2]
        parts.append(where + ("" if source is None else ":\n\n" + fence(visible(source), lang)))
    if block.plan is not None:
        parts.append(plan_markdown(block.plan))
    if block.goal is not None:
        parts.append(goal_markdown(block.goal))
    # an image is named, not embedded: the HTML or an output of its own keeps it once
    if block.image is not None and block.image.data_url:
        parts.append(f"*{figure_words(block.image.path, figures_apart)}*")
    if block.image is None:  # images a tool's output carries (a figure of run_python)
        n = len(block.images)
        parts.extend(
            f"*{figure_words(f'output image {i}', figures_apart)}*" for i in range(1, n + 1)
        )
    denied = denied_block(block)
    if denied and policy_note:
        parts.append(f"> {policy_note}")
    text, code = shown_output(block)
    # a denied call has no output but Codex's "rejected by user": said above in our words
    if (text or code is not None) and block.tool_name != "update_plan" and not denied:
        body = fence(clip_output(text), "text")
        title = output_title(text, code)
        parts.append(f"<details><summary>{title}</summary>\n\n{body}\n\n</details>")
    parts.extend(agent_markdown(run, figures_apart) for run in block.agents)
    return "\n\n".join(parts)


def agent_markdown(run: AgentRun, figures_apart: bool = False) -> str:
    """A sub-agent the call spawned: its header, then its own transcript, quoted."""
    parts = [f"**Sub-agent** {inline_code(visible(agent_header(run)))}"]
    if (ending := ending_text(run)) is not None:
        parts.append(inline_code(visible(ending)))
    parts.append(transcript_markdown(run.transcript, figures_apart))
    text = "\n\n".join(p for p in parts if p)
    return "\n".join(f"> {line}" if line else ">" for line in text.splitlines())


def compaction_markdown(block: CompactionBlock) -> str:
    """The compaction's line, and folded under it the kept messages and the summary."""
    kept = [fence(text, "text") for text in block.kept if text]
    summary = block.summary or "(the model server keeps its own summary)"
    body = "\n\n".join([*kept, fence(summary, "text")])
    folded = f"<details><summary>{block.folded_title}</summary>\n\n{body}\n\n</details>"
    return f"*{block.text}*\n\n{folded}"


def transcript_markdown(t: Transcript, figures_apart: bool = False) -> str:
    """The whole turn as markdown, readable in a saved notebook without widget state;
    its figures are named in words (``figures_apart``: they are outputs of their own)."""
    parts = [block_markdown(t, block, figures_apart) for block in t.blocks]
    return "\n\n".join(filter(None, [*parts, *tail_markdown(t)]))


def block_markdown(t: Transcript, block: Block, figures_apart: bool = False) -> str:
    """One block of the turn as markdown ("" for one that shows nothing)."""
    if isinstance(block, TextBlock):
        return block.text.strip()
    if isinstance(block, ToolBlock):
        return tool_markdown(block, note_for(t, block), figures_apart)
    if isinstance(block, DiffBlock):
        return turn_diff_markdown(block.files)
    if isinstance(block, CompactionBlock):
        return compaction_markdown(block)
    return f"*{block.text}*"


def tail_markdown(t: Transcript) -> list[str]:
    """What follows the blocks: how the turn ended, what was denied, the tokens."""
    parts: list[str] = []
    if t.status in ("failed", "aborted"):
        parts.append(f"**{turn_status_text(t)}**")
    elif t.status in ("starting", "queued", "running", "waiting"):
        parts.append(f"*{turn_status_text(t)}*")
    if (denied := denial_summary(t)) and t.status not in ("running", "waiting"):
        parts.append(f"*{denied}*")
    if t.usage is not None and t.status != "running":
        parts.append(f"*{usage_text(t.usage, t.context)}*")
    return parts
