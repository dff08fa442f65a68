"""Responses API items as pydantic models, a tagged union on ``type`` that keeps the unknown.

Every model allows extra fields and is dumped with ``exclude_unset``, so an item goes
back to the server exactly as it came (a reasoning item keeps its encrypted content; an
item type we do not know is kept as :class:`UnknownItem`, never dropped).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Tag, TypeAdapter


class _Item(BaseModel):
    model_config = ConfigDict(extra="allow")

    def wire(self) -> dict[str, Any]:
        """The item as sent in a request's ``input``."""
        data = self.model_dump(mode="json", exclude_unset=True, by_alias=True)
        return {"type": getattr(self, "type", None), **data}


class InputText(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["input_text"] = "input_text"
    text: str


class OutputText(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["output_text"] = "output_text"
    text: str


class Message(_Item):
    """A user, developer, system or assistant message."""

    type: Literal["message"] = "message"
    role: str
    content: list[dict[str, Any]] | str
    id: str | None = None

    @property
    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        return "".join(
            str(p.get("text", ""))
            for p in self.content
            if p.get("type") in ("output_text", "input_text", "text")
        )

    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", content=[{"type": "input_text", "text": text}])

    @classmethod
    def assistant(cls, text: str) -> Message:
        return cls(role="assistant", content=[{"type": "output_text", "text": text}])


class Reasoning(_Item):
    type: Literal["reasoning"] = "reasoning"
    id: str | None = None
    summary: list[dict[str, Any]] = []
    encrypted_content: str | None = None

    @property
    def summary_text(self) -> str:
        return "\n".join(str(s.get("text", "")) for s in self.summary)


class FunctionCall(_Item):
    type: Literal["function_call"] = "function_call"
    call_id: str
    name: str
    arguments: str = ""
    id: str | None = None


class CustomToolCall(_Item):
    type: Literal["custom_tool_call"] = "custom_tool_call"
    call_id: str
    name: str
    input: str = ""
    id: str | None = None


class FunctionCallOutput(_Item):
    type: Literal["function_call_output"] = "function_call_output"
    call_id: str
    output: str | list[dict[str, Any]]


class CustomToolCallOutput(_Item):
    type: Literal["custom_tool_call_output"] = "custom_tool_call_output"
    call_id: str
    output: str | list[dict[str, Any]]


class UnknownItem(_Item):
    """An item type this package does not model; kept and sent back untouched."""

    type: str


_KNOWN = {
    "message",
    "reasoning",
    "function_call",
    "custom_tool_call",
    "function_call_output",
    "custom_tool_call_output",
}


def _tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    if kind is None and isinstance(value, dict) and "role" in value:
        return "message"
    return kind if kind in _KNOWN else "unknown"


ResponseItem = Annotated[
    Annotated[Message, Tag("message")]
    | Annotated[Reasoning, Tag("reasoning")]
    | Annotated[FunctionCall, Tag("function_call")]
    | Annotated[CustomToolCall, Tag("custom_tool_call")]
    | Annotated[FunctionCallOutput, Tag("function_call_output")]
    | Annotated[CustomToolCallOutput, Tag("custom_tool_call_output")]
    | Annotated[UnknownItem, Tag("unknown")],
    Discriminator(_tag),
]

_ADAPTER: TypeAdapter[Any] = TypeAdapter(ResponseItem)


AnyItem = (
    Message
    | Reasoning
    | FunctionCall
    | CustomToolCall
    | FunctionCallOutput
    | CustomToolCallOutput
    | UnknownItem
)


def parse_item(data: dict[str, Any]) -> AnyItem:
    """Parse one item; unknown types come back as :class:`UnknownItem`."""
    if "type" not in data and "role" in data:
        data = {"type": "message", **data}
    item: AnyItem = _ADAPTER.validate_python(data)
    return item


CALL_TYPES = ("function_call", "custom_tool_call")
OUTPUT_TYPES = ("function_call_output", "custom_tool_call_output")
