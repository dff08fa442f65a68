"""The ``%%agent`` cell magic and the ``%agent`` line magic (load with ``%load_ext``)."""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import sys
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display
from traitlets import Bool, Enum, List, Unicode

from agent_magics.config import SessionConfig, load_config
from agent_magics.errors import UserError
from agent_magics.events import Usage
from agent_magics.session import Session
from agent_magics.tools.approval import ApprovalPolicy, Approver, SandboxMode
from agent_magics.ui import info
from agent_magics.ui.approver import HEADLESS_NOTES, WidgetApprover, headless_approver
from agent_magics.ui.headless import StaticTranscript, request_allows_stdin
from agent_magics.ui.runner import (
    SigintGuard,
    TurnView,
    can_block,
    ipykernel_version,
    kill_tool_processes,
    run_turn,
)
from agent_magics.ui.terminal import run_in_terminal
from agent_magics.ui.throttle import loop_scheduler
from agent_magics.ui.widgets import TranscriptView

CELL_LINE = re.compile(r"^%%agent(\s|$)")
ENGINE_FIELDS = {"base_url", "provider", "request_max_retries", "stream_idle_timeout_s"}
COMMANDS = ("reset", "status", "tools", "history", "cancel", "help")
NEW_ENGINE = "The model server or the tools changed; the conversation goes on with them."


def _same_engine(a: SessionConfig, b: SessionConfig) -> bool:
    """Whether ``b`` can take over a session built for ``a`` (same client, same tools)."""
    same = a.model_dump(include=ENGINE_FIELDS) == b.model_dump(include=ENGINE_FIELDS)
    return same and a.key() == b.key() and a.tools_config() == b.tools_config()


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
    block = Bool(False, help="Keep the cell busy until the turn ends (ipykernel >= 7.4 only).").tag(
        config=True
    )
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
        self.session: Session | None = None
        self._sticky: dict[str, Any] = {}
        self._sticky_overrides: list[str] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._guard: SigintGuard | None = None
        self._own_loop: asyncio.AbstractEventLoop | None = None
        self._closing: set[asyncio.Task[None]] = set()

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
        options = {k: v for k, v in self._trait_options().items() if v} | sticky
        return load_config(options=options, overrides=[*self.overrides, *overrides])

    def _configure(self, args: argparse.Namespace) -> SessionConfig | None:
        sticky = {} if args.new else dict(self._sticky)
        overrides = [] if args.new else list(self._sticky_overrides)
        given = {
            "model": args.model,
            "base_url": args.base_url,
            "provider": args.provider,
            "approval_policy": args.approval_policy,
            "sandbox_mode": args.sandbox,
            "cwd": str(Path(args.cd).expanduser().resolve()) if args.cd else None,
        }
        sticky |= {k: v for k, v in given.items() if v is not None}
        overrides += args.config
        try:
            config = self.build_config(sticky, overrides)
        except UserError as exc:
            print(f"agent: {exc}", file=sys.stderr)
            return None
        if args.new:
            self._end_session()
        self._sticky, self._sticky_overrides = sticky, overrides
        return config

    def _headless_now(self) -> bool:
        if self.headless != "auto":
            return bool(self.headless == "always")
        return request_allows_stdin(self.shell) is False

    def _headless_mode(self) -> str:
        mode = self.headless_approval or os.environ.get("AGENT_MAGICS_HEADLESS_APPROVAL") or "deny"
        return mode if mode in HEADLESS_NOTES else "deny"

    # -- sessions --------------------------------------------------------------------------

    def _session_for(self, config: SessionConfig, view: TurnView) -> Session:
        old = self.session
        if old is not None and old.config == config:
            return old
        if old is not None and _same_engine(old.config, config):
            old.config = config
            return old
        session = Session(config)
        if old is not None:
            session.history, session.usage = old.history, old.usage
            view.note(NEW_ENGINE)
            self._close(old)
        self.session = session
        return session

    def _close(self, session: Session) -> None:
        kill_tool_processes(session.services)
        try:
            task = asyncio.get_running_loop().create_task(session.aclose())
        except RuntimeError:
            return
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    def _end_session(self) -> None:
        self.cancel()
        if self.session is not None:
            self._close(self.session)
        self.session = None

    def interrupt(self) -> None:
        """The kernel's stop button reached the idle kernel."""
        self.cancel()

    def cancel(self) -> bool:
        """Stop the running and queued turns and kill their tool processes."""
        busy = [t for t in self._tasks if not t.done()]
        for task in busy:
            task.cancel()
        if self.session is not None:
            kill_tool_processes(self.session.services)
        return bool(busy)

    # -- the cell magic --------------------------------------------------------------------

    @magic_arguments()
    @argument("-m", "--model", help="model name")
    @argument("--base-url", help="model server URL, e.g. http://127.0.0.1:8000/v1")
    @argument("--provider", choices=["responses", "chat", "replay"], help="wire protocol")
    @argument("-a", "--approval-policy", choices=[p.value for p in ApprovalPolicy])
    @argument("-s", "--sandbox", choices=[s.value for s in SandboxMode])
    @argument("-C", "--cd", help="work in this folder")
    @argument(
        "-c",
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a setting (VALUE read as TOML); repeatable",
    )
    @argument("--new", action="store_true", help="start a fresh session (forget options too)")
    @argument("--block", action="store_true", help="keep the cell busy (ipykernel >= 7.4)")
    @argument("--_awaited", action="store_true", help=argparse.SUPPRESS)
    @cell_magic("agent")  # type: ignore[arg-type]  # IPython types the marker loosely
    def agent_cell(self, line: str, cell: str) -> Any:
        """Ask the coding agent: the cell's text is the prompt.

        The agent works in the notebook's folder with the tools of the Codex CLI
        (shell commands, apply_patch, update_plan, view_image...). Consecutive
        ``%%agent`` cells continue one conversation. Each tool call shows as a card;
        calls that need approval wait for Approve, Approve for session, Deny or Abort
        turn. The cell returns at once and the turn goes on in the background;
        ``--block`` (or ``%config AgentMagics.block = True``) keeps the cell busy
        until the turn ends, on ipykernel 7.4 and newer.

        Options stick: they apply to this cell and the following ones, until
        ``--new`` (a fresh conversation, options forgotten).

        Settings, lowest priority first: ``~/.agent_magics/config.toml``,
        ``./.agent_magics/config.toml``, environment variables (``OPENAI_API_KEY``,
        ``OPENAI_BASE_URL``, ``AGENT_MAGICS_MODEL``, ``AGENT_MAGICS_PROVIDER``,
        ``AGENT_MAGICS_APPROVAL_POLICY``, ``AGENT_MAGICS_SANDBOX``), traitlets
        (``%config AgentMagics.model = "..."`` or ``c.AgentMagics.model`` in
        ipython_config.py; ``%config AgentMagics`` lists them), then the options of
        the cell and ``-c key=value``.

        Headless runs (nbclient, papermill, ``jupyter nbconvert --execute``) are
        detected and run each turn to its end inside the cell; what needs approval
        is denied unless ``AgentMagics.headless_approval = "approve"`` (or
        ``AGENT_MAGICS_HEADLESS_APPROVAL=approve``); the cell keeps a markdown
        transcript that reads well in a saved notebook.

        The kernel's stop button stops a running turn and kills the commands it
        started. ``%agent`` commands: reset, status, tools, history, cancel, help.

        Example::

            %%agent -a on-request -s workspace-write
            Find the slowest test in tests/ and explain why it is slow.
        """
        args = parse_argstring(self.agent_cell, line)
        awaited = args._awaited
        task = self._start(args, cell)
        if awaited:
            return self._wait(task)
        return None

    def _start(self, args: argparse.Namespace, cell: str) -> asyncio.Task[None] | None:
        prompt = cell.strip()
        if not prompt:
            print("agent: the cell is empty; write the prompt below the %%agent line.")
            return None
        config = self._configure(args)
        if config is None:
            return None
        headless = self._headless_now()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            run_in_terminal(self, config, prompt, headless)
            return None
        view, approver = self._make_view(loop, headless)
        if not args._awaited:
            if headless:
                view.note("Headless, but this cell could not wait: the turn runs on its own.")
            elif args.block or self.block:
                version = ".".join(map(str, ipykernel_version() or ())) or "unknown"
                view.note(f"--block needs ipykernel 7.4 or newer (found {version}).")
        return self._schedule(loop, config, prompt, view, approver, background=not args._awaited)

    def _make_view(
        self, loop: asyncio.AbstractEventLoop, headless: bool
    ) -> tuple[TurnView, Approver]:
        if headless:
            mode = self._headless_mode()
            note = HEADLESS_NOTES[mode]
            view = StaticTranscript(
                lambda md: display(md, display_id=True), loop_scheduler(loop), policy_note=note
            )
            return view, headless_approver(mode)  # type: ignore[arg-type]
        approver = WidgetApprover(loop)
        widget_view = TranscriptView(loop_scheduler(loop), approver.decide)
        display(widget_view.root)
        return widget_view, approver

    def run_session_turn(
        self, config: SessionConfig, prompt: str, view: TurnView, approver: Approver
    ) -> Any:
        """The coroutine of one turn: pick the session, listen, run."""

        async def start() -> None:
            session = self._session_for(config, view)
            unsubscribe = session.subscribe(view)
            session.approver = approver
            try:
                await session.run_turn(prompt)
            finally:
                unsubscribe()
                if isinstance(approver, WidgetApprover):
                    approver.cancel_all()

        def stop() -> None:
            if self.session is not None:
                kill_tool_processes(self.session.services)

        return start, stop

    def _schedule(
        self,
        loop: asyncio.AbstractEventLoop,
        config: SessionConfig,
        prompt: str,
        view: TurnView,
        approver: Approver,
        background: bool,
    ) -> asyncio.Task[None]:
        start, stop = self.run_session_turn(config, prompt, view, approver)
        previous = next((t for t in reversed(self._tasks) if not t.done()), None)
        if previous is not None:
            view.mark_queued()
        task = loop.create_task(run_turn(start, view, stop, after=previous))
        self._tasks.append(task)
        task.add_done_callback(self._turn_done)
        if background:
            if self._guard is None:
                kernel = getattr(self.shell, "kernel", None)
                self._guard = SigintGuard(kernel, loop, self.interrupt)
            self._guard.activate()
        return task

    def _turn_done(self, task: asyncio.Task[None]) -> None:
        if task in self._tasks:
            self._tasks.remove(task)
        if not task.cancelled():
            task.exception()  # retrieved: run_turn already showed it
        if not self._tasks and self._guard is not None:
            self._guard.deactivate()

    async def _wait(self, task: asyncio.Task[None] | None) -> None:
        """The awaited form: the cell stays busy until the turn ends; an interrupt of the
        cell stops the turn and ends the cell quietly (the transcript says so)."""
        if task is None:
            return
        try:
            await task
        except asyncio.CancelledError:
            task.cancel()
            await asyncio.wait([task])

    # -- the input transformer (awaited cells) ---------------------------------------------

    def transform(self, lines: list[str]) -> list[str]:
        """Rewrite a ``%%agent`` cell into an awaited call when it must stay busy: in
        headless runs, and with ``--block`` on ipykernel >= 7.4."""
        if not lines or not CELL_LINE.match(lines[0]):
            return lines
        line = lines[0].rstrip("\n")[len("%%agent") :].strip()
        kernel = getattr(self.shell, "kernel", None)
        if kernel is None:
            return lines
        try:
            args = parse_argstring(self.agent_cell, line)
        except Exception:
            return lines  # the magic itself reports the error
        if not (self._headless_now() or ((args.block or self.block) and can_block(kernel))):
            return lines
        body = "".join(lines[1:])
        magic_line = f"--_awaited {line}".strip()
        return [f"await get_ipython().run_cell_magic('agent', {magic_line!r}, {body!r})\n"]

    # -- the line magic --------------------------------------------------------------------

    @line_magic("agent")  # type: ignore[arg-type]
    def agent_line(self, line: str) -> None:
        """%agent reset | status | tools | history | cancel | help

        reset    forget the conversation and stop its tool processes (options stay)
        status   model, approval policy, sandbox, folder, tokens used, turn state
        tools    the tools the model is offered
        history  the conversation so far, one line per item
        cancel   stop the running turn (and any queued ones)
        help     the manual of %%agent
        """
        word = line.strip().split(" ", 1)[0] or "help"
        if word not in COMMANDS:
            raise UsageError(f"Unknown %agent command {word!r}; try: {', '.join(COMMANDS)}.")
        getattr(self, f"_cmd_{word}")()

    def _cmd_help(self) -> None:
        print(self.agent_cell.__doc__)

    def _cmd_reset(self) -> None:
        self._end_session()
        print("agent: the conversation was reset.")

    def _cmd_cancel(self) -> None:
        print("agent: the turn was stopped." if self.cancel() else "agent: no turn is running.")

    def _current_config(self) -> SessionConfig | None:
        if self.session is not None:
            return self.session.config
        try:
            return self.build_config(self._sticky, self._sticky_overrides)
        except UserError as exc:
            print(f"agent: {exc}", file=sys.stderr)
            return None

    def _cmd_status(self) -> None:
        config = self._current_config()
        if config is None:
            return
        usage = self.session.usage if self.session is not None else Usage()
        busy = sum(not t.done() for t in self._tasks)
        turn = f"running ({busy} in progress or queued)" if busy else "idle"
        if self._headless_now():
            mode = "headless (each turn runs to its end in its cell)"
        elif self.block and can_block(getattr(self.shell, "kernel", None)):
            mode = "block (the cell stays busy until the turn ends)"
        else:
            mode = "background (the cell returns at once)"
        print(info.status_text(config, usage, turn, mode))

    def _cmd_tools(self) -> None:
        if self.session is not None:
            print(info.tools_text(self.session.registry.wire_specs()))
            return
        config = self._current_config()
        if config is not None:
            print(info.tools_text(Session(config).registry.wire_specs()))

    def _cmd_history(self) -> None:
        items = [i.wire() for i in self.session.history] if self.session is not None else []
        print(info.history_text(items))

    # -- lifecycle -------------------------------------------------------------------------

    def own_loop(self) -> asyncio.AbstractEventLoop:
        """The loop of terminal IPython (no kernel loop): one for the whole session."""
        if self._own_loop is None or self._own_loop.is_closed():
            self._own_loop = asyncio.new_event_loop()
        return self._own_loop

    def shutdown(self) -> None:
        self._end_session()
        if self._guard is not None:
            self._guard.deactivate()


_LOADED: dict[int, AgentMagics] = {}


def load(ip: Any) -> AgentMagics:
    """Register the magics and the cell transformer on ``ip`` (``%load_ext``)."""
    if id(ip) in _LOADED:
        return _LOADED[id(ip)]
    magics = _LOADED[id(ip)] = AgentMagics(ip)
    ip.register_magics(magics)
    ip.input_transformers_cleanup.append(magics.transform)
    return magics


def unload(ip: Any) -> None:
    """Stop the turns, kill their processes and remove the magics (``%unload_ext``)."""
    magics = _LOADED.pop(id(ip), None)
    if magics is None:
        return
    magics.shutdown()
    if magics.transform in ip.input_transformers_cleanup:
        ip.input_transformers_cleanup.remove(magics.transform)
    manager = ip.magics_manager
    for kind, name in (("line", "agent"), ("cell", "agent")):
        manager.magics[kind].pop(name, None)
    manager.registry.pop(type(magics).__name__, None)
    if magics in getattr(ip, "configurables", []):
        ip.configurables.remove(magics)
