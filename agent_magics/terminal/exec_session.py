"""How ``agent-magics exec`` (and ``exec review``) starts its session: the settings from
the options, the config files and the site policy, the project config settled, a saved
session resumed when asked, the recorder and the terminal console."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_magics.errors import PROGRAM, UserError, for_person
from agent_magics.trust import TRUST_COMMAND, project_config, trust_project, user_config_file

if TYPE_CHECKING:
    from agent_magics.agent.session import Session
    from agent_magics.config import SessionConfig
    from agent_magics.store.recorder import SessionRecorder
    from agent_magics.teaching.policy import CoursePolicy
    from agent_magics.terminal.console import TerminalConsole
    from agent_magics.tools.handlers.toolset import ExtraTools
    from agent_magics.tools.registry import ToolHandler


async def settle_trust(folder: Path, interactive: bool) -> None:
    """Ask whether to trust the folder's untrusted project config (a terminal), or say in
    one line that it is ignored (no terminal); :func:`load_config` then takes it or not."""
    from agent_magics.terminal.console import read_answer

    project = project_config(folder)
    if project is None or project.trusted:
        return
    if interactive and project.problem is None:
        question = project.question(user_config_file())
        if await asyncio.to_thread(read_answer, question) == "y":
            trust_project(project)
            return
    how = f"{TRUST_COMMAND} {project.folder}"
    print(for_person(project.ignored_line(how), PROGRAM), file=sys.stderr)


async def start_exec(
    args: argparse.Namespace, review: bool = False
) -> tuple[Session, SessionRecorder | None, TerminalConsole]:
    """The settings, the session (resumed when asked; ``review``: a reviewer, see
    :mod:`agent_magics.agent.review`), its recorder and its console."""
    from agent_magics.agent.providers import resolve_provider
    from agent_magics.agent.session import Session
    from agent_magics.config import load_config
    from agent_magics.store.paths import sessions_folder
    from agent_magics.store.recorder import saved_session
    from agent_magics.teaching.bounds import bind, summary
    from agent_magics.teaching.sources import site_policy
    from agent_magics.terminal.console import TerminalConsole
    from agent_magics.tools.sandbox.jupyter import runtime_secrets

    options: dict[str, Any] = {
        "base_url": args.base_url,
        "model": args.model,
        "provider": args.provider,
        "approval_policy": args.approval_policy,
        "sandbox_mode": args.sandbox,
        "web_search": args.web_search,
        "cwd": str(args.cd.resolve()) if args.cd else os.getcwd(),
        "record_path": str(args.record.resolve()) if args.record else None,
    }
    interactive = sys.stdin.isatty() and prompt_from_args(args)
    await settle_trust(Path(options["cwd"]), interactive)
    config = load_config(options=options, overrides=args.config)
    folder = sessions_folder(config)
    resume = None
    if args.resume:
        if folder is None:
            raise UserError("Sessions are not saved here (sessions_dir), so none can resume.")
        from agent_magics.store.recorder import restored_fields
        from agent_magics.store.resume import load_resume  # only when resuming

        resume = load_resume(folder, args.resume, in_force=restored_fields(config))
        for note in resume.notes:
            print(for_person(note, PROGRAM), file=sys.stderr)
        given = {k: v for k, v in options.items() if v is not None and (k != "cwd" or args.cd)}
        config = load_config(options=resume.settings | given, overrides=args.config)
    policy = site_policy()  # an administrator's; a command runs in no notebook
    config = bind(policy, config)
    config = config.model_copy(update={"approver": "terminal" if interactive else "deny"})
    if (line := summary(policy)) is not None:
        print(for_person(line, PROGRAM), file=sys.stderr)
    resolve_provider(config)  # with no model configured, say so before a session starts
    console = TerminalConsole(interactive=interactive)
    if review:
        from agent_magics.agent.review import reviewer

        session = reviewer(config, policy.offers, runtime_secrets)
    else:
        session = Session(
            config,
            approver=console.approve,
            extra_tools=graded_notebook_tools(config, policy),
            offers=policy.offers,
            secrets=runtime_secrets,  # Jupyter's runtime folder, where a server may run
        )
    recorder = saved_session(
        session, folder, resume, say=lambda text: print(for_person(text, PROGRAM), file=sys.stderr)
    )
    if recorder is not None:
        print(f"session: {recorder.id}", file=sys.stderr)
    session.subscribe(console.report)
    return session, recorder, console


def prompt_from_args(args: argparse.Namespace) -> bool:
    return bool(args.prompt) and args.prompt != "-"


def graded_notebook_tools(config: SessionConfig, policy: CoursePolicy) -> ExtraTools | None:
    """The notebook tools a command asked for (``experimental_supported_tools``), held to
    the site policy's ``solution_cells`` as the kernel's are; ``None``: the plain ones do
    (they never touch a locked cell either)."""
    wanted = config.experimental_supported_tools
    if policy.solution_cells == "edit" or not {"read_notebook", "edit_notebook"} & set(wanted):
        return None
    from agent_magics.tools.handlers.edit_notebook import EditNotebookHandler
    from agent_magics.tools.handlers.read_notebook import ReadNotebookHandler

    def solution_cells() -> str:
        return policy.solution_cells

    handlers: list[ToolHandler] = [
        ReadNotebookHandler(None, solution_cells),
        EditNotebookHandler(None, solution_cells),
    ]
    tools = [h for h in handlers if h.name in wanted]
    return lambda: tools
