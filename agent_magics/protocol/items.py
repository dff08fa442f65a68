"""Responses API items as pydantic models, a tagged union on ``type`` that keeps the unknown.

Every model allows extra fields and is dumped with ``exclude_unset``, so an item goes
back to the server exactly as it came (a reasoning item keeps its encrypted content; an
item type we do not know is kept as :class:`UnknownItem`, never dropped).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Tag, TypeAdapter, ValidationError

MAX_ITEM_DEPTH = 128
"""How deeply an item from the server may nest (serde_json's default limit, which Codex
reads items with); pydantic cannot send a much deeper item back."""
IMAGE_CLOSE_TAG = "</image>"
"""The text part after an image attached to a prompt (its opening part names it)."""


class _Item(BaseModel):
    model_config = ConfigDict(extra="allow")

    def wire(self) -> dict[str, Any]:
        """The item as sent in a request's ``input``."""
        data = self.model_dump(mode="json", exclude_unset=True, by_alias=True)
        return {"type": getattr(self, "type", None), **data}


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
    def user(cls, text: str, images: Sequence[str] = ()) -> Message:
        """A person's message; ``images`` (data URLs) come first, each between the text
        parts that name it, as Codex attaches a prompt's local images."""
        parts: list[dict[str, Any]] = []
        for number, url in enumerate(images, 1):
            parts.append({"type": "input_text", "text": f"<image name=[Image #{number}]>"})
            parts.append({"type": "input_image", "image_url": url})
            parts.append({"type": "input_text", "text": IMAGE_CLOSE_TAG})
        return cls(role="user", content=[*parts, {"type": "input_text", "text": text}])


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


class LocalShellCall(_Item):
    """A command a model with a built-in local shell asks to run. The router runs it as
    a ``local_shell`` call of the shell tool; it is kept and sent back as it came."""

    type: Literal["local_shell_call"] = "local_shell_call"
    call_id: str | None = None
    id: str | None = None
    status: str | None = None
    action: dict[str, Any]


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
    "local_shell_call",
    "function_call_output",
    "custom_tool_call_output",
}


def _tag(value: Any) -> str:
    kind = value.get("type") if isinstance(value, dict) else getattr(value, "type", None)
    if kind is None and isinstance(value, dict) and "role" in value:
        return "message"
    if kind == "function_call_output" and isinstance(value, dict) and "call_id" not in value:
        return "unknown"  # Codex's goal_objective output, which answers no call
    return kind if isinstance(kind, str) and kind in _KNOWN else "unknown"


ResponseItem = Annotated[
    Annotated[Message, Tag("message")]
    | Annotated[Reasoning, Tag("reasoning")]
    | Annotated[FunctionCall, Tag("function_call")]
    | Annotated[CustomToolCall, Tag("custom_tool_call")]
    | Annotated[LocalShellCall, Tag("local_shell_call")]
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
    | LocalShellCall
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


_CALL_INPUT = {"function_call": "arguments", "custom_tool_call": "input"}

LOCAL_SHELL_WITHOUT_ID = "LocalShellCall without call_id or id"
"""Codex's words for a ``local_shell_call`` that names no call id (it cannot be answered)."""


class MalformedItem(ValueError):
    """An output item the server sent that cannot be kept or answered; ``str(self)``
    says what was wrong, as the end of a sentence ("the model server sent ...")."""


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` (JSON-like) nests lists and dicts more than ``limit`` deep;
    walked without recursion, so any depth is safe to ask about."""
    level: list[Any] = [value]
    for _ in range(limit + 1):
        below: list[Any] = []
        for node in level:
            if isinstance(node, dict):
                below.extend(node.values())
            elif isinstance(node, list):
                below.extend(node)
        if not below:
            return False
        level = below
    return True


def check_item_shape(data: Any) -> dict[str, Any]:
    """``data`` if it is a JSON object nested no deeper than :data:`MAX_ITEM_DEPTH`;
    raises :class:`MalformedItem` otherwise."""
    if not isinstance(data, dict):
        raise MalformedItem(f"an output item that is not a JSON object ({_kind(data)})")
    if nested_deeper_than(data, MAX_ITEM_DEPTH):
        raise MalformedItem(f"an output item nested deeper than {MAX_ITEM_DEPTH} levels")
    return data


def server_item(data: Any) -> AnyItem:
    """An output item as the server sent it, made fit to keep in history.

    A tool call whose name, arguments or input is not a string keeps its ``call_id``,
    so the model can be answered: a missing or non-string name becomes ``""`` (an
    unsupported call), other arguments become their JSON text (which the tool then
    rejects in its own words). What cannot be kept raises :class:`MalformedItem`: an
    item that is not an object, nests deeper than :data:`MAX_ITEM_DEPTH`, is a call
    without a ``call_id`` (its answer could not be paired), or has fields of the wrong
    type for its kind. A ``local_shell_call`` may be paired by its ``id`` when it has no
    ``call_id`` (Codex pairs it so); with neither it cannot be kept.
    """
    check_item_shape(data)
    kind = data.get("type")
    if kind == "local_shell_call" and not (data.get("call_id") or data.get("id")):
        raise MalformedItem(f"a local_shell_call that cannot be answered: {LOCAL_SHELL_WITHOUT_ID}")
    if isinstance(kind, str) and kind in _CALL_INPUT:
        call_id = data.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            raise MalformedItem(f"a {kind} without a call_id, so it cannot be answered")
        name, field = data.get("name"), _CALL_INPUT[kind]
        data = {
            **data,
            "name": name if isinstance(name, str) else "",
            field: _text(data.get(field)),
        }
    try:
        return parse_item(data)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        where = str(error["loc"][1]) if len(error["loc"]) > 1 else "item"
        label = f"{kind} item" if isinstance(kind, str) and kind else "item"
        raise MalformedItem(f"a malformed {label} ({where}: {error['msg']})") from None


def _text(value: Any) -> str:
    """A call's arguments or input as text: JSON text unless it already is a string."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def _kind(value: Any) -> str:
    return {list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )
