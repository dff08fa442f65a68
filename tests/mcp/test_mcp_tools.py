"""MCP tools as the model sees them: the approval table, argument decoding, specs, the
order of the tool list, and the handlers against real MCP servers over stdio."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Coroutine
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from agent_magics.errors import RespondToModel
from agent_magics.events import Event, ToolCallProposed
from agent_magics.mcp.approval import remember_allowed
from agent_magics.mcp.config import ApprovalMode, McpServerConfig
from agent_magics.mcp.manager import McpManager
from agent_magics.protocol.approval import ApprovalPolicy, ReviewDecision, SandboxMode
from agent_magics.tools.approval.requirement import (
    MCP_ALWAYS_ASK,
    MCP_DESTRUCTIVE,
    MCP_NOT_READ_ONLY,
    MCP_UNKNOWN_EFFECTS,
    NeedsApproval,
    Skip,
    mcp_approval_requirement,
)
from agent_magics.tools.args import PREFIX
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import (
    FunctionPayload,
    SessionServices,
    ShellInfo,
    ToolInvocation,
    ToolOutput,
    TurnContext,
)
from agent_magics.tools.handlers.mcp import McpToolHandler, parse_arguments, tool_parameters
from agent_magics.tools.handlers.mcp_resource import (
    CURSOR_NEEDS_SERVER,
    LIST_RESOURCES,
    LIST_TEMPLATES,
    READ_RESOURCE,
    RESOURCE_TOOLS,
    McpResourceHandler,
    ResourceTool,
)
from agent_magics.tools.handlers.toolset import build_registry
from agent_magics.tools.router import ToolCall, ToolRouter
from tests.helpers.paths import MCP_SERVERS
from tests.helpers.sandbox import RecordingApprover

# hints: r = readOnlyHint, d = destructiveHint, o = openWorldHint; "T"/"F" true/false,
# "-" absent; "none" = the tool has no annotations at all.
# mode     hints      policy      -> outcome (run | the reason asked with)
TABLE = """
auto     none       on-request  unknown
auto     r- d- o-   on-request  unknown
auto     rT d- o-   on-request  run
auto     rT dT o-   on-request  destructive
auto     rF d- o-   on-request  unknown
auto     r- dF o-   on-request  unknown
auto     r- dF oT   on-request  unknown
auto     r- dF oF   on-request  run
auto     rF dF oF   on-request  run
auto     r- dT oF   on-request  destructive
auto     r- d- oF   on-request  unknown
auto     rT d- o-   untrusted   run
auto     r- dT o-   untrusted   destructive
auto     r- dT o-   on-failure  destructive
auto     r- dT o-   never       run
auto     none       never       run
prompt   rT dF oF   on-request  always
prompt   none       untrusted   always
prompt   rT d- o-   never       run
writes   rT d- o-   on-request  run
writes   r- dF oF   on-request  not-read-only
writes   none       on-request  not-read-only
writes   rF d- o-   never       run
approve  r- dT oT   on-request  run
approve  none       untrusted   run
"""

REASONS = {
    "unknown": MCP_UNKNOWN_EFFECTS,
    "destructive": MCP_DESTRUCTIVE,
    "always": MCP_ALWAYS_ASK,
    "not-read-only": MCP_NOT_READ_ONLY,
}


def _annotations(hints: str) -> dict[str, bool] | None:
    if hints == "none":
        return None
    names = {"r": "readOnlyHint", "d": "destructiveHint", "o": "openWorldHint"}
    out: dict[str, bool] = {}
    for part in hints.split():
        if part[1] != "-":
            out[names[part[0]]] = part[1] == "T"
    return out


def _rows() -> list[object]:
    rows: list[object] = []
    for line in TABLE.strip().splitlines():
        mode, *rest = line.split()
        policy, outcome = rest[-2], rest[-1]
        hints = " ".join(rest[:-2])
        rows.append(pytest.param(mode, hints, policy, outcome, id=f"{mode}-{hints}-{policy}"))
    return rows


@pytest.mark.parametrize(("mode", "hints", "policy", "outcome"), _rows())
@pytest.mark.parametrize("sandbox", list(SandboxMode))
def test_approval_table(
    mode: str, hints: str, policy: str, outcome: str, sandbox: SandboxMode
) -> None:
    got = mcp_approval_requirement(_annotations(hints), mode, ApprovalPolicy(policy), sandbox)  # type: ignore[arg-type]
    if outcome == "run":
        assert got == Skip(bypass_sandbox=True)
    else:
        assert got == NeedsApproval(REASONS[outcome], bypass_sandbox=True)


def test_hints_that_are_not_booleans_count_as_absent() -> None:
    odd = {"readOnlyHint": "yes", "destructiveHint": 0, "openWorldHint": None}
    got = mcp_approval_requirement(odd, "auto", ApprovalPolicy.ON_REQUEST, SandboxMode.READ_ONLY)
    assert got == NeedsApproval(MCP_UNKNOWN_EFFECTS, bypass_sandbox=True)


def test_only_prompt_mode_refuses_approval_for_the_session() -> None:
    assert [remember_allowed(m) for m in ("auto", "prompt", "writes", "approve")] == [
        True,
        False,
        True,
        True,
    ]


# -- pure parts of the handlers --------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param({"type": "object"}, {"type": "object", "properties": {}}, id="no-properties"),
        pytest.param(
            {"type": "object", "properties": None, "required": ["x"]},
            {"type": "object", "properties": {}, "required": ["x"]},
            id="null-properties",
        ),
        pytest.param(
            {"properties": {"n": {"type": "integer", "title": "N", "default": 1}}},
            {"type": "object", "properties": {"n": {"type": "number"}}},
            id="inferred-object",
        ),
        pytest.param({"type": "string"}, {"type": "object", "properties": {}}, id="not-object"),
        pytest.param(None, {"type": "object", "properties": {}}, id="missing"),
    ],
)
def test_tool_parameters(schema: object, expected: dict[str, object]) -> None:
    assert tool_parameters(schema) == expected


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        pytest.param("", None, id="empty"),
        pytest.param(" \n\t\u3000", None, id="blank"),
        pytest.param('{"a": 1}', {"a": 1}, id="object"),
        pytest.param("[1]", [1], id="array-passes-parsing"),
    ],
)
def test_parse_arguments(raw: str, expected: object) -> None:
    assert parse_arguments(raw) == expected


def test_bad_json_answers_err_and_the_serde_message() -> None:
    with pytest.raises(RespondToModel) as caught:
        parse_arguments('{"a" 1}')
    assert caught.value.message == "err: expected `:` at line 1 column 6"


# -- the handlers against the demo server over stdio ----------------------------------------

DEMO = MCP_SERVERS / "demo_server.py"
module_loop = pytest.mark.asyncio(loop_scope="module")


def demo_config(*args: str, **extra: Any) -> McpServerConfig:
    return McpServerConfig(command=sys.executable, args=(str(DEMO), *args), **extra)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def manager(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[McpManager]:
    folder = tmp_path_factory.mktemp("mcp")
    servers = {"demo": demo_config(), "zeta": demo_config()}
    mgr = McpManager(servers, cwd=folder, log_dir=folder / "logs")
    await mgr.start()
    yield mgr
    await mgr.aclose()


def call(
    handler: Any,
    raw: str,
    approver: RecordingApprover | None = None,
    policy: ApprovalPolicy = ApprovalPolicy.NEVER,
    **turn: Any,
) -> Coroutine[Any, Any, ToolOutput]:
    """Run ``handler`` on raw arguments as the router does (errors become outputs)."""
    services = SessionServices(approver=approver or RecordingApprover())
    context = TurnContext(
        cwd=Path.cwd(), approval_policy=policy, shell=ShellInfo("/bin/bash", "bash"), **turn
    )
    inv = ToolInvocation("c1", handler.name, FunctionPayload(raw), context, services)

    async def run() -> ToolOutput:
        try:
            out: ToolOutput = await handler.handle(inv)
        except RespondToModel as exc:
            return ToolOutput(exc.message, success=False)
        return out

    return run()


def tool_handler(
    manager: McpManager, qualified: str, mode: ApprovalMode = "auto"
) -> McpToolHandler:
    tool = manager.tool(qualified)
    assert tool is not None
    return McpToolHandler(tool, manager, mode)


def resources(manager: McpManager, name: ResourceTool) -> McpResourceHandler:
    return McpResourceHandler(name, manager)


@module_loop
async def test_the_tool_list_order(manager: McpManager) -> None:
    config = ToolsConfig(shell_type="shell_command")
    names = list(build_registry(config, manager))
    assert names[:4] == ["shell_command", *RESOURCE_TOOLS]
    assert names[4:8] == ["update_plan", "request_user_input", "apply_patch", "view_image"]
    assert names[8:11] == ["get_goal", "create_goal", "update_goal"]
    offered = [t.qualified_name for t in manager.tools()]
    assert names[11:] == offered == sorted(offered)
    assert {"mcp__demo__add", "mcp__zeta__add", "mcp__demo__crash"} <= set(offered)
    registry = build_registry(config, manager)
    assert [registry.get(n).parallel for n in RESOURCE_TOOLS] == [True, True, True]  # type: ignore[union-attr]
    assert registry.get("mcp__demo__add").parallel is False  # type: ignore[union-attr]


@module_loop
async def test_no_server_configured_no_resource_tools(tmp_path: Path) -> None:
    empty = McpManager({}, cwd=tmp_path, log_dir=tmp_path)
    assert "list_mcp_resources" not in build_registry(ToolsConfig(), empty)
    assert "list_mcp_resources" not in build_registry(ToolsConfig())


@module_loop
async def test_tool_spec(manager: McpManager) -> None:
    spec = tool_handler(manager, "mcp__demo__add").spec(ToolsConfig())
    assert spec.to_wire() == {
        "type": "function",
        "name": "mcp__demo__add",
        "description": "Adds two integers.",
        "strict": False,
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    }
    handler = tool_handler(manager, "mcp__demo__env_names")
    assert (handler.server, handler.mcp_tool, handler.supports_parallel) == (
        "demo",
        "env_names",
        False,
    )


@module_loop
@pytest.mark.parametrize(
    ("tool", "raw", "expected", "success"),
    [
        pytest.param("add", '{"a": 2, "b": 3}', '{"result":5}', True, id="structured"),
        pytest.param(
            "echo", '{"text": "héllo"}', '[{"type":"text","text":"héllo"}]', True, id="text"
        ),
        pytest.param(
            "fail",
            '{"message": "boom"}',
            '[{"type":"text","text":"Error executing tool fail: boom"}]',
            False,
            id="error-result",
        ),
        pytest.param("lookup", "", None, False, id="no-arguments"),
        pytest.param(
            "add", '{"a" 1}', "err: expected `:` at line 1 column 6", False, id="bad-json"
        ),
        pytest.param(
            "add",
            "[1, 2]",
            'err: "tool call error: MCP tool arguments must be a JSON object, got [1,2]"',
            False,
            id="not-an-object",
        ),
    ],
)
async def test_tool_calls(
    manager: McpManager, tool: str, raw: str, expected: str | None, success: bool
) -> None:
    out = await call(tool_handler(manager, f"mcp__demo__{tool}"), raw)
    if expected is None:
        assert isinstance(out.content, str) and "Error executing tool lookup" in out.content
    else:
        assert out.content == expected
    assert out.success is success


@module_loop
async def test_image_results_become_content_items(manager: McpManager) -> None:
    handler = tool_handler(manager, "mcp__demo__pixel")
    out = await call(handler, '{"caption": "dot"}')
    assert isinstance(out.content, list)
    assert out.content[0] == {"type": "input_text", "text": "dot"}
    assert out.content[1]["type"] == "input_image"
    assert out.content[1]["image_url"].startswith("data:image/png;base64,iVBOR")
    text_only = await call(handler, '{"caption": "dot"}', supports_images=False)
    assert isinstance(text_only.content, str) and "image content omitted" in text_only.content


@module_loop
async def test_approval_asks_for_tools_that_may_change_things(manager: McpManager) -> None:
    approver = RecordingApprover(ReviewDecision.DENIED)
    raw = '{"text": "hi"}'
    out = await call(
        tool_handler(manager, "mcp__demo__echo"), raw, approver, ApprovalPolicy.ON_REQUEST
    )
    assert out == ToolOutput('err: "user rejected MCP tool call"', success=False)
    (asked,) = approver.asked
    assert (asked.kind, asked.tool_name, asked.server, asked.mcp_tool) == (
        "mcp",
        "mcp__demo__echo",
        "demo",
        "echo",
    )
    assert asked.arguments == raw and asked.reason == MCP_UNKNOWN_EFFECTS
    assert asked.remember_allowed is True and list(asked.keys) == [("mcp", "demo", "echo")]
    out = await call(
        tool_handler(manager, "mcp__demo__lookup"),
        '{"word": "mcp"}',
        approver,
        ApprovalPolicy.UNTRUSTED,
    )
    assert out.content == '{"result":"Model Context Protocol"}'
    assert len(approver.asked) == 1  # read-only: nobody asked


@module_loop
async def test_prompt_mode_asks_every_time_and_remembers_nothing(manager: McpManager) -> None:
    approver = RecordingApprover(ReviewDecision.APPROVED_FOR_SESSION)
    services = SessionServices(approver=approver)
    handler = tool_handler(manager, "mcp__demo__lookup", "prompt")
    context = TurnContext(cwd=Path.cwd(), shell=ShellInfo("/bin/bash", "bash"))
    for _ in range(2):
        inv = ToolInvocation("c", handler.name, FunctionPayload('{"word":"x"}'), context, services)
        assert (await handler.handle(inv)).content == '{"result":"unknown"}'
    assert len(approver.asked) == 2
    assert [a.remember_allowed for a in approver.asked] == [False, False]
    assert [list(a.keys) for a in approver.asked] == [[], []]
    assert approver.asked[0].reason == MCP_ALWAYS_ASK


@module_loop
async def test_router_names_the_server_on_the_card(manager: McpManager) -> None:
    events: list[Event] = []
    services = SessionServices(emit=events.append)
    router = ToolRouter(build_registry(ToolsConfig(), manager), services)
    router.announce(ToolCall("c1", "mcp__zeta__echo", FunctionPayload("{}")))
    router.announce(ToolCall("c2", "update_plan", FunctionPayload("{}")))
    assert [(e.server, e.mcp_tool) for e in events if isinstance(e, ToolCallProposed)] == [
        ("zeta", "echo"),
        (None, None),
    ]


# -- resources ---------------------------------------------------------------------------------

GREETING = {
    "name": "greeting",
    "uri": "demo://greeting",
    "description": "A short greeting.",
    "mimeType": "text/plain",
}
ITEM = {
    "name": "item",
    "uriTemplate": "demo://items/{item_id}",
    "description": "One item by its id.",
    "mimeType": "application/json",
}


@module_loop
@pytest.mark.parametrize(
    ("tool", "raw", "expected"),
    [
        pytest.param(
            LIST_RESOURCES,
            "",
            {"resources": [{"server": "demo", **GREETING}, {"server": "zeta", **GREETING}]},
            id="all-resources",
        ),
        pytest.param(
            LIST_RESOURCES,
            '{"server": "  ", "cursor": ""}',
            {"resources": [{"server": "demo", **GREETING}, {"server": "zeta", **GREETING}]},
            id="blank-counts-as-absent",
        ),
        pytest.param(
            LIST_RESOURCES,
            '{"server": " zeta ", "extra": 1}',
            {"server": "zeta", "resources": [{"server": "zeta", **GREETING}]},
            id="one-server",
        ),
        pytest.param(
            LIST_TEMPLATES,
            "{}",
            {"resourceTemplates": [{"server": "demo", **ITEM}, {"server": "zeta", **ITEM}]},
            id="all-templates",
        ),
        pytest.param(
            LIST_TEMPLATES,
            '{"server": "demo", "cursor": null}',
            {"server": "demo", "resourceTemplates": [{"server": "demo", **ITEM}]},
            id="one-server-templates",
        ),
        pytest.param(
            READ_RESOURCE,
            '{"server": "demo", "uri": "demo://items/42"}',
            {
                "server": "demo",
                "uri": "demo://items/42",
                "contents": [
                    {
                        "uri": "demo://items/42",
                        "mimeType": "application/json",
                        "text": '{"id":"42"}',
                    }
                ],
            },
            id="read",
        ),
        pytest.param(
            READ_RESOURCE,
            '["demo", "demo://greeting"]',
            {
                "server": "demo",
                "uri": "demo://greeting",
                "contents": [
                    {"uri": "demo://greeting", "mimeType": "text/plain", "text": "hello from demo"}
                ],
            },
            id="read-as-array",
        ),
    ],
)
async def test_resource_payloads(
    manager: McpManager, tool: ResourceTool, raw: str, expected: dict[str, Any]
) -> None:
    out = await call(resources(manager, tool), raw)
    assert out.success, out.content
    assert isinstance(out.content, str)
    assert json.loads(out.content) == expected
    assert json.dumps(expected, separators=(",", ":"), ensure_ascii=False) == out.content


@module_loop
@pytest.mark.parametrize(
    ("tool", "raw", "expected"),
    [
        pytest.param(LIST_RESOURCES, '{"cursor": "c"}', CURSOR_NEEDS_SERVER, id="cursor-alone"),
        pytest.param(LIST_TEMPLATES, '{"cursor": "c"}', CURSOR_NEEDS_SERVER, id="cursor-alone-t"),
        pytest.param(
            LIST_RESOURCES,
            '{"server": "nope"}',
            "resources/list failed: unknown MCP server 'nope'",
            id="unknown-server",
        ),
        pytest.param(
            LIST_TEMPLATES,
            '{"server": "nope"}',
            "resources/templates/list failed: unknown MCP server 'nope'",
            id="unknown-server-t",
        ),
        pytest.param(
            READ_RESOURCE,
            '{"server": "demo", "uri": "demo://nope"}',
            "resources/read failed: MCP server 'demo' answered resources/read with error "
            "-32602: Unknown resource: demo://nope",
            id="unknown-resource",
        ),
        pytest.param(READ_RESOURCE, "", PREFIX + "expected value", id="read-no-arguments"),
        pytest.param(
            READ_RESOURCE, '{"server": "demo"}', PREFIX + "missing field `uri`", id="no-uri"
        ),
        pytest.param(
            READ_RESOURCE,
            '{"server": " ", "uri": "x"}',
            "server must be provided",
            id="blank-server",
        ),
        pytest.param(
            READ_RESOURCE, '{"server": "demo", "uri": ""}', "uri must be provided", id="blank-uri"
        ),
        pytest.param(
            READ_RESOURCE,
            '{"uri": 5}',
            PREFIX + "invalid type: integer `5`, expected a string",
            id="uri-not-a-string",
        ),
        pytest.param(
            READ_RESOURCE,
            '{"server": null, "uri": "x"}',
            PREFIX + "invalid type: null, expected a string",
            id="null-required",
        ),
        pytest.param(
            LIST_RESOURCES,
            '"demo"',
            PREFIX + 'invalid type: string "demo", expected struct ListResourcesArgs',
            id="not-a-struct",
        ),
        pytest.param(
            LIST_RESOURCES,
            '{"server": true}',
            PREFIX + "invalid type: boolean `true`, expected a string",
            id="server-not-a-string",
        ),
        pytest.param(
            LIST_RESOURCES,
            '{"server" "x"}',
            PREFIX + "expected `:` at line 1 column 11",
            id="bad-json",
        ),
    ],
)
async def test_resource_errors(
    manager: McpManager, tool: ResourceTool, raw: str, expected: str
) -> None:
    assert await call(resources(manager, tool), raw) == ToolOutput(expected, success=False)


@module_loop
async def test_resource_tools_specs(manager: McpManager) -> None:
    specs = {n: resources(manager, n).spec(ToolsConfig()).to_wire() for n in RESOURCE_TOOLS}
    for name in (LIST_RESOURCES, LIST_TEMPLATES):
        params = specs[name]["parameters"]
        assert params == {
            "type": "object",
            "properties": {
                "cursor": params["properties"]["cursor"],
                "server": params["properties"]["server"],
            },
            "additionalProperties": False,
        }
    read = specs[READ_RESOURCE]["parameters"]
    assert list(read["properties"]) == ["server", "uri"] and read["required"] == ["server", "uri"]
