"""The manual of ``%%agent`` (what ``%%agent?`` and ``%agent help`` show), as plain text:
IPython's pager shows a docstring as it is written."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

CELL_MANUAL = """Ask the coding agent: the cell's text is the prompt.

The agent works in the notebook's folder with the tools of the Codex CLI (shell
commands, apply_patch, update_plan, view_image...). Consecutive %%agent cells continue
one conversation. Each tool call shows as a card; calls that need approval wait for
Approve, Approve for session, Deny or Abort turn. On ipykernel 7.4 and newer the cell
stays busy until its turn ends, so Run All and the next cell see what it did;
--background (or %config AgentMagics.background = True) makes it return at once while
the turn goes on. Older kernels give a busy cell no clicks: there every turn runs in the
background, and the first cell says so.

In a kernel the agent also has tools of its own:
  run_python        runs code in your namespace, like a cell, and sees what it prints,
                    its value, its error and its figures. It runs in your kernel, outside
                    the sandbox: it asks first unless the policy is never (-a never);
                    under -s read-only it never runs unasked (-a never refuses it).
                    The kernel's stop button interrupts it; so does its timeout.
  run_cell          runs a code cell of this notebook (or a new one it adds), as if you
                    ran it: with jupyter-collaboration its outputs and number land in
                    that cell of your open notebook as they come; it asks as run_python.
  list_variables,   your variables, frames (shape, dtypes, first rows), arrays and
  inspect_variable  functions; read-only, they never ask.
  read_notebook,    a notebook as numbered cells; edits go through nbformat, with
  edit_notebook     apply_patch's approval rules. The notebook this kernel runs in is
                    never written under its editor: with jupyter-collaboration in the
                    Jupyter server the cell goes into the document JupyterLab shows;
                    without it the card shows the proposed cell with a Copy button.
  your functions    @agent_magics.tool on a function, or %agent tool NAME, offers it to
                    the model (schema from its type hints, description from its
                    docstring). Each call asks unless approval="auto" or -a never
                    (under -s read-only only approval="auto" runs unasked).
Each turn is told which notebook this is and which cells ran since the last turn (their
code, outputs and errors, marked as data), so "fix the error above" works. After a turn,
_agent holds it as data: text, calls, files changed, usage, status.

Options stick: they apply to this cell and the following ones, until another cell
gives another value. --new starts a new conversation (a new session: its own thread and
file, no earlier messages, no "Approve for session" answers) with the options in force
and this cell's on top; %agent reset does the same for the next cell.

Settings, lowest priority first: ~/.agent_magics/config.toml, the folder's
.agent_magics/config.toml once you trust it (the cell asks; a changed file is asked
about again; %agent trust), environment variables (OPENAI_API_KEY, OPENAI_BASE_URL,
AGENT_MAGICS_MODEL, AGENT_MAGICS_PROVIDER, AGENT_MAGICS_APPROVAL_POLICY,
AGENT_MAGICS_SANDBOX), traitlets (%config AgentMagics.model = "..." or
c.AgentMagics.model in ipython_config.py; %config AgentMagics lists them), then the
options of the cell and -c key=value.

Headless runs (nbclient, papermill, jupyter nbconvert --execute) are detected and run
each turn to its end inside the cell; what needs approval is denied unless
AgentMagics.headless_approval = "approve" (or AGENT_MAGICS_HEADLESS_APPROVAL=approve);
the cell keeps a markdown transcript that reads well in a saved notebook.

Scripted notebooks: -f fills {name} in the prompt from the notebook's variables (a
papermill parameter, a loop's value); {{ and }} are literal braces, {n:.2f} and
{name!r} format as Python does. Only plain names: {obj.attr} and {d[key]} are refused,
so filling runs no attribute or item code; a name that is not defined stops the cell
before a turn starts. Without -f braces are text. From code,
answer = await agent_magics.ask_async(prompt, **options) runs a turn of this same
conversation with the options of a cell (model, base_url, approval_policy, sandbox, cd,
config=["key=value"], new), shows it in the calling cell, waits and returns the final
answer; a failed turn raises AgentTurnFailed. agent_magics.ask(prompt) blocks where no
event loop runs (a plain script, terminal IPython); a notebook cell must await.
get_ipython().run_cell_magic("agent", ...) from code cannot wait for its turn, and says
so where a cell would wait.

Nothing is lost: when a turn ends its cards become a static transcript saved with the
notebook (readable without the kernel, on GitHub or through nbconvert); every session is
written as it runs to .agent_magics/sessions/ (setting sessions_dir; false turns it off)
and can be continued after a kernel restart (%agent sessions, %agent resume last); a
turn that changed files ends with their diffs, and %agent undo puts them back;
%agent export PATH writes the session as .ipynb, .md or .html.

The kernel's stop button stops a running turn and kills the commands it started.
%agent commands: reset, compact, status, tools, tool, history, context, mcp, cancel,
undo, review, sessions, resume, trust, export, help (%agent help lists them).

A long conversation is compacted before it overflows the model's context window (the
cell shows a "Context compacted" line; the footer how full the window is): the model
summarises it, and your earlier prompts and the summary go on. %agent compact does it
now.

Example:

    %%agent -a on-request -s workspace-write
    Find the slowest test in tests/ and explain why it is slow.
"""

LINE_MANUAL = """%agent reset | compact | status | tools | tool | history | context | mcp |
       cancel | undo | review | sessions | resume | trust | recording | export | help

reset    forget the conversation and end its session: tool processes, MCP servers
         and "approve for session" answers (options stay; as %%agent --new)
compact  compact [WORDS]: summarise the conversation now to free the model's window;
         WORDS say what the summary must keep (shows what was kept)
status   model, approval policy, sandbox, folder, tokens used, context, turn state
tools    the tools the model is offered
tool     tool NAME [--auto]: offer your function NAME as a tool; --remove NAME
history  the conversation so far as it reads: prompts, answers, each tool call
         and its trimmed output; history --raw: the items as sent (JSON)
context  what the next turn is told about the notebook and the cells that ran
mcp      MCP servers: list, add NAME -- CMD ARG..., remove NAME, restart NAME
         (%agent mcp help for the options)
cancel   stop the running turn (and any queued ones)
undo     undo [--yes [--all]]: take back the last turn's file writes (asks first);
         files changed while commands ran, maybe by you, only with --all
review   review [--uncommitted | --base BRANCH | --commit SHA [--title T] | WORDS]:
         a reviewer that only reads (its commands in the read-only sandbox) looks
         at the folder's git changes and its prioritised findings show as a card;
         the next %%agent turn is told them
sessions the sessions saved in this folder (id, started, model, turns, tokens)
resume   resume [ID|last]: the next %%agent continues a saved session
trust    trust this folder's .agent_magics/config.toml as it is now
recording recording PATH: when no model is configured, play this recording (the
         model's answers; the tools run for real), as the shipped notebooks do
export   export [ID|last] PATH [--force]: this session (or a saved one) as a
         document; PATH ends in .ipynb, .md or .html
help     the manual of %%agent
"""


def manual(text: str) -> Callable[[F], F]:
    """Give a magic its manual before IPython's argument decorators read it."""

    def give(func: F) -> F:
        func.__doc__ = text
        return func

    return give


def plain_manual(func: F) -> F:
    """Make the help IPython's argument decorators built readable as plain text (the
    pager shows it as it is): no reStructuredText ``::`` before the usage, which starts
    the text, and option values without the ``<...>`` they wrap some of them in."""
    text = func.__doc__ or ""
    if text.startswith("::\n"):
        usage, _, rest = text[len("::\n") :].lstrip("\n").partition("\n\n")
        text = textwrap.dedent(usage) + "\n\n" + rest
    func.__doc__ = re.sub(r"<([^<>\s]+)>", r"\1", text)
    return func
