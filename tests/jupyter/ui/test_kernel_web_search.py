"""Web search in a real kernel: the cell's card shows the query and the sources the
server named; ``--web-search`` on a cell holds for the cells after it; ``%agent tools``
lists web_search for a Responses server and, for a Chat Completions server, says once
that it is not offered."""

from __future__ import annotations

from agent_magics.jupyter.ui.info import NO_WEB_SEARCH_ON_CHAT, NOT_ON_CHAT
from agent_magics.testing import ScriptedResponsesServer, message
from tests.helpers.kernels import Kernel, agent_cell

SOURCE = "https://example.org/ipykernel-messaging"
SEARCH = {
    "type": "web_search_call",
    "id": "ws_7",
    "status": "completed",
    "action": {
        "type": "search",
        "query": "ipykernel comm messages",
        "sources": [{"type": "url", "url": SOURCE}],
    },
}


def searches(body: dict[str, object]) -> list[object]:
    tools = body["tools"]
    assert isinstance(tools, list)
    return [t for t in tools if t.get("type") == "web_search"]


def test_tools_listing_says_chat_has_none(kernel: Kernel) -> None:
    kernel.run('%config AgentMagics.base_url = "http://127.0.0.1:9/v1"')
    kernel.run('%config AgentMagics.provider = "chat"')
    listed = kernel.outputs_text(kernel.run("%agent tools"))
    assert listed.count("web_search") == 1
    assert NO_WEB_SEARCH_ON_CHAT in listed
    assert f"\nmulti_agent_v1       {NOT_ON_CHAT}\n" in listed  # Chat has no namespaces
    kernel.run('%config AgentMagics.provider = "responses"')
    listed = kernel.outputs_text(kernel.run("%agent tools"))
    assert NO_WEB_SEARCH_ON_CHAT not in listed
    assert "\nweb_search           The model server's own web search (cached results)" in listed


def run_turn(kernel: Kernel, cell: str) -> str:
    """Run ``cell`` and wait until its turn is over (in the background where the kernel
    gives a busy cell no clicks); what the cell printed."""
    shown = kernel.outputs_text(kernel.run(cell))
    kernel.wait_for(
        lambda: "turn:            idle" in kernel.outputs_text(kernel.run("%agent status"))
    )
    return shown


def test_the_card_and_the_cell_option(kernel: Kernel) -> None:
    script = [[SEARCH, message("read it")], [message("again")], [message("third")]]
    with ScriptedResponsesServer(script) as server:
        run_turn(kernel, agent_cell(server.base_url, "", "look it up"))
        kernel.wait_for(lambda: kernel.shows(SOURCE))  # the card's output: the sources
        header = "<b>web_search</b> <code>ipykernel comm messages</code>"
        assert any(v.startswith(header) for v in kernel.html_values())
        assert searches(server.requests[0]) == [
            {"type": "web_search", "external_web_access": False}
        ]
        run_turn(kernel, agent_cell(server.base_url, "--web-search disabled", "no search"))
        run_turn(kernel, agent_cell(server.base_url, "", "still none"))  # the option holds
    assert len(server.requests) == 3
    assert searches(server.requests[1]) == searches(server.requests[2]) == []
    sent = {"type": "web_search_call", "id": "ws_7", "status": "completed",
            "action": {"type": "search", "query": "ipykernel comm messages"}}  # fmt: skip
    assert sent in server.requests[1]["input"]  # as Codex sends it: no sources
    assert "web_search" not in kernel.outputs_text(kernel.run("%agent tools"))
