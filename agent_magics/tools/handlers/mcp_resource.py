"""``list_mcp_resources``, ``list_mcp_resource_templates`` and ``read_mcp_resource``.

Offered whenever at least one MCP server is configured. Each answers compact JSON shaped
as Codex shapes it: every listed entry carries its ``server``; with a ``server`` argument
the listing is that server's page (``nextCursor`` when there is more), without one it is
every ready server's entries, servers sorted by name. Arguments are decoded the way
serde decodes them into Codex's argument structs, so the model sees the same errors.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal

from pydantic import BaseModel

from agent_magics.errors import RespondToModel
from agent_magics.mcp.manager import McpError, McpManager
from agent_magics.mcp.results import compact_json
from agent_magics.text.rust import RUST_WHITESPACE
from agent_magics.tools.args import PREFIX, describe_value, json_error_text, parse_json
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import FunctionPayload, ToolInvocation, ToolOutput
from agent_magics.tools.spec import FunctionSpec, ToolSpec, obj, string

ResourceTool = Literal["list_mcp_resources", "list_mcp_resource_templates", "read_mcp_resource"]
LIST_RESOURCES: Final = "list_mcp_resources"
LIST_TEMPLATES: Final = "list_mcp_resource_templates"
READ_RESOURCE: Final = "read_mcp_resource"
RESOURCE_TOOLS: tuple[ResourceTool, ...] = (LIST_RESOURCES, LIST_TEMPLATES, READ_RESOURCE)

CURSOR_NEEDS_SERVER = "cursor can only be used when a server is specified"
NO_ARGUMENTS = PREFIX + "expected value"

_DESCRIPTIONS = {
    LIST_RESOURCES: (
        "List the resources (files, records, documents...) that the connected MCP servers "
        "make available to read. Prefer these over web searches when a server holds what "
        "you need. Give `server` to list one server's resources page by page."
    ),
    LIST_TEMPLATES: (
        "List the resource templates of the connected MCP servers: URI patterns with "
        "placeholders that you fill in to build a resource URI to read. Give `server` to "
        "list one server's templates page by page."
    ),
    READ_RESOURCE: (
        "Read one resource of an MCP server, named by its server and URI (from "
        "list_mcp_resources, or a template with its placeholders filled in)."
    ),
}
_STRUCTS = {
    LIST_RESOURCES: "ListResourcesArgs",
    LIST_TEMPLATES: "ListResourceTemplatesArgs",
    READ_RESOURCE: "ReadResourceArgs",
}

_ABSENT = object()


def _dump(model: BaseModel) -> dict[str, Any]:
    data: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return data


def _parse(raw: str) -> Any:
    """The arguments as a JSON value, or ``_ABSENT`` when blank."""
    if not raw.strip(RUST_WHITESPACE):
        return _ABSENT
    try:
        return parse_json(raw)
    except json.JSONDecodeError as exc:
        raise RespondToModel(PREFIX + json_error_text(raw, exc)) from None


def _strings(value: Any, struct: str, names: tuple[str, ...], required: bool) -> list[str | None]:
    """serde's ``from_value`` into a struct of string fields (``Option`` unless
    ``required``): unknown keys are ignored, errors carry no position."""

    def fail(text: str) -> RespondToModel:
        return RespondToModel(PREFIX + text)

    if isinstance(value, list):
        if len(value) > len(names):
            raise fail(f"invalid length {len(value)}, expected fewer elements in array")
        if required and len(value) < len(names):
            raise fail(f"invalid length {len(value)}, expected struct {struct} with 2 elements")
        value = dict(zip(names, value, strict=False))
    if not isinstance(value, dict):
        raise fail(f"invalid type: {describe_value(value)}, expected struct {struct}")
    for key, field in value.items():
        if key in names and not isinstance(field, str) and (required or field is not None):
            raise fail(f"invalid type: {describe_value(field)}, expected a string")
    missing = [name for name in names if name not in value]
    if required and missing:
        raise fail(f"missing field `{missing[0]}`")
    return [value.get(name) for name in names]


def _normalize(value: str | None) -> str | None:
    """Trimmed, with blank counting as absent."""
    trimmed = (value or "").strip(RUST_WHITESPACE)
    return trimmed or None


class McpResourceHandler:
    """One of the three resource tools, over the session's :class:`McpManager`."""

    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = True

    def __init__(self, name: ResourceTool, manager: McpManager) -> None:
        self.name: str = name
        self.manager = manager

    def spec(self, config: ToolsConfig) -> ToolSpec:
        server = string("Name of the MCP server to ask. Leave it out to list every server.")
        cursor = string("The nextCursor of the previous page of the same server.")
        if self.name == READ_RESOURCE:
            params = obj(
                {
                    "server": string("Name of the MCP server that holds the resource."),
                    "uri": string("URI of the resource to read."),
                },
                ["server", "uri"],
            )
        else:
            params = obj({"server": server, "cursor": cursor})
        return FunctionSpec(self.name, _DESCRIPTIONS[self.name], params)

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        if not isinstance(inv.payload, FunctionPayload):
            raise RespondToModel("mcp_resource handler received unsupported payload")
        value = _parse(inv.payload.arguments)
        struct = _STRUCTS[self.name]
        if self.name == READ_RESOURCE:
            if value is _ABSENT:
                raise RespondToModel(NO_ARGUMENTS)
            server, uri = _strings(value, struct, ("server", "uri"), required=True)
            return ToolOutput(compact_json(await self._read(server, uri)))
        server, cursor = (
            (None, None)
            if value is _ABSENT
            else _strings(value, struct, ("server", "cursor"), required=False)
        )
        payload = await self._list(_normalize(server), _normalize(cursor))
        return ToolOutput(compact_json(payload))

    async def _list(self, server: str | None, cursor: str | None) -> dict[str, Any]:
        templates = self.name == LIST_TEMPLATES
        key = "resourceTemplates" if templates else "resources"
        if server is None:
            if cursor is not None:
                raise RespondToModel(CURSOR_NEEDS_SERVER)
            by_server: dict[str, list[Any]] = dict(
                await self.manager.list_all_resource_templates()
                if templates
                else await self.manager.list_all_resources()
            )
            entries = [
                {"server": name, **_dump(entry)}
                for name in sorted(by_server)
                for entry in by_server[name]
            ]
            return {key: entries}
        method = "resources/templates/list" if templates else "resources/list"
        try:
            if templates:
                result: Any = await self.manager.list_resource_templates(server, cursor)
                items = result.resource_templates
            else:
                result = await self.manager.list_resources(server, cursor)
                items = result.resources
        except McpError as exc:
            raise RespondToModel(f"{method} failed: {exc.message}") from None
        payload: dict[str, Any] = {
            "server": server,
            key: [{"server": server, **_dump(entry)} for entry in items],
        }
        if result.next_cursor is not None:
            payload["nextCursor"] = result.next_cursor
        return payload

    async def _read(self, server: str | None, uri: str | None) -> dict[str, Any]:
        server_name = _normalize(server)
        if server_name is None:
            raise RespondToModel("server must be provided")
        uri_text = _normalize(uri)
        if uri_text is None:
            raise RespondToModel("uri must be provided")
        try:
            result = await self.manager.read_resource(server_name, uri_text)
        except McpError as exc:
            raise RespondToModel(f"resources/read failed: {exc.message}") from None
        contents = [_dump(item) for item in result.contents]
        return {"server": server_name, "uri": uri_text, "contents": contents}
