"""The agent as a persona in Jupyter AI's chat panel (jupyter-ai 3, jupyter-ai-acp-client).

Jupyter AI's persona manager loads every class the ``jupyter_ai.personas`` entry point
group names when the Jupyter server starts, and lists each as someone to @-mention in a
chat. This one is an ACP persona: at its first message it starts ``python -m
agent_magics acp`` with the server's own interpreter (``-P``: nothing is imported from
the folder it starts in) (so the server's environment,
``OPENAI_BASE_URL``, ``OPENAI_API_KEY``, ``AGENT_MAGICS_MODEL`` and the rest, reaches
the agent as it reaches ``agent-magics exec``) and speaks the Agent Client Protocol to
it over stdio. jupyter-ai-acp-client does the rest: the chat's messages become
prompts, approvals become its permission buttons, tool calls and diffs its tool cards.

The persona manager skips, with a warning in the server's log, an entry point whose
module raises ``PersonaRequirementsUnmet``; any other error is shown in the chat as a
broken persona. So without jupyter-ai-acp-client this module raises that (the persona
manager is then installed, or nothing would import it); with neither it raises the
``ImportError`` itself.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

try:
    from jupyter_ai_acp_client.base_acp_persona import BaseAcpPersona
    from jupyter_ai_persona_manager import PersonaDefaults
except ImportError as missing:
    try:
        from jupyter_ai_persona_manager import PersonaRequirementsUnmet
    except ImportError:
        raise missing from None
    raise PersonaRequirementsUnmet(
        "The agent-magics persona needs jupyter-ai-acp-client:"
        " pip install 'agent_magics[chat]', then restart the server."
    ) from missing

AVATAR = Path(__file__).with_name("avatar.svg")
COMMAND = [sys.executable, "-P", "-m", "agent_magics", "acp"]
"""The agent, run by the interpreter the Jupyter server runs in. ``-P``: the folder the
server started in (a repository, often) is not put first on ``sys.path``, so a folder
named ``agent_magics`` (or ``httpx``...) there is never what the agent imports."""


def agent_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The server's environment for the agent, but for the entries of ``PYTHONPATH``
    that name the folder it starts in: an empty one (what ``PYTHONPATH=$PYTHONPATH:/x``
    leaves when it was unset) and a relative one (``src``, ``.``) would put the
    repository's folders on ``sys.path`` despite ``-P``."""
    env = dict(environ)
    if "PYTHONPATH" in env:
        kept = [p for p in env["PYTHONPATH"].split(os.pathsep) if p and os.path.isabs(p)]
        if kept:
            env["PYTHONPATH"] = os.pathsep.join(kept)
        else:
            del env["PYTHONPATH"]
    return env


class AgentMagicsPersona(BaseAcpPersona):  # type: ignore[misc]  # jupyter-ai has no types
    NOTEBOOK_EDITING_GUIDANCE: ClassVar[str] = ""
    """Jupyter AI puts this note before a chat's first message; its own points at the
    notebook tools of Jupyter AI's MCP server, which this agent does not use (its
    read_notebook and edit_notebook say what they do themselves). Any note there would
    also stop a first message such as ``/notebook PATH`` from being a command, and would
    be saved as the person's words."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, executable=COMMAND, **kwargs)

    async def _init_agent_subprocess(self, env: dict[str, str] | None = None) -> Any:
        """The agent's process, in :func:`agent_environment`."""
        return await super()._init_agent_subprocess(env=agent_environment(env or os.environ))

    @property
    def defaults(self) -> PersonaDefaults:
        return PersonaDefaults(
            name="agent-magics",
            description=(
                "A coding agent with the Codex CLI's tools: it runs commands in a sandbox,"
                " patches files, reads and edits notebooks and runs Python in a notebook's"
                " kernel, asking here before anything its approval mode does not allow."
            ),
            avatar_path=str(AVATAR),
            system_prompt="unused",  # the agent brings its own instructions
        )
