"""What the model is told before the conversation: base instructions and the turn context.

The base instructions say who answers approval questions (``SessionConfig.approver``):
a person in the notebook or at a terminal, or, in a headless run, nobody; then they say
which calls run without asking under the policy and sandbox in force, and what becomes
of the others (:mod:`.headless_rules`)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from xml.sax.saxutils import escape

from agent_magics.agent.headless_rules import (
    ASK_FOR_ACCESS,
    NO_ASKING,
    headless_rules,
    may_ask_for_access,
    standing_answer,
)
from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode

NOTEBOOK_OPENING = """\
You are a coding agent working inside a Jupyter notebook's kernel, on the files of the
notebook's working folder. A person reads your messages in the notebook and approves
the tool calls that need approval.
"""
TERMINAL_OPENING = """\
You are a coding agent started from a terminal, working on the files of its working
folder. A person at the terminal reads your messages and approves the tool calls that
need approval.
"""
CHAT_OPENING = """\
You are a coding agent answering in a chat panel, working on the files of its working
folder. A person reads your messages in the chat and approves the tool calls that need
approval there.
"""
HEADLESS_OPENING = """\
You are a coding agent working on the files of a working folder, in a run that nobody
watches (a script, a CI job, a notebook run from the command line). Nobody can answer
an approval question here: {answer}
"""
HOW_TO_WORK = """\
How to work:
- Look before you change: list, read and search files with the tools you have.
- Change files with apply_patch. Keep edits small and focused on the request; keep the
  style of the code around them.
- Run commands with the shell tool; set the working directory instead of using cd.
- For work of several steps, keep a short plan with update_plan and update it as
  steps finish.
- If a command needs more access than the sandbox gives, ask for it through the
  command's approval parameters and say why in one sentence.
- Do not guess at results: run the code or the tests when that is possible.

When you finish, answer briefly: what you changed, where, and what you checked.
Use Markdown; name files and code with backticks.
"""
BASE_INSTRUCTIONS = NOTEBOOK_OPENING + "\n" + HOW_TO_WORK
"""What the model is told when a person answers approvals in the notebook."""


def base_instructions(approver: str, policy: ApprovalPolicy, sandbox: SandboxMode) -> str:
    """The built-in instructions for a session whose approvals ``approver`` answers
    (``notebook``, ``terminal``, ``chat``, or headless ``deny`` / ``approve``), under ``policy``
    and ``sandbox``."""
    if approver == "notebook":
        return BASE_INSTRUCTIONS
    if approver == "terminal":
        return TERMINAL_OPENING + "\n" + HOW_TO_WORK
    if approver == "chat":
        return CHAT_OPENING + "\n" + HOW_TO_WORK
    approves = approver == "approve"
    opening = HEADLESS_OPENING.format(answer=standing_answer(approves))
    rules = "\n".join(f"- {rule}" for rule in headless_rules(policy, sandbox, approves))
    how = HOW_TO_WORK
    if not may_ask_for_access(policy, approves):
        how = HOW_TO_WORK.replace(ASK_FOR_ACCESS, NO_ASKING)
    return f"{opening}\nIn this run:\n{rules}\n\n{how}"


AGENTS_FILE = "AGENTS.md"
AGENTS_OVERRIDE_FILE = "AGENTS.override.md"
PROJECT_DOC_MAX_BYTES = 32 * 1024


ENVIRONMENT_FIELDS = ("cwd", "approval_policy", "sandbox_mode", "network_access", "shell", "python")
"""The fields of an ``<environment_context>`` message, in the order Codex writes them,
then ours: ``python``, the interpreter that ``python`` runs in commands."""
ENVIRONMENT_OPEN = "<environment_context>"
ENVIRONMENT_CLOSE = "</environment_context>"
_FIELD_LINE = re.compile(r"^  <(" + "|".join(ENVIRONMENT_FIELDS) + r")>(.*)</\1>$", re.MULTILINE)


def environment_fields(
    cwd: Path, approval_policy: str, sandbox_mode: str, network: bool, shell: str, python: str
) -> dict[str, str]:
    """Where and how the agent runs, as the text of each field."""
    return {
        "cwd": escape(str(cwd)),
        "approval_policy": approval_policy,
        "sandbox_mode": sandbox_mode,
        "network_access": "enabled" if network else "restricted",
        "shell": shell,
        "python": escape(python),
    }


def environment_xml(fields: Mapping[str, str]) -> str:
    """An ``<environment_context>`` message holding ``fields`` (the others left out)."""
    lines = [f"  <{name}>{fields[name]}</{name}>" for name in ENVIRONMENT_FIELDS if name in fields]
    return "\n".join([ENVIRONMENT_OPEN, *lines, ENVIRONMENT_CLOSE])


def told_environment(user_texts: Iterable[str]) -> dict[str, str]:
    """What the conversation's ``<environment_context>`` messages told the model, the later
    ones over the earlier (an update names only what changed)."""
    told: dict[str, str] = {}
    for text in user_texts:
        if text.startswith(ENVIRONMENT_OPEN) and text.rstrip().endswith(ENVIRONMENT_CLOSE):
            told.update(_FIELD_LINE.findall(text))
    return told


def environment_update(told: Mapping[str, str], now: Mapping[str, str]) -> str | None:
    """The message that tells the model what changed since ``told``, as Codex sends it
    between turns: None when only the shell differs; else the folder if it changed, the
    approval policy if it changed, the sandbox mode and its network access if either
    changed, and the shell always. Our ``python`` field is sent when it changed (a
    session resumed in another kernel, or begun before the field existed)."""
    sandbox = ("sandbox_mode", "network_access")
    changed = {k: now[k] for k in ("cwd", "approval_policy") if told.get(k) != now[k]}
    if "python" in now and told.get("python") != now["python"]:
        changed["python"] = now["python"]
    if any(told.get(k) != now[k] for k in sandbox):
        changed.update({k: now[k] for k in sandbox})
    if not changed:
        return None
    return environment_xml({**changed, "shell": now["shell"]})


def _project_root(cwd: Path) -> Path:
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return cwd


def project_docs(cwd: Path) -> str | None:
    """AGENTS.md files from the project root down to ``cwd``, joined, capped at 32 KiB.

    In each folder an ``AGENTS.override.md`` takes the place of ``AGENTS.md``.
    """
    root = _project_root(cwd)
    chain = [cwd, *cwd.parents]
    folders = list(reversed(chain[: chain.index(root) + 1])) if root in chain else [cwd]
    parts: list[str] = []
    budget = PROJECT_DOC_MAX_BYTES
    for folder in folders:
        for name in (AGENTS_OVERRIDE_FILE, AGENTS_FILE):
            path = folder / name
            if path.is_file():
                try:
                    data = path.read_bytes()[:budget]
                except OSError:
                    continue
                text = data.decode("utf-8", "replace").strip()
                if text:
                    parts.append(text)
                    budget -= len(data)
                break
        if budget <= 0:
            break
    if not parts:
        return None
    body = "\n\n".join(parts)
    return f"# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\n{body}\n</INSTRUCTIONS>"
