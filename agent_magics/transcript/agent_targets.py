"""The helpers a sub-agent call is about, by nickname: a terminal's report line says
``tool wait_agent [Kant] [Hume]`` rather than two raw agent ids, as every other line of
a helper is headed by ``[Kant]``. An id no helper of this turn has (yet) stays as it is."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

TARGETS = {"wait_agent": "targets", "close_agent": "target", "send_input": "target"}
"""The argument that names the call's helpers, by tool."""


def _known(agent_id: str, names: Mapping[str, str]) -> str:
    """A nickname for ``agent_id`` in any form the tools take (upper case, no hyphens)."""
    try:
        canonical = str(uuid.UUID(agent_id))
    except ValueError:
        canonical = agent_id
    return names.get(canonical, names.get(agent_id, agent_id))


def agent_targets(tool_name: str, arguments: Any, names: Mapping[str, str]) -> str | None:
    """``[Kant] [Hume]`` and the call's other arguments; ``None``: not such a call, or
    arguments that do not read (the line then shows them as they came)."""
    key = TARGETS.get(tool_name)
    if key is None or not isinstance(arguments, dict) or key not in arguments:
        return None
    rest = dict(arguments)
    targets = rest.pop(key)
    targets = targets if isinstance(targets, list) else [targets]
    if not targets or not all(isinstance(t, str) for t in targets):
        return None
    who = " ".join(f"[{_known(t, names)}]" for t in targets)
    return who + (" " + json.dumps(rest, ensure_ascii=False) if rest else "")
