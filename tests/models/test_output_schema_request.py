"""A turn held to a JSON schema (``exec --output-schema``) and a prompt with images, as the
request bodies carry them: the Responses ``text.format`` Codex 0.171 sends (checked
against its recording), the Chat Completions ``response_format``, and a user message
whose images keep their place among its text parts in both protocols."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_magics.models.base import ModelRequest
from agent_magics.models.chat import chat_body
from agent_magics.models.responses import responses_body
from agent_magics.protocol.items import Message

RECORDED = Path(__file__).parent.parent / "conformance" / "compaction-0.171" / "exec-features"
SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
URL = "data:image/png;base64,iVBORw0KGgo="


def request(**fields: Any) -> ModelRequest:
    prompt = Message.user("What is in it?", [URL]).wire()
    return ModelRequest("m", "be brief", [prompt], [], **fields)


def test_the_responses_body_carries_the_schema_last_as_codex_writes_it() -> None:
    body = responses_body(request(output_schema=SCHEMA, prompt_cache_key="t1"))
    assert list(body)[-2:] == ["prompt_cache_key", "text"]
    assert body["text"] == {
        "format": {
            "type": "json_schema",
            "strict": True,
            "schema": SCHEMA,
            "name": "codex_output_schema",
        }
    }
    codex = json.loads((RECORDED / "exec_output_schema_request.json").read_text())
    schema = json.loads((RECORDED / "schema.json").read_text())
    assert responses_body(request(output_schema=schema))["text"] == codex["text"]
    assert "text" not in responses_body(request())


def test_the_chat_body_carries_it_as_response_format() -> None:
    body = chat_body(request(output_schema=SCHEMA))
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "codex_output_schema", "strict": True, "schema": SCHEMA},
    }
    assert "response_format" not in chat_body(request())


def test_a_prompt_image_sits_between_the_parts_that_name_it() -> None:
    assert Message.user("What is in it?", [URL]).content == [
        {"type": "input_text", "text": "<image name=[Image #1]>"},
        {"type": "input_image", "image_url": URL},
        {"type": "input_text", "text": "</image>"},
        {"type": "input_text", "text": "What is in it?"},
    ]
    assert Message.user("plain").content == [{"type": "input_text", "text": "plain"}]
    assert chat_body(request())["messages"][1] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "<image name=[Image #1]>"},
            {"type": "image_url", "image_url": {"url": URL}},
            {"type": "text", "text": "</image>"},
            {"type": "text", "text": "What is in it?"},
        ],
    }
