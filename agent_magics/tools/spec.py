"""Tool definitions as the Responses API takes them, and the JSON-schema subset Codex uses.

Only ``boolean``, ``string``, ``number``, ``array`` and ``object`` exist; integers are
``number``; object properties serialize in alphabetical order; every built-in tool's
top-level object forbids extra properties; ``strict`` is always false.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

JsonSchema = dict[str, Any]


def string(description: str | None = None) -> JsonSchema:
    return _with_desc({"type": "string"}, description)


def number(description: str | None = None) -> JsonSchema:
    return _with_desc({"type": "number"}, description)


def boolean(description: str | None = None) -> JsonSchema:
    return _with_desc({"type": "boolean"}, description)


def array(items: JsonSchema, description: str | None = None) -> JsonSchema:
    return _with_desc({"type": "array", "items": items}, description)


def obj(
    properties: dict[str, JsonSchema],
    required: list[str] | None = None,
    *,
    additional: bool | JsonSchema | None = False,
    description: str | None = None,
) -> JsonSchema:
    schema: JsonSchema = {"type": "object", "properties": dict(sorted(properties.items()))}
    if required:
        schema["required"] = list(required)
    if additional is not None:
        schema["additionalProperties"] = additional
    return _with_desc(schema, description)


def _with_desc(schema: JsonSchema, description: str | None) -> JsonSchema:
    if description is not None:
        schema["description"] = description
    return schema


@dataclass(frozen=True)
class FunctionSpec:
    """A JSON-arguments tool."""

    name: str
    description: str
    parameters: JsonSchema

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "function",
            "name": self.name,
            "description": self.description,
            "strict": False,
            "parameters": self.parameters,
        }


@dataclass(frozen=True)
class FreeformSpec:
    """A custom tool whose input is raw text constrained by a grammar."""

    name: str
    description: str
    syntax: str
    definition: str

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "custom",
            "name": self.name,
            "description": self.description,
            "format": {"type": "grammar", "syntax": self.syntax, "definition": self.definition},
        }


@dataclass(frozen=True)
class NamespaceSpec:
    """A group of function tools offered under one name (Codex's ``multi_agent_v1``).
    The model calls a member by its own name with ``namespace`` set to the group's."""

    name: str
    description: str
    tools: tuple[FunctionSpec, ...]

    def to_wire(self) -> dict[str, Any]:
        return {
            "type": "namespace",
            "name": self.name,
            "description": self.description,
            "tools": [t.to_wire() for t in self.tools],
        }


@dataclass(frozen=True)
class WebSearchSpec:
    """The server's own search tool: the model searches, the server runs it, and the
    answer comes back as ``web_search_call`` items; nothing runs here.
    ``external_web_access`` false asks for cached results only (Codex's ``cached``)."""

    external_web_access: bool
    name: str = "web_search"

    def to_wire(self) -> dict[str, Any]:
        return {"type": "web_search", "external_web_access": self.external_web_access}


ToolSpec = FunctionSpec | FreeformSpec | NamespaceSpec | WebSearchSpec


def sanitize_schema(schema: Any) -> JsonSchema:
    """Bring an outside (MCP) schema into the subset, as Codex does before offering it."""
    if isinstance(schema, bool) or not isinstance(schema, dict):
        return {"type": "string"}
    out: JsonSchema = {}
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k in _SUPPORTED or k == "integer"), None)
    if kind == "integer":
        kind = "number"
    if kind not in _SUPPORTED:
        kind = _infer_type(schema)
    out["type"] = kind
    if isinstance(schema.get("description"), str):
        out["description"] = schema["description"]
    if kind == "object":
        props = schema.get("properties") or {}
        out["properties"] = {
            k: sanitize_schema(v) for k, v in sorted(props.items()) if isinstance(k, str)
        }
        if isinstance(schema.get("required"), list):
            out["required"] = [r for r in schema["required"] if isinstance(r, str)]
        extra = schema.get("additionalProperties")
        if isinstance(extra, bool):
            out["additionalProperties"] = extra
        elif isinstance(extra, dict):
            out["additionalProperties"] = sanitize_schema(extra)
    elif kind == "array":
        out["items"] = sanitize_schema(schema.get("items", {"type": "string"}))
    return out


_SUPPORTED = ("boolean", "string", "number", "array", "object")


def _infer_type(schema: JsonSchema) -> str:
    if any(k in schema for k in ("properties", "required", "additionalProperties")):
        return "object"
    if any(k in schema for k in ("items", "prefixItems")):
        return "array"
    if any(k in schema for k in ("enum", "const", "format")):
        return "string"
    numeric = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
    if any(k in schema for k in numeric):
        return "number"
    return "string"
