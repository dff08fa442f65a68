"""What the model reads back from an MCP tool call, as Codex builds it.

* structured content (present and not null) wins: its compact JSON as text;
* otherwise, when any content item is an image: content items (text -> ``input_text``,
  image -> ``input_image`` with a ``data:`` URL, anything else -> ``input_text`` holding
  the item's JSON);
* otherwise the compact JSON of the whole ``content`` array as text.

``is_error`` makes the output unsuccessful. A call that failed before the server
answered reads ``err: "tool call error: <reason>"`` (Rust's debug rendering).
Compact JSON is serde_json's: no spaces, non-ASCII kept, floats written as Rust
writes them.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal
from typing import Any

from mcp.types import CallToolResult

from agent_magics.tools.context import ContentItem, ToolOutput
from agent_magics.tools.unified_exec.format import rust_debug_str

DEFAULT_IMAGE_MIME = "application/octet-stream"
IMAGE_OMITTED = "<image content omitted because you do not support image input>"


def call_result_output(result: CallToolResult, *, supports_images: bool = True) -> ToolOutput:
    """The output for a result the server sent. Without image support (the model cannot
    read images) every image item becomes a text item saying so, as in Codex."""
    success = not result.is_error
    if result.structured_content is not None:
        return ToolOutput(compact_json(result.structured_content), success=success)
    content = [
        item.model_dump(mode="json", by_alias=True, exclude_none=True) for item in result.content
    ]
    if not supports_images:
        content = [
            {"type": "text", "text": IMAGE_OMITTED} if item.get("type") == "image" else item
            for item in content
        ]
    if any(item.get("type") == "image" for item in content):
        return ToolOutput([_content_item(item) for item in content], success=success)
    return ToolOutput(compact_json(content), success=success)


def call_error_output(message: str) -> ToolOutput:
    """The output for a call that got no result (server down, timeout, protocol error)."""
    return ToolOutput("err: " + rust_debug_str(f"tool call error: {message}"), success=False)


def _content_item(item: dict[str, Any]) -> ContentItem:
    kind = item.get("type")
    if kind == "text" and isinstance(item.get("text"), str):
        return {"type": "input_text", "text": item["text"]}
    if kind == "image" and isinstance(item.get("data"), str):
        data: str = item["data"]
        if not data.startswith("data:"):
            mime = item.get("mimeType")
            mime = mime if isinstance(mime, str) else DEFAULT_IMAGE_MIME
            data = f"data:{mime};base64,{data}"
        return {"type": "input_image", "image_url": data}
    return {"type": "input_text", "text": compact_json(item)}


# -- serde_json's compact form --------------------------------------------------------------


def compact_json(value: Any) -> str:
    """``value`` as ``serde_json::to_string`` writes it (keys in the order given)."""
    return "".join(_encode(value))


def _encode(value: Any) -> list[str]:
    if isinstance(value, dict):
        parts = ["{"]
        for index, (key, item) in enumerate(value.items()):
            if index:
                parts.append(",")
            parts.append(_string(str(key)))
            parts.append(":")
            parts.extend(_encode(item))
        parts.append("}")
        return parts
    if isinstance(value, list | tuple):
        parts = ["["]
        for index, item in enumerate(value):
            if index:
                parts.append(",")
            parts.extend(_encode(item))
        parts.append("]")
        return parts
    if isinstance(value, str):
        return [_string(value)]
    if value is None or value is True or value is False:
        return [json.dumps(value)]
    if isinstance(value, int):
        return [str(value)]
    if isinstance(value, float):
        return [rust_f64_json(value)]
    return [_string(str(value))]


def _string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def rust_f64_json(value: float) -> str:
    """An ``f64`` as serde_json writes it (the ``ryu`` crate's shortest form): ``1.0``,
    ``0.001``, ``1e-7``, ``1.5e16``; non-finite numbers become ``null``."""
    if not math.isfinite(value):
        return "null"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0")
    assert isinstance(exponent, int)
    exponent += len(digit_tuple) - len(digits)
    point = len(digits) + exponent  # where the decimal point falls in ``digits``
    text: str
    if exponent >= 0 and point <= 16:
        text = f"{digits}{'0' * exponent}.0"
    elif 0 < point <= 16:
        text = f"{digits[:point]}.{digits[point:]}"
    elif -5 < point <= 0:
        text = f"0.{'0' * -point}{digits}"
    elif len(digits) == 1:
        text = f"{digits}e{point - 1}"
    else:
        text = f"{digits[0]}.{digits[1:]}e{point - 1}"
    return ("-" if sign else "") + text
