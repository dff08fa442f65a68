"""``%load_ext agent_magics`` and ``%unload_ext``: the magics put into a shell and taken
out again, one :class:`~agent_magics.jupyter.magics.AgentMagics` per shell."""

from __future__ import annotations

import atexit
from typing import Any

from agent_magics.jupyter.kernel.earlier_cells import record_earlier_cells
from agent_magics.jupyter.magics import AgentMagics

_LOADED: dict[int, AgentMagics] = {}


def load(ip: Any) -> AgentMagics:
    """Register the magics and the cell transformer on ``ip`` (``%load_ext``)."""
    if id(ip) in _LOADED:
        return _LOADED[id(ip)]
    magics = _LOADED[id(ip)] = AgentMagics(ip)
    ip.register_magics(magics)
    ip.input_transformers_cleanup.append(magics.transform)
    record_earlier_cells(magics.cell_log)  # the cells run before %load_ext, for the first turn
    magics.cell_log.register()
    atexit.register(magics.kill_processes)  # the kernel is shutting down
    return magics


def unload(ip: Any) -> None:
    """Stop the turns, kill their processes and remove the magics (``%unload_ext``)."""
    magics = _LOADED.pop(id(ip), None)
    if magics is None:
        return
    if "agent" in magics.__dict__:
        magics.agent.shutdown()
    magics.cell_log.unregister()
    atexit.unregister(magics.kill_processes)
    if magics.transform in ip.input_transformers_cleanup:
        ip.input_transformers_cleanup.remove(magics.transform)
    manager = ip.magics_manager
    for kind, name in (("line", "agent"), ("cell", "agent")):
        manager.magics[kind].pop(name, None)
    manager.registry.pop(type(magics).__name__, None)
    if magics in getattr(ip, "configurables", []):
        ip.configurables.remove(magics)
