"""What the model is told before the conversation: base instructions and the turn context."""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

BASE_INSTRUCTIONS = """\
You are a coding agent working inside a Jupyter notebook's kernel, on the files of the
notebook's working folder. A person reads your messages in the notebook and approves
the tool calls that need approval.

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

AGENTS_FILE = "AGENTS.md"
AGENTS_OVERRIDE_FILE = "AGENTS.override.md"
PROJECT_DOC_MAX_BYTES = 32 * 1024


def environment_context(
    cwd: Path, approval_policy: str, sandbox_mode: str, network: bool, shell: str
) -> str:
    """The first user-role message of a conversation: where and how the agent runs."""
    return (
        "<environment_context>\n"
        f"  <cwd>{escape(str(cwd))}</cwd>\n"
        f"  <approval_policy>{approval_policy}</approval_policy>\n"
        f"  <sandbox_mode>{sandbox_mode}</sandbox_mode>\n"
        f"  <network_access>{'enabled' if network else 'restricted'}</network_access>\n"
        f"  <shell>{shell}</shell>\n"
        "</environment_context>"
    )


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
