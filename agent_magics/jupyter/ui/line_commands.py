"""The ``%agent`` line commands of one :class:`~agent_magics.jupyter.magics.AgentMagics`."""

from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from IPython.core.error import UsageError

from agent_magics.agent.session import Session
from agent_magics.errors import UserError, for_person
from agent_magics.events import Usage
from agent_magics.jupyter.kernel.functions import functions_text, tool_command
from agent_magics.jupyter.ui import info, mcp_command
from agent_magics.jupyter.ui.runner import can_block
from agent_magics.store.agent_records import tree_records
from agent_magics.teaching.bounds import summary
from agent_magics.transcript.history import history_text

if TYPE_CHECKING:
    from agent_magics.jupyter.ui.magics_state import MagicsState

COMMANDS = (
    "reset",
    "compact",
    "status",
    "tools",
    "tool",
    "history",
    "context",
    "mcp",
    "cancel",
    "sessions",
    "resume",
    "trust",
    "recording",
    "export",
    "undo",
    "review",
    "help",
)


class LineCommands:
    """``%agent WORD ...``: one method per word, reading and changing the magics' state."""

    def __init__(self, magics: MagicsState) -> None:
        self.m = magics

    def run(self, line: str) -> None:
        word, _, rest = line.strip().partition(" ")
        word = word or "help"
        if word not in COMMANDS:
            raise UsageError(f"Unknown %agent command {word!r}; try: {', '.join(COMMANDS)}.")
        if word == "mcp":
            self._cmd_mcp(rest)
            return
        if word == "undo":
            self._cmd_undo(rest)
            return
        if word == "tool":
            print(tool_command(getattr(self.m.shell, "user_ns", {}), rest))
            return
        if word in ("sessions", "resume"):
            self._cmd_saved(word, rest.strip())
            return
        if word == "export":
            self._cmd_export(rest)
            return
        if word == "history":
            self._cmd_history(rest)
            return
        if word == "compact":
            self._cmd_compact(rest.strip())
            return
        if word == "review":
            self._cmd_review(rest)
            return
        if word == "recording":
            self._cmd_recording(rest.strip())
            return
        if rest.strip():  # the others take none: said, rather than run as if not given
            print(info.no_arguments_text(word, rest.strip()), file=sys.stderr)
            return
        getattr(self, f"_cmd_{word}")()

    def _cmd_help(self) -> None:
        print(self.m.agent_cell.__doc__)

    def _cmd_trust(self) -> None:
        config = self.m.current_config()
        if config is not None:
            print(self.m.trust.trust_here(config.cwd))

    def _cmd_reset(self) -> None:
        self.m.agent.new_conversation()
        print(for_person("the conversation was reset."))

    def _cmd_compact(self, words: str) -> None:
        session = self.m.session
        if session is None or not session.history:
            print(for_person("there is no conversation to compact yet."), file=sys.stderr)
        elif self.m.agent.busy:
            print(for_person("a turn is running; compact once it has ended."), file=sys.stderr)
        else:
            self.m.agent.compact(session, words)

    def _cmd_review(self, rest: str) -> None:
        from agent_magics.jupyter.ui.review_command import review_command

        try:
            review_command(self.m, rest)
        except UserError as exc:
            print(for_person(exc), file=sys.stderr)

    def _cmd_undo(self, rest: str) -> None:
        from agent_magics.jupyter.ui.undo_command import undo_command

        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        undo_command(self.m.agent, rest, loop, ask=not self.m.headless_now())

    def _cmd_recording(self, rest: str) -> None:
        if rest:
            self.m.recording = str(Path(rest).expanduser().resolve())
        config = self.m.current_config()
        if config is not None:
            print(info.recording_text(config, rest or self.m.recording))

    def _cmd_cancel(self) -> None:
        stopped = self.m.agent.cancel()
        print(for_person("the turn was stopped.") if stopped else for_person("no turn is running."))

    def _cmd_status(self) -> None:
        config = self.m.current_config()
        if config is None:
            return
        usage = self.m.session.usage if self.m.session is not None else Usage()
        busy = self.m.agent.busy
        turn = f"running ({busy} in progress or queued)" if busy else "idle"
        if self.m.headless_now():
            mode = "headless (each turn runs to its end in its cell)"
        elif self.m.background:
            mode = "background (the cell returns at once; AgentMagics.background is set)"
        elif can_block(getattr(self.m.shell, "kernel", None)):
            mode = "wait (the cell stays busy until the turn ends; --background to not)"
        else:
            mode = "background (the cell returns at once: this kernel gives a busy cell no clicks)"
        print(info.status_text(config, usage, turn, mode))
        if self.m.session is not None:
            print(f"context:         {info.context_line(self.m.session.context)}")
        if (policy := summary(self.m.policy.seen)) is not None:
            print(f"policy:          {policy}")
        found = self.m.found_notebook
        if found is not None and found.path is not None:
            print(f"notebook:        {found.path} ({found.told_by})")
        if (pin := self.m.policy.pin()) is not None:
            print(f"policy pin:      {pin} ({info.PIN_NOTE})")

    def _cmd_tools(self) -> None:
        if self.m.session is not None:
            if not self.m.agent.busy:
                self.m.session.refresh_tools()  # as the next turn offers them
            config = self.m.session.config
            print(info.tools_text(self.m.session.registry.wire_specs(), config.provider))
        else:
            current = self.m.current_config()
            if current is None:
                return
            config = current
            offers = self.m.policy.seen.offers
            session = Session(config, extra_tools=self.m.kernel_tools, offers=offers)
            print(info.tools_text(session.registry.wire_specs(), config.provider))
        if config.provider == "chat" and config.web_search != "disabled":
            print(info.NO_WEB_SEARCH_ON_CHAT)
        if functions_text():
            print(f"\n{functions_text()}")

    def _cmd_mcp(self, rest: str) -> None:
        try:
            words = shlex.split(rest)
        except ValueError as exc:
            raise UsageError(f"%agent mcp: {exc}.") from None
        sub = words[0] if words else "list"
        if sub == "help":
            print(mcp_command.__doc__)
        elif sub == "list":
            self._mcp_list()
        elif sub not in mcp_command.SUBCOMMANDS:
            known = ", ".join(mcp_command.SUBCOMMANDS)
            raise UsageError(f"Unknown %agent mcp command {sub!r}; try: {known}.")
        elif len(words) < 2:
            raise UsageError(f"%agent mcp {sub} needs a server name.")
        else:
            try:
                self._mcp_change(sub, words[1:])
            except UserError as exc:
                print(for_person(exc), file=sys.stderr)

    def _mcp_list(self) -> None:
        if self.m.session is not None:
            print(mcp_command.list_text(self.m.session.mcp_statuses()))
            return
        config = self.m.current_config()
        if config is not None:
            print(mcp_command.configured_text(config.mcp_servers))

    def _mcp_change(self, sub: str, words: list[str]) -> None:
        change = self.m.sticky.change_mcp(sub, words)
        session = self.m.session
        if session is None:
            print(for_person(f"{change.done}; it starts with the next turn."))
            return
        session.reconfigure(change.config)  # a new engine waits for the next turn
        mcp_command.apply_change(self.m.agent, session, change.restart, change.done)

    def _cmd_context(self) -> None:
        config = self.m.current_config()
        if config is not None:
            new = self.m.session is None or not self.m.session.history
            print(
                self.m.notebook.peek(config.cwd, new)
                or for_person("nothing new to tell the model.")
            )

    def _cmd_export(self, rest: str) -> None:
        from agent_magics.transcript.export import export_session

        config = self.m.current_config()
        if config is None:
            return
        try:
            print(export_session(shlex.split(rest), config, self.m.session))
        except (UserError, ValueError) as exc:
            print(for_person(exc), file=sys.stderr)

    def _cmd_saved(self, word: str, ref: str) -> None:
        config = self.m.current_config()
        if config is None:
            return
        if word == "sessions":
            print(self.m.agent.files.table(config))
            return
        try:
            current = self.m.session.thread_id if self.m.session is not None else None
            settings, notes = self.m.agent.files.resume(config, ref, current)
        except UserError as exc:
            print(for_person(exc), file=sys.stderr)
            return
        self.m.agent.end_session()  # keeps the resume waiting for the next cell
        self.m.sticky.resumed(settings)  # the cell's own options still win
        print("\n".join(for_person(note) for note in notes))

    def _cmd_history(self, rest: str) -> None:
        if rest.strip() not in ("", "--raw"):
            raise UsageError("usage: %agent history [--raw]")
        session = self.m.session
        items = [i.wire() for i in session.history] if session is not None else []
        agents = tree_records(session.agents) if session is not None else []
        redact = session.redact.text if session is not None else str
        print(history_text(items, agents=agents, raw=rest.strip() == "--raw", redact=redact))
