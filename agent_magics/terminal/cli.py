"""``agent-magics exec``: one headless turn in a terminal or CI, the same session as %%agent.

The final answer goes to stdout; tool activity and problems go to stderr. Exit status:
0 when the turn finished, 1 with one sentence when a person must fix something, 75 when
the model server still failed after the retries, 130 when interrupted, 143 when
terminated (:mod:`.stopping`).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_magics.errors import ConnectionFailed, TurnAborted, UserError
from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode
from agent_magics.terminal.stopping import (
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    Terminated,
    until_terminated,
)
from agent_magics.tools.config import WEB_SEARCH_MODES
from agent_magics.trust import TRUST_COMMAND, project_config, trust_project, user_config_file

if TYPE_CHECKING:
    from agent_magics.agent.session import Session
    from agent_magics.config import SessionConfig
    from agent_magics.store.recorder import SessionRecorder
    from agent_magics.teaching.policy import CoursePolicy
    from agent_magics.terminal.console import TerminalConsole
    from agent_magics.tools.handlers.toolset import ExtraTools
    from agent_magics.tools.registry import ToolHandler

EXIT_OK, EXIT_USER_ERROR = 0, 1
EXIT_SERVER_FAILED = 75  # sysexits.h's EX_TEMPFAIL: failed for now, worth retrying later
STOPPED = "the turn stopped and was recorded as aborted, its commands killed."
EXEC_EPILOG = (
    "Exit status: 0 when the turn finished, also when calls were denied (the model was "
    "told and answered; a line on stderr counts the denied calls); 1 with one sentence when "
    "a person must fix something; 75 when the model server still failed after the "
    "retries (worth retrying later); 130 when interrupted or aborted, 143 when terminated "
    "(SIGTERM, as a cancelled CI job is), the turn recorded as aborted. With stdin not a "
    "terminal nobody can answer approval questions, so calls that need one are denied: "
    "pass -a never to run them without asking, inside the sandbox chosen with -s."
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="agent-magics", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ex = sub.add_parser(
        "exec", help="run one turn headlessly in the current folder", epilog=EXEC_EPILOG
    )
    ex.add_argument("--base-url", help="model server URL, e.g. http://127.0.0.1:8000/v1")
    ex.add_argument("-m", "--model", help="model name")
    ex.add_argument(
        "--provider",
        choices=["auto", "responses", "chat", "replay"],
        help="wire protocol; auto (the default) is the Responses API; replay plays the "
        "offline demo recording",
    )
    ex.add_argument(
        "--record", type=Path, metavar="PATH", help="record the session to PATH (JSONL)"
    )
    ex.add_argument("-a", "--approval-policy", choices=[p.value for p in ApprovalPolicy])
    ex.add_argument("-s", "--sandbox", choices=[s.value for s in SandboxMode])
    ex.add_argument(
        "--web-search", choices=WEB_SEARCH_MODES, help="the model server's web search tool"
    )
    ex.add_argument("-C", "--cd", type=Path, help="work in this folder")
    ex.add_argument(
        "-c",
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a setting (VALUE read as TOML, else as a string); repeatable",
    )
    ex.add_argument(
        "--resume",
        metavar="ID|last",
        help="continue a saved session (an id, its start, or last) with this prompt",
    )
    ex.add_argument(
        "--compact",
        action="store_true",
        help="compact the resumed session's conversation instead of running a turn; "
        "the prompt, if any, says what the summary must keep",
    )
    ex.add_argument("prompt", nargs="?", help="the prompt; read from stdin when absent or '-'")
    tr = sub.add_parser("trust", help="trust the project config (.agent_magics/config.toml)")
    tr.add_argument("folder", nargs="?", type=Path, default=Path(), help="default: here")
    sub.add_parser("demo", help="one offline turn: a scripted model drives the real tools")
    xp = sub.add_parser("export", help="write a saved session as .ipynb, .md or .html")
    xp.add_argument("session", metavar="ID|last", help="a session id, its start, or last")
    xp.add_argument("path", help="the document to write: its name ends in .ipynb, .md or .html")
    xp.add_argument("--force", action="store_true", help="replace the file if it exists")
    xp.add_argument("-C", "--cd", type=Path, help="the working folder whose sessions to read")
    return parser


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
    print(f"agent-magics: {project.ignored_line(how)}", file=sys.stderr)


def run_trust(folder: Path) -> int:
    project = project_config(folder)
    if project is None:
        print(f"agent-magics: {folder.resolve()} has no project config.", file=sys.stderr)
        return EXIT_USER_ERROR
    print("\n".join(project.lines()) or "(it sets nothing)")
    print(f"agent-magics: trusted {project.file} (kept in {trust_project(project)}).")
    return EXIT_OK


def run_export(args: argparse.Namespace) -> int:
    from agent_magics.config import load_config
    from agent_magics.transcript.export import export_session

    cwd = str(args.cd.resolve()) if args.cd else os.getcwd()
    words = [args.session, str(Path(args.path).resolve()), *(["--force"] if args.force else [])]
    try:
        print(export_session(words, load_config(options={"cwd": cwd}), None))
    except UserError as exc:
        print(f"agent-magics: {exc}", file=sys.stderr)
        return EXIT_USER_ERROR
    return EXIT_OK


async def run_exec(args: argparse.Namespace, prompt: str) -> int:
    from agent_magics.terminal.console import say

    session, recorder, console = await _start_exec(args)
    if args.compact:
        return await _compact(session, recorder, prompt)
    try:
        result = await session.run_turn(prompt)
    except UserError as exc:
        if recorder is not None:
            recorder.fail(str(exc))
        raise
    finally:
        await session.aclose()
        if recorder is not None:
            recorder.close()
    if result.final_text:
        say(session.redact.text(result.final_text), sys.stdout)
    if denied := console.summary():
        print(denied, file=sys.stderr)
    u = result.usage
    if u.total_tokens:
        print(
            f"tokens: {u.input_tokens} in ({u.cached_input_tokens} cached), "
            f"{u.output_tokens} out ({u.reasoning_output_tokens} reasoning), "
            f"{u.total_tokens} total",
            file=sys.stderr,
        )
    return EXIT_OK


async def _compact(session: Session, recorder: SessionRecorder | None, words: str) -> int:
    """``exec --resume ID --compact [WORDS]``: the summary on stdout, the line on stderr."""
    from agent_magics.terminal.console import say

    try:
        event = await session.compact(words)
    finally:
        await session.aclose()
        if recorder is not None:
            recorder.close()
    say(session.redact.text(event.summary or "(the server kept its own summary)"), sys.stdout)
    return EXIT_OK


async def _start_exec(
    args: argparse.Namespace,
) -> tuple[Session, SessionRecorder | None, TerminalConsole]:
    """The settings, the session (resumed when asked), its recorder and its console."""
    from agent_magics.agent.providers import resolve_provider
    from agent_magics.agent.session import Session
    from agent_magics.config import load_config
    from agent_magics.store.paths import sessions_folder
    from agent_magics.store.recorder import record_session
    from agent_magics.teaching.bounds import bind, summary
    from agent_magics.teaching.sources import site_policy
    from agent_magics.terminal.console import TerminalConsole

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
            print(f"agent-magics: {note}", file=sys.stderr)
        given = {k: v for k, v in options.items() if v is not None and (k != "cwd" or args.cd)}
        config = load_config(options=resume.settings | given, overrides=args.config)
    policy = site_policy()  # an administrator's; a command runs in no notebook
    config = bind(policy, config)
    if (line := summary(policy)) is not None:
        print(f"agent-magics: {line}", file=sys.stderr)
    resolve_provider(config)  # with no model configured, say so before a session starts
    console = TerminalConsole(interactive=interactive)
    session = Session(
        config,
        approver=console.approve,
        extra_tools=graded_notebook_tools(config, policy),
        offers=policy.offers,
    )
    if resume is not None:
        from agent_magics.store.resume import continue_in

        continue_in(session, resume)
    recorder = record_session(
        session,
        folder,
        turns=resume.turns if resume else 0,
        resumed=resume is not None,
        resume=resume is not None,
        say=lambda text: print(f"agent-magics: {text}", file=sys.stderr),
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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "demo":
        from agent_magics.terminal.demo import main as demo_main

        return demo_main()
    if args.command == "export":
        return run_export(args)
    if args.command == "trust":
        try:
            return run_trust(args.folder)
        except UserError as exc:
            print(f"agent-magics: {exc}", file=sys.stderr)
            return EXIT_USER_ERROR
    if args.compact and not args.resume:
        print("agent-magics: --compact needs --resume ID|last.", file=sys.stderr)
        return EXIT_USER_ERROR
    if args.compact:
        prompt = args.prompt or ""
    else:
        prompt = args.prompt if prompt_from_args(args) else sys.stdin.read()
    if not prompt.strip() and not args.compact:
        print("agent-magics: the prompt is empty.", file=sys.stderr)
        return EXIT_USER_ERROR
    from agent_magics.terminal.console import say

    try:
        return asyncio.run(until_terminated(run_exec(args, prompt)))
    except ConnectionFailed as exc:  # a job may retry these later
        say(f"agent-magics: {exc}")
        return EXIT_SERVER_FAILED
    except UserError as exc:
        say(f"agent-magics: {exc}")
        return EXIT_USER_ERROR
    except TurnAborted as exc:
        say(f"agent-magics: turn aborted: {exc}")
        return EXIT_INTERRUPTED
    except KeyboardInterrupt:
        print(f"agent-magics: interrupted; {STOPPED}", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Terminated:
        print(f"agent-magics: terminated (SIGTERM); {STOPPED}", file=sys.stderr)
        return EXIT_TERMINATED


if __name__ == "__main__":
    sys.exit(main())
