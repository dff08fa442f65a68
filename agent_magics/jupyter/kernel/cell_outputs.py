"""What a cell run by the agent printed and displayed, as the notebook's own outputs.

The entries of :mod:`.capture` (in the order they happened) become nbformat outputs, as
ipykernel would have sent them to the cell: consecutive writes to one stream are one
``stream`` output, the last expression's value an ``execute_result`` with the cell's
execution count, every ``display()`` a ``display_data``; a display updated by its
``display_id`` (``handle.update(...)``, ``display(..., update=True)``) changes the output
it first made; an error ends the list as an ``error`` output with its traceback.
"""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from typing import Any

Output = dict[str, Any]


def notebook_outputs(
    entries: Sequence[dict[str, Any]],
    count: int | None,
    error: BaseException | None = None,
    hidden_files: Sequence[str] = (),
) -> list[Output]:
    """The outputs the cell gets for ``entries`` (and ``error``, if the run failed)."""
    outputs: list[Output] = []
    shown: dict[str, int] = {}  # display_id: where its output is
    for entry in list(entries):  # the running code may append meanwhile
        if "stream" in entry:
            name, text = entry["stream"], str(entry.get("text", ""))
            last = outputs[-1] if outputs else {}
            if last.get("output_type") == "stream" and last["name"] == name:
                last["text"] += text
                continue
            outputs.append({"output_type": "stream", "name": name, "text": text})
            continue
        data, metadata = dict(entry.get("data") or {}), dict(entry.get("metadata") or {})
        if entry.get("result"):
            outputs.append(
                {
                    "output_type": "execute_result",
                    "execution_count": count,
                    "data": data,
                    "metadata": metadata,
                }
            )
            continue
        display_id = (entry.get("transient") or {}).get("display_id")
        made = {"output_type": "display_data", "data": data, "metadata": metadata}
        if display_id is not None and display_id in shown:
            if entry.get("update"):
                outputs[shown[display_id]] = made
                continue
        elif entry.get("update"):
            continue  # an update of a display made elsewhere: nothing of this cell
        if display_id is not None:
            shown[display_id] = len(outputs)
        outputs.append(made)
    if error is not None:
        outputs.append(error_output(error, hidden_files))
    return outputs


def error_output(error: BaseException, hidden_files: Sequence[str] = ()) -> Output:
    """An ``error`` output: the exception's name, value and traceback, with the frames of
    the shell's and our own machinery left out."""
    frames = [
        frame
        for frame in traceback.extract_tb(error.__traceback__)
        if not any(frame.filename == hidden for hidden in hidden_files)
    ]
    lines = ["Traceback (most recent call last):\n", *traceback.format_list(frames)]
    lines += traceback.format_exception_only(type(error), error)
    return {
        "output_type": "error",
        "ename": type(error).__name__,
        "evalue": str(error),
        "traceback": [line.rstrip("\n") for line in lines],
    }
