"""What the chat starts never comes from the folder it starts in: Jupyter AI runs the
persona's command in the folder the server started in, often a repository, which may
hold a folder named ``agent_magics``."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp import PROTOCOL_VERSION
from acp.stdio import spawn_agent_process

from agent_magics.testing import ScriptedResponsesServer
from tests.helpers.acp_client import Chat, agent_env

pytestmark = [pytest.mark.asyncio, pytest.mark.slow]
persona = pytest.importorskip("agent_magics.acp.persona", reason="pip install -e '.[chat]'")

PLANTED = "open({marker!r}, 'w').write('ran')\n"


async def test_the_personas_command_imports_nothing_from_its_folder(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "agent_magics").mkdir(parents=True)
    marker = tmp_path / "planted-ran"
    (repo / "agent_magics" / "__init__.py").write_text(PLANTED.format(marker=str(marker)))
    (repo / "agent_magics" / "__main__.py").write_text(PLANTED.format(marker=str(marker)))
    command, *args = persona.COMMAND
    with ScriptedResponsesServer([]) as model:
        # what `export PYTHONPATH=$PYTHONPATH:/x` leaves when it was unset: '' is the folder
        server_env = agent_env(tmp_path / "home", model) | {"PYTHONPATH": f":{tmp_path / 'x'}:src"}
        env = persona.agent_environment(server_env)
        assert env["PYTHONPATH"] == str(tmp_path / "x")
        async with spawn_agent_process(Chat(), command, *args, env=env, cwd=repo) as (conn, _):
            reply = await asyncio.wait_for(conn.initialize(protocol_version=PROTOCOL_VERSION), 60)
    assert reply.agent_info.name == "agent-magics"
    assert not marker.exists()
