"""Responses API data: items kept in history and events read from the stream."""

from agent_magics.protocol.items import (
    MAX_ITEM_DEPTH,
    CustomToolCall,
    CustomToolCallOutput,
    FunctionCall,
    FunctionCallOutput,
    MalformedItem,
    Message,
    Reasoning,
    ResponseItem,
    UnknownItem,
    check_item_shape,
    nested_deeper_than,
    parse_item,
    server_item,
)

__all__ = [
    "MAX_ITEM_DEPTH",
    "CustomToolCall",
    "CustomToolCallOutput",
    "FunctionCall",
    "FunctionCallOutput",
    "MalformedItem",
    "Message",
    "Reasoning",
    "ResponseItem",
    "UnknownItem",
    "check_item_shape",
    "nested_deeper_than",
    "parse_item",
    "server_item",
]
