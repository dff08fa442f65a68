"""Recorded model sessions shipped with the package, played back when no model is set.

``demo.jsonl`` answers one prompt, :data:`DEMO_PROMPT`, in a folder holding the files
of :data:`DEMO_FILES` (write them with :func:`write_demo_files`): the model plans,
reads the code, patches a bug, runs the test and answers. The tools run for real
during playback; only the model's side is recorded. Regenerate it with
``python -m agent_magics.recordings.record_demo``.
"""

from __future__ import annotations

from pathlib import Path

from agent_magics.terminal.demo import SAMPLE

DEMO_PROMPT = "mean() gives wrong results; fix it."
DEMO_FILES: dict[str, str] = dict(SAMPLE)


def write_demo_files(folder: Path) -> None:
    """Write the demo's sample project into ``folder``."""
    for name, text in DEMO_FILES.items():
        (folder / name).write_text(text, encoding="utf-8")


__all__ = ["DEMO_FILES", "DEMO_PROMPT", "write_demo_files"]
