"""Responses API data: items kept in history and events read from the stream."""

from agent_magics.protocol.items import (
    CALL_TYPES,
    OUTPUT_TYPES,
    CustomToolCall,
    CustomToolCallOutput,
    FunctionCall,
    FunctionCallOutput,
    Message,
    Reasoning,
    ResponseItem,
    UnknownItem,
    parse_item,
)

__all__ = [
    "CALL_TYPES",
    "OUTPUT_TYPES",
    "CustomToolCall",
    "CustomToolCallOutput",
    "FunctionCall",
    "FunctionCallOutput",
    "Message",
    "Reasoning",
    "ResponseItem",
    "UnknownItem",
    "parse_item",
]
