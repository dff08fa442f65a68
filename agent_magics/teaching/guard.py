"""The policy a kernel is held to: the strictest of everything it has read.

A turn can rewrite the notebook it runs in (apply_patch, a shell command,
edit_notebook), metadata included. So the policy is read again at each turn and
merged into what was seen before, never replacing it: a turn can make the next one
stricter, never looser. Only a new kernel starts afresh, as a teacher's notebook
opened anew does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agent_magics.teaching.bounds import bind
from agent_magics.teaching.policy import CoursePolicy, merge
from agent_magics.teaching.sources import SITE_FILES, notebook_policy, site_policy

if TYPE_CHECKING:
    from agent_magics.config import SessionConfig


class PolicyGuard:
    """Reads the site files and the open notebook (``notebook`` says where it is, or
    None) and keeps the strictest policy seen."""

    def __init__(
        self,
        notebook: Callable[[], Path | None] = lambda: None,
        site_files: Sequence[Path] = SITE_FILES,
    ) -> None:
        self._notebook = notebook
        self._site_files = tuple(site_files)
        self._path: Path | None = None
        self.seen = CoursePolicy()
        self.read()

    def read(self) -> CoursePolicy:
        """The policy now: what the sources say merged into what was seen before."""
        if self._path is None:  # the first place found stays: a cell may not move it
            self._path = self._notebook()
        now = merge(site_policy(self._site_files), notebook_policy(self._path))
        self.seen = merge(self.seen, now)
        return self.seen

    def bind(
        self,
        config: SessionConfig,
        asks: str = "these settings ask",
        cell: frozenset[str] = frozenset(),
    ) -> SessionConfig:
        """``config`` held to the policy read now (see :func:`.bounds.bind`)."""
        return bind(self.read(), config, asks, cell)
