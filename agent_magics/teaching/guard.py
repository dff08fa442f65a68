"""The policy a kernel is held to: the strictest of everything it has read.

The notebook a kernel runs is read-only to the agent's commands and patches, but what
the person runs or approves outside the sandbox can still rewrite it, metadata
included. So the policy is read again at each turn and merged into what was seen
before, never replacing it: a turn can make the next one stricter, never looser. And
the first policy read from a notebook is pinned outside the working folder
(:mod:`.pins`), so a new kernel is held to it as well.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from agent_magics.teaching.bounds import bind
from agent_magics.teaching.pins import holding, pin_file, pins_folder
from agent_magics.teaching.policy import CoursePolicy, merge
from agent_magics.teaching.sources import SITE_FILES, notebook_policy, site_policy

if TYPE_CHECKING:
    from agent_magics.config import SessionConfig


class PolicyGuard:
    """Reads the site files, the open notebook (``notebook`` says where it is, or None)
    and its pin (in ``pins``, by default the person's ``~/.agent_magics/policies``), and
    keeps the strictest policy seen."""

    def __init__(
        self,
        notebook: Callable[[], Path | None] = lambda: None,
        site_files: Sequence[Path] = SITE_FILES,
        pins: Path | None = None,
    ) -> None:
        self._notebook = notebook
        self._site_files = tuple(site_files)
        self._pins = pins_folder() if pins is None else pins
        self._path: Path | None = None
        self.seen = CoursePolicy()
        self.read()

    @property
    def path(self) -> Path | None:
        """The notebook the policy is read from (fixed once found)."""
        return self._path

    def pin(self) -> Path | None:
        """The file of the notebook's pin, when there is one."""
        found = pin_file(self._path, self._pins) if self._path is not None else None
        return found if found is not None and found.exists() else None

    def read(self) -> CoursePolicy:
        """The policy now: what the sources say merged into what was seen before."""
        if self._path is None:  # the first place found stays: a cell may not move it
            self._path = self._notebook()
        notebook = notebook_policy(self._path)
        pinned = holding(self._path, notebook, self._pins)
        now = merge(site_policy(self._site_files), notebook, pinned)
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
