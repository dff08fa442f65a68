"""A session as a notebook (nbformat 4), valid by nbformat's validator.

Markdown cells carry the prompts, answers and a one-line account of each tool call;
code cells carry what ran: a command, a patch, run_python code, with the output kept
(trimmed) as a stream output and images as ``display_data``. Nothing is marked as
executed (``execution_count`` stays empty) and the notebook names no kernel: it is a
record of what the agent did, not a script to run again. Each code cell's
``metadata.agent_magics`` says which tool ran it, how it ended and who approved it. A
cell's source is what ran with its hidden characters written out
(:func:`~agent_magics.text.visible.visible`): an editor that opens it shows what ran.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from agent_magics.text.visible import visible
from agent_magics.transcript.document import (
    SessionDoc,
    command,
    decided_by,
    patch,
    python,
    recorded_output,
    recorded_status,
)
from agent_magics.transcript.export_md import (
    ImageBudget,
    call_line,
    clip,
    diff_markdown,
    header_lines,
    quote,
    text_markdown,
    tool_markdown,
    turn_end_line,
    usage_line,
)
from agent_magics.transcript.model import NoticeBlock, TextBlock, ToolBlock, Transcript

IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif", "image/webp")


def _markdown(nbf: Any, text: str) -> Any:
    return nbf.new_markdown_cell(text)


def _image_output(nbf: Any, url: str) -> Any | None:
    head, _, payload = url.partition(",")
    mime = head.removeprefix("data:").removesuffix(";base64")
    if mime not in IMAGE_MIMES or not head.endswith(";base64"):
        return None
    return nbf.new_output("display_data", data={mime: payload, "text/plain": "<image>"})


def _code_cell(nbf: Any, call: ToolBlock, source: str, language: str, budget: ImageBudget) -> Any:
    text, exit_code = recorded_output(call)
    meta = {
        "tool": call.tool_name,
        "language": language,
        "call_id": call.call_id,
        "status": recorded_status(call),
        "decision": call.decision.value if call.decision is not None else None,
        "decided_by": decided_by(call),
        "duration_s": call.duration_s,
        "exit_code": exit_code,
    }
    cell = nbf.new_code_cell(
        visible(source), metadata={"agent_magics": {k: v for k, v in meta.items() if v is not None}}
    )
    if call.output is not None and text:
        cell.outputs.append(nbf.new_output("stream", name="stdout", text=clip(text) + "\n"))
    for url in call.images:
        output = _image_output(nbf, url) if budget.take(url) else None
        if output is not None:
            cell.outputs.append(output)
        else:
            note = budget.note(url)
            cell.outputs.append(nbf.new_output("stream", name="stdout", text=note + "\n"))
    return cell


def _call_cells(nbf: Any, call: ToolBlock, budget: ImageBudget) -> list[Any]:
    for language, source in (
        ("shell", command(call)),
        ("apply_patch", patch(call)),
        ("python", python(call)),
    ):
        if source is not None:
            return [
                _markdown(nbf, call_line(call)),
                _code_cell(nbf, call, source, language, budget),
            ]
    return [_markdown(nbf, tool_markdown(call, budget))]


def _turn_cells(nbf: Any, turn: Transcript, budget: ImageBudget) -> list[Any]:
    when = f" · {turn.started}" if turn.started else ""
    prompt = quote(turn.prompt) if turn.prompt is not None else "*(prompt not recorded)*"
    cells = [_markdown(nbf, f"## Turn {turn.number}{when}\n\n{prompt}")]
    for entry in turn.blocks:
        if isinstance(entry, ToolBlock):
            cells.extend(_call_cells(nbf, entry, budget))
        elif isinstance(entry, NoticeBlock) and entry.kind == "item":
            cells.append(_markdown(nbf, f"*(a `{entry.text}` item, not shown)*"))
        elif isinstance(entry, TextBlock | NoticeBlock):
            cells.append(_markdown(nbf, text_markdown(entry)))
    tail = [diff_markdown(turn), turn_end_line(turn)]
    if any(tail):
        cells.append(_markdown(nbf, "\n\n".join(t for t in tail if t)))
    return cells


def to_notebook(doc: SessionDoc) -> Any:
    """The session as an ``nbformat.NotebookNode`` (validated)."""
    nbformat: Any = import_module("nbformat")  # imported by an export, not at load
    nbf: Any = import_module("nbformat.v4")
    budget = ImageBudget()
    cells = [_markdown(nbf, "\n".join(header_lines(doc)))]
    for turn in doc.turns:
        cells.extend(_turn_cells(nbf, turn, budget))
    if (total := usage_line(doc.usage())) is not None:
        cells.append(_markdown(nbf, f"---\n\n*Session total: {total}*"))
    nb = nbf.new_notebook(cells=cells)
    nb.metadata["agent_magics"] = {"session_id": doc.id, "exported": True}
    nbformat.validate(nb)
    return nb


def notebook_text(doc: SessionDoc) -> str:
    nbformat: Any = import_module("nbformat")
    return str(nbformat.writes(to_notebook(doc))) + "\n"
