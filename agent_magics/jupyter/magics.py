"""The ``%%agent`` cell magic and the ``%agent`` line magic (load with ``%load_ext``).

``%load_ext`` runs in every kernel that loads the extension, so this module imports only
what registering the magics needs: the settings, the session, the widgets and the tools
load with the first ``%%agent`` or ``%agent`` (see ``tests/project/test_layering.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
from collections.abc import Callable
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from traitlets import Bool, Enum, List, Unicode

from agent_magics.errors import UserError, for_person
from agent_magics.jupyter.kernel.cell_log import CellLog
from agent_magics.jupyter.ui.cell_inputs import (
    SETTINGS_ASK,
    bound_settings,
    cell_keys,
    cell_options,
    cell_prompt,
    failed,
)
from agent_magics.jupyter.ui.manual import CELL_MANUAL, LINE_MANUAL, manual, plain_manual
from agent_magics.jupyter.ui.sticky import StickySettings
from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode
from agent_magics.tools.config import WEB_SEARCH_MODES

if TYPE_CHECKING:
    from agent_magics.agent.session import Session
    from agent_magics.config import SessionConfig
    from agent_magics.jupyter.kernel.notebook_context import NotebookContext
    from agent_magics.jupyter.kernel.own_notebook import OwnNotebook
    from agent_magics.jupyter.kernel.tools import KernelTools
    from agent_magics.jupyter.kernel.withheld_cells import KernelWithheld
    from agent_magics.jupyter.ui.approver import HeadlessMode
    from agent_magics.jupyter.ui.controller import Controller
    from agent_magics.jupyter.ui.line_commands import LineCommands
    from agent_magics.jupyter.ui.runner import TurnView

    Started = tuple[asyncio.Task[str | None] | None, TurnView]
    from agent_magics.jupyter.ui.trust_question import ProjectTrust
    from agent_magics.jupyter.ui.waiting import BackgroundNote
    from agent_magics.teaching.guard import PolicyGuard

CELL_LINE = re.compile(r"^%%agent(\s|$)")
"""Who chose settings a teacher's policy refuses, when it was not the cell's options."""
FROM_CODE = (
    "run_cell_magic('agent', ...) called from code cannot wait for its turn here, so the "
    "turn would go on after the cell; use answer = await agent_magics.ask_async(prompt), "
    "which waits and returns the answer (or pass --background to let it run on its own)."
)
NO_CLICKS = (
    "This kernel gives a busy cell no clicks, so this call answers approvals as a headless "
    "run does (ipykernel 7.4 or newer takes clicks while it waits)."
)
PROVIDERS = ["auto", "responses", "chat", "replay"]
"""``SessionConfig.provider``'s values, written out so that ``%load_ext`` need not build
the settings model (a test checks that the two agree)."""


@magics_class
class AgentMagics(Magics):
    """``%%agent``: a coding agent in the cell. Settings: ``%config AgentMagics``."""

    model = Unicode(None, allow_none=True, help="Model name.").tag(config=True)
    base_url = Unicode(None, allow_none=True, help="Model server URL (.../v1).").tag(config=True)
    provider = Unicode(None, allow_none=True, help="responses, chat or replay.").tag(config=True)
    approval_policy = Unicode(
        None, allow_none=True, help="untrusted, on-failure, on-request or never."
    ).tag(config=True)
    sandbox = Unicode(
        None, allow_none=True, help="read-only, workspace-write or danger-full-access."
    ).tag(config=True)
    overrides = List(Unicode(), help="key=value settings, as -c, for every session.").tag(
        config=True
    )
    background = Bool(
        False,
        help="Let %%agent cells return at once while their turns go on (Run All does not "
        "wait); they always do on ipykernel < 7.4, where a busy cell gets no clicks.",
    ).tag(config=True)
    headless = Enum(
        ["auto", "always", "never"],
        "auto",
        help="Headless mode: auto = when the run cannot take input (nbclient, papermill).",
    ).tag(config=True)
    headless_approval = Enum(
        ["deny", "approve"],
        None,
        allow_none=True,
        help="What a headless run answers when a call needs approval (default: deny).",
    ).tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.cell_log = CellLog(shell)  # records cells from now on, for the first turn
        self.sticky = StickySettings(self.build_config)
        self.recording: str | None = None  # %agent recording: played when no model is set
        self.found_notebook: OwnNotebook | None = None  # the policy's notebook, who named it

    # The parts a turn needs, built when the first %%agent or %agent uses them.

    @cached_property
    def kernel_tools(self) -> KernelTools:
        from agent_magics.jupyter.kernel.tools import KernelTools

        return KernelTools(self.shell, self.withheld, lambda: self.policy.path)

    @cached_property
    def withheld(self) -> KernelWithheld:
        """The graded answers the teacher's policy withholds, masked in every output."""
        from agent_magics.jupyter.kernel.withheld_cells import KernelWithheld

        return KernelWithheld(self.shell, self.cell_log, lambda: self.policy.seen.solution_cells)

    @cached_property
    def notebook(self) -> NotebookContext:
        from agent_magics.jupyter.kernel.withheld_cells import GradedNotebookContext

        return GradedNotebookContext(self.cell_log, self.withheld)

    @cached_property
    def agent(self) -> Controller:
        from agent_magics.jupyter.kernel.jupyter_secrets import register
        from agent_magics.jupyter.ui.controller import Controller
        from agent_magics.tools.notebook.files import notebook_files

        register(self.shell)  # the kernel's signing key: scrubbed, its file hidden
        kernel = getattr(self.shell, "kernel", None)
        tools = self.kernel_tools if self.shell is not None else None  # none in a plain script
        controller = Controller(kernel, tools=tools, context=self.notebook.take)
        controller.offers = lambda name: self.policy.seen.offers(name)
        controller.kept = lambda: notebook_files(self.policy.path)  # its policy, its notes
        return controller

    @cached_property
    def policy(self) -> PolicyGuard:
        """The teacher's policy this kernel is held to: read first here (the first
        ``%%agent`` or ``%agent``), again at every turn, and never loosened; the notebook
        it is read from is the one the server lists for this kernel (:mod:`.own_notebook`)."""
        from agent_magics.teaching.guard import PolicyGuard

        return PolicyGuard(self._own_notebook)

    def _own_notebook(self) -> Path | None:
        from agent_magics.jupyter.kernel.own_notebook import own_notebook

        self.found_notebook = own_notebook(self.shell)
        return self.found_notebook.path

    @cached_property
    def trust(self) -> ProjectTrust:
        from agent_magics.jupyter.ui.trust_question import ProjectTrust

        return ProjectTrust()

    @cached_property
    def background_note(self) -> BackgroundNote:
        from agent_magics.jupyter.ui.waiting import BackgroundNote

        return BackgroundNote()

    @property
    def _kernel(self) -> Any:
        return getattr(self.shell, "kernel", None)

    @cached_property
    def commands(self) -> LineCommands:
        from agent_magics.jupyter.ui.line_commands import LineCommands

        return LineCommands(self)

    def kill_processes(self) -> None:
        """Kill the processes the turns started (at exit); none if no turn ran."""
        if "agent" in self.__dict__:
            self.agent.kill_processes()

    @property
    def session(self) -> Session | None:
        return self.agent.session if "agent" in self.__dict__ else None

    # -- settings --------------------------------------------------------------------------

    def _trait_options(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "base_url": self.base_url,
            "provider": self.provider,
            "approval_policy": self.approval_policy,
            "sandbox_mode": self.sandbox,
        }

    def build_config(self, sticky: dict[str, Any], overrides: list[str]) -> SessionConfig:
        from agent_magics.agent.providers import named_for_its_recording
        from agent_magics.config import load_config

        options = {k: v for k, v in self._trait_options().items() if v} | sticky
        if self.recording is not None:
            options["offline_recording"] = self.recording
        config = load_config(options=options, overrides=[*self.overrides, *overrides])
        return named_for_its_recording(config)

    def _configure(
        self, args: argparse.Namespace
    ) -> tuple[SessionConfig, Callable[[], SessionConfig]] | None:
        """The cell's settings and how to build them again, or None when they are bad
        (said in the cell, or raised when the cell waits for its turn)."""
        try:
            config, rebuild = self.sticky.for_cell(cell_options(args), args.config)
            self.policy.bind(config, SETTINGS_ASK, cell_keys(args))  # before a card shows
        except UserError as exc:
            if args._awaited:  # the cell fails, so a headless run or Run All stops here
                raise failed(str(exc)) from None
            print(for_person(exc), file=sys.stderr)
            return None
        if args.new:
            self.agent.new_conversation()
        self.sticky.keep()
        return config, rebuild

    def headless_now(self) -> bool:
        if self.headless != "auto":
            return bool(self.headless == "always")
        from agent_magics.jupyter.ui.headless import request_allows_stdin

        return request_allows_stdin(self.shell) is False

    def headless_mode(self) -> HeadlessMode:
        mode = self.headless_approval or os.environ.get("AGENT_MAGICS_HEADLESS_APPROVAL") or "deny"
        return "approve" if mode == "approve" else "deny"

    # -- the cell magic --------------------------------------------------------------------

    @plain_manual
    @magic_arguments(name="%agent")  # IPython puts a % before it: the usage reads %%agent
    @argument("-m", "--model", help="model name")
    @argument("--base-url", help="model server URL, e.g. http://127.0.0.1:8000/v1")
    @argument("--provider", choices=PROVIDERS, help="wire protocol")
    @argument("-a", "--approval-policy", choices=[p.value for p in ApprovalPolicy])
    @argument("-s", "--sandbox", choices=[s.value for s in SandboxMode])
    @argument("--web-search", choices=WEB_SEARCH_MODES, help="the server's web search tool")
    @argument("-C", "--cd", help="work in this folder")
    @argument(
        "-c",
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a setting (VALUE read as TOML); repeatable",
    )
    @argument(
        "--new",
        action="store_true",
        help="start a new conversation (a new session; the options in force stay)",
    )
    @argument(
        "--background",
        action="store_true",
        help="return at once, the turn going on (Run All does not wait for it)",
    )
    @argument("--block", action="store_true", help="wait for the turn (the default where it can)")
    @argument(
        "-f",
        "--format",
        action="store_true",
        help="fill {name} in the prompt with the notebook's variable name ({{ and }}: braces)",
    )
    @argument("--_awaited", action="store_true", help=argparse.SUPPRESS)
    @cell_magic("agent")  # type: ignore[arg-type]  # IPython types the marker loosely
    @manual(CELL_MANUAL)
    def agent_cell(self, line: str, cell: str) -> Any:
        args = parse_argstring(self.agent_cell, line)
        if args.block and args.background:
            print(
                for_person("--block and --background contradict each other; give one."),
                file=sys.stderr,
            )
            return None
        started = self.start(args, cell)
        task = started[0] if started is not None else None
        return self.agent.wait(task, not self.headless_now()) if args._awaited else None

    def parse(self, line: str) -> argparse.Namespace:
        """The options of a ``%%agent`` line (IPython's ``UsageError`` when bad)."""
        args: argparse.Namespace = parse_argstring(self.agent_cell, line)
        return args

    def start(self, args: argparse.Namespace, cell: str, clicks: bool = True) -> Started | None:
        """Start the cell's turn: its task and its view (no task: the turn ran already,
        in terminal IPython), or None when it cannot start (said in the cell, or raised
        when the cell waits). ``clicks`` false: nobody can click (a call of
        :func:`agent_magics.ask_async` on a kernel that gives a busy cell no clicks), so
        approvals are answered as in a headless run."""
        prompt = cell_prompt(args, cell, getattr(self.shell, "user_ns", None) or {})
        if prompt is None:
            return None
        configured = self._configure(args)
        if configured is None:
            return None
        config, rebuild = configured
        headless = self.headless_mode() if self.headless_now() or not clicks else None
        project = self.trust.pending(config.cwd)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            from agent_magics.jupyter.ui.terminal import run_in_terminal

            if project is not None:
                config = self.trust.settle_in_terminal(project, headless is not None, rebuild)
            config = self.policy.bind(config, SETTINGS_ASK, cell_keys(args))
            config = config.model_copy(update={"approver": headless or "terminal"})
            return None, run_in_terminal(self.agent, config, prompt, headless, self.shell)
        if not args._awaited and self.waits(args):
            from IPython.core.error import UsageError

            raise UsageError(FROM_CODE)
        source, note = self.trust.settle_in_cell(
            project, headless is not None, loop, config, rebuild
        )
        view, approver = self.agent.make_view(loop, headless, awaited=args._awaited)
        if note is not None:
            view.note(note)
        if not clicks and not self.headless_now():
            view.note(NO_CLICKS)
        if not args._awaited and (
            said := self.background_note.take(self._kernel, args, self.background)
        ):
            view.note(said)  # a headless cell that does not wait stopped above (FROM_CODE)
        bound = bound_settings(self.policy, source, cell_keys(args), view, headless or "notebook")
        return self.agent.schedule(loop, bound, prompt, view, approver, not args._awaited), view

    def waits(self, args: argparse.Namespace) -> bool:
        """Whether the cell waits for its turn: in headless runs, and on ipykernel >= 7.4
        unless it asks for the background (see :mod:`.ui.waiting`)."""
        from agent_magics.jupyter.ui.runner import can_block
        from agent_magics.jupyter.ui.waiting import in_background

        if self.headless_now():
            return True
        return not in_background(args, self.background) and can_block(self._kernel)

    # -- the input transformer (awaited cells) ---------------------------------------------

    def transform(self, lines: list[str]) -> list[str]:
        """Rewrite a ``%%agent`` cell into an awaited call, so that it stays busy until
        its turn ends and Run All waits: in headless runs, and on ipykernel >= 7.4 unless
        the cell asks for the background (older kernels give a busy cell no clicks)."""
        if not lines or not CELL_LINE.match(lines[0]):
            return lines
        line = lines[0].rstrip("\n")[len("%%agent") :].strip()
        if self._kernel is None:
            return lines
        from agent_magics.jupyter.ui.waiting import awaited_call

        try:
            args = parse_argstring(self.agent_cell, line)
        except Exception:
            return lines  # the magic itself reports the error
        if args.block and args.background:
            return lines  # the magic itself reports the contradiction
        return awaited_call(line, lines[1:]) if self.waits(args) else lines

    # -- the line magic --------------------------------------------------------------------

    @line_magic("agent")  # type: ignore[arg-type]
    @manual(LINE_MANUAL)
    def agent_line(self, line: str) -> None:
        self.commands.run(line)

    def current_config(self) -> SessionConfig | None:
        """The settings of the session, or those the next cell would start with."""
        if self.session is not None:
            return self.session.config
        from agent_magics.teaching.bounds import PolicyRefused

        try:
            config = self.sticky.config()
        except UserError as exc:
            print(for_person(exc), file=sys.stderr)
            return None
        try:
            return self.policy.bind(config)
        except PolicyRefused:  # shown as it is: %agent status says the policy beside it
            return config
