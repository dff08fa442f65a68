"""After a real kernel restart and ``%agent resume last``, ``%agent sessions`` and the
exported document say when the session started and, apart, when it was last resumed:
both read "started" as the time of the resume. A session whose settings changed within
the kernel (another model server, same conversation) was not resumed: it does not say so."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from agent_magics.store.log import now_iso
from agent_magics.testing import ScriptedResponsesServer, message
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell

pytestmark = pytest.mark.slow


def metas(path: Path) -> list[dict[str, Any]]:
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [r for r in records if r["type"] == "session_meta"]


def shown(stamp: str) -> str:
    return stamp[:19].replace("T", " ")


def test_sessions_and_export_tell_the_start_from_the_last_resume(kernel: Kernel) -> None:
    script = [[message("first answer")], [message("second answer")]]
    with ScriptedResponsesServer(script) as server:
        kernel.run(agent_cell(server.base_url, "", "first question"))
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
        [path] = (kernel.ws / ".agent_magics" / "sessions").glob("*.jsonl")
        started = metas(path)[0]["started"]
        kernel.wait_for(lambda: now_iso() != started)  # the resume's second is another

        kernel.km.restart_kernel(now=True)
        kernel.kc.wait_for_ready(timeout=60)
        kernel.run("%load_ext agent_magics")
        before = kernel.outputs_text(kernel.run("%agent sessions"))
        kernel.run("%agent resume last")
        kernel.run(agent_cell(server.base_url, "", "second question"))
        kernel.wait_for(lambda: len(server.requests) == 2)
        kernel.wait_for(lambda: len(metas(path)) == 2 and "second answer" in path.read_text())
        resumed = metas(path)[1]["started"]
        assert resumed != started
        table = kernel.outputs_text(kernel.run("%agent sessions"))
        kernel.run("%agent export last session.md")
        kernel.run("%agent export last session.html")

        # The same conversation on another model server: the file is opened again, and
        # the session is no more resumed than it was.
        with ScriptedResponsesServer([[message("third answer")]]) as other:
            kernel.run(agent_cell(other.base_url, "", "third question"))
            kernel.wait_for(lambda: len(other.requests) == 1 and len(metas(path)) == 3)
        again = kernel.outputs_text(kernel.run("%agent sessions"))

    # It read the resume's time as "Started", in the table and the exported header.
    cells = re.split(r"\s{2,}", table.strip().splitlines()[1])
    assert cells[:2] == [path.stem[:8], shown(started)], table
    markdown = (kernel.ws / "session.md").read_text()
    assert f"- Started: `{started}`\n" in markdown
    html = (kernel.ws / "session.html").read_text()
    assert f"<li>Started: <code>{started}</code></li>" in html
    # The last resume is told apart; before it, none; a new model server is not one.
    assert cells[2] == shown(resumed)
    assert re.split(r"\s{2,}", again.strip().splitlines()[1])[:3] == cells[:3]
    header, row = before.strip().splitlines()[:2]
    assert re.split(r"\s{2,}", header)[:4] == ["id", "started", "last resumed", "model"]
    assert re.split(r"\s{2,}", row)[1:3] == [shown(started), "-"]
    assert f"- Started: `{started}`\n- Last resumed: `{resumed}`\n" in markdown
    assert f"<li>Last resumed: <code>{resumed}</code></li>" in html
