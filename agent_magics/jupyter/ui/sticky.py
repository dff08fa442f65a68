"""The settings a notebook's cells carry forward: what one ``%%agent`` line chose holds for
the cells after it, until a later line, a resume or ``%agent mcp`` changes it. ``--new``
changes none of them: it starts a new conversation with the settings in force.

One object owns them, so the cell magic and the line commands ask it instead of reading
and writing each other's fields. It holds plain values (options by ``SessionConfig``
field name, and ``-c key=value`` overrides); ``build`` turns them into settings with
everything else that applies (traits, env, files), so a bad value is reported when it
is given, and kept only if it builds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_magics.config import SessionConfig
    from agent_magics.jupyter.ui.mcp_command import Change

Build = Callable[[dict[str, Any], list[str]], "SessionConfig"]


@dataclass
class StickySettings:
    build: Build
    """The settings for given options and overrides (the magic's traits and the
    recording it plays count too)."""
    options: dict[str, Any] = field(default_factory=dict)
    overrides: list[str] = field(default_factory=list)
    _pending: tuple[dict[str, Any], list[str]] = field(default_factory=lambda: ({}, []))

    def config(self) -> SessionConfig:
        """The settings the next cell starts from."""
        return self.build(self.options, self.overrides)

    def for_cell(
        self, given: dict[str, Any], overrides: list[str]
    ) -> tuple[SessionConfig, Callable[[], SessionConfig]]:
        """The settings of a cell whose line gave ``given`` (``None`` values left out) and
        ``-c`` ``overrides``, on top of those in force, and how to build them again (a
        trust answer may change the files they read). Kept for later cells only once
        :meth:`keep` is called: a cell whose settings a policy refuses changes nothing."""
        options = dict(self.options) | {k: v for k, v in given.items() if v is not None}
        kept = [*self.overrides, *overrides]
        self._pending = (options, kept)
        return self.build(options, kept), lambda: self.build(options, kept)

    def keep(self) -> None:
        """The last :meth:`for_cell` settings hold for the cells after it."""
        self.options, self.overrides = self._pending

    def resumed(self, settings: dict[str, Any]) -> None:
        """A resumed session's settings replace the options (overrides stay: they are the
        person's ``-c`` choices in this kernel)."""
        self.options = dict(settings)

    def change_mcp(self, sub: str, words: list[str]) -> Change:
        """``%agent mcp add|remove|restart``: the servers change for every later cell."""
        from agent_magics.jupyter.ui.mcp_command import plan_change

        change = plan_change(sub, words, self.options, self.overrides, self.build)
        self.options, self.overrides = change.sticky, change.overrides
        return change
