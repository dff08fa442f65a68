"""The kernel's own Jupyter secrets, made known to the layers that cannot ask IPython.

The signing key of this kernel (anyone holding it, and the kernel's ports, runs code
here) joins the secrets every output is scrubbed of, and the connection file that holds
it is hidden from sandboxed commands with Jupyter's runtime folder, also when it lies
elsewhere (see :mod:`agent_magics.tools.sandbox.jupyter`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_magics.agent.redaction import register_secrets
from agent_magics.tools.sandbox.jupyter import MAX_FILE_BYTES, register_connection_file


def register(ip: Any) -> None:
    """Register the signing key and connection file of the kernel ``ip`` runs in (none
    outside a kernel: a terminal IPython has neither)."""
    session = getattr(getattr(ip, "kernel", None), "session", None)
    key = getattr(session, "key", b"")
    if isinstance(key, bytes) and key:
        register_secrets(key.decode("utf-8", "replace"))
    path = connection_file()
    if path is None:
        return
    register_connection_file(path)
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read(MAX_FILE_BYTES))
    except (OSError, ValueError):
        return
    if isinstance(doc, dict) and isinstance(doc.get("key"), str):
        register_secrets(doc["key"])


def connection_file() -> Path | None:
    """This kernel's connection file, ``None`` outside a running ipykernel."""
    try:
        from ipykernel.connect import get_connection_file

        return Path(get_connection_file()).resolve()
    except Exception:  # not a kernel, or an ipykernel that has no answer
        return None
