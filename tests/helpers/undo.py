"""A turn whose changes are undone, as the store's and the kernel's undo tests run it: the
files it starts from, the patch that changes them, and what the model reads after undo."""

from __future__ import annotations

from pathlib import Path

PATCH = """\
*** Begin Patch
*** Update File: keep.py
@@
 a = 1
-b = 2
+b = 3
*** Add File: new.txt
+hello
*** Delete File: gone.txt
*** End Patch
"""
REVERTED = (
    "The user reverted the changes of your last turn to: cmd.txt, gone.txt, keep.py, new.txt."
)
"""What the model reads after undo, when :data:`PATCH` and an append to ``cmd.txt`` ran."""


def write_start_files(ws: Path) -> None:
    """The files :data:`PATCH` changes (``keep.py`` executable) and ``cmd.txt``, which
    the turn's command appends to."""
    (ws / "keep.py").write_text("a = 1\nb = 2\n")
    (ws / "keep.py").chmod(0o755)
    (ws / "gone.txt").write_text("bye\n")
    (ws / "cmd.txt").write_text("one\n")
