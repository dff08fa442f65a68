"""An in-process IPython shell with the extension loaded: the kernel-less ``%%agent`` the
tests drive with ``run_cell`` (output on stdout, read with capsys)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from IPython.core.interactiveshell import InteractiveShell


@contextmanager
def loaded_shell() -> Iterator[Any]:
    """The process's shell, its history emptied (cells of earlier tests would reach the
    first turn), ``agent_magics`` loaded, and unloaded after (with the stand-in kernel a
    test may have set)."""
    shell: Any = InteractiveShell.instance()
    shell.history_manager.reset()
    shell.execution_count = 1
    shell.run_cell("%load_ext agent_magics")
    try:
        yield shell
    finally:
        shell.run_cell("%unload_ext agent_magics")
        if hasattr(shell, "kernel"):
            del shell.kernel
