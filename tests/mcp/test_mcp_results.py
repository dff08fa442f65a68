"""What the model reads back from an MCP call: Codex's conversion, case by case."""

from __future__ import annotations

import pytest
from mcp.types import (
    Annotations,
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from agent_magics.mcp.results import (
    IMAGE_OMITTED,
    call_error_output,
    call_result_output,
    compact_json,
    rust_f64_json,
)


def test_structured_content_wins_as_compact_json_in_the_order_given() -> None:
    result = CallToolResult(
        content=[TextContent(text="ignored")],
        structured_content={"b": 1, "a": "é ✓", "n": None, "f": 1.0, "l": [True, 2.5]},
    )
    output = call_result_output(result)
    assert output.content == '{"b":1,"a":"é ✓","n":null,"f":1.0,"l":[true,2.5]}'
    assert output.success


def test_structured_content_of_an_error_is_unsuccessful() -> None:
    result = CallToolResult(content=[], structured_content={"error": "no"}, is_error=True)
    output = call_result_output(result)
    assert (output.content, output.success) == ('{"error":"no"}', False)


def test_structured_content_need_not_be_an_object() -> None:
    assert call_result_output(CallToolResult(content=[], structured_content=[1, "x"])).content == (
        '[1,"x"]'
    )


def test_without_images_the_content_array_is_sent_as_json_text() -> None:
    result = CallToolResult(
        content=[
            TextContent(text='line one\nline "two"'),
            TextContent(text="hi", annotations=Annotations(priority=1.0), _meta={"k": "v"}),
            EmbeddedResource(
                resource=TextResourceContents(uri="file:///a", mime_type="text/plain", text="x")
            ),
        ]
    )
    output = call_result_output(result)
    assert output.content == (
        '[{"type":"text","text":"line one\\nline \\"two\\""},'
        '{"type":"text","text":"hi","annotations":{"priority":1.0},"_meta":{"k":"v"}},'
        '{"type":"resource","resource":{"uri":"file:///a","mimeType":"text/plain","text":"x"}}]'
    )
    assert output.success


def test_an_empty_result_is_an_empty_array() -> None:
    assert call_result_output(CallToolResult(content=[])).content == "[]"


def test_is_error_makes_the_output_unsuccessful() -> None:
    output = call_result_output(CallToolResult(content=[TextContent(text="boom")], is_error=True))
    assert (output.content, output.success) == ('[{"type":"text","text":"boom"}]', False)


def test_an_image_turns_every_item_into_a_content_item() -> None:
    result = CallToolResult(
        content=[
            TextContent(text="caption"),
            ImageContent(data="iVBORw0K", mime_type="image/png"),
            ImageContent(data="data:image/gif;base64,R0lG", mime_type="image/png"),
            ResourceLink(name="n", uri="file:///x"),
            AudioContent(data="QUFB", mime_type="audio/wav"),
        ]
    )
    output = call_result_output(result)
    assert output.content == [
        {"type": "input_text", "text": "caption"},
        {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0K"},
        {"type": "input_image", "image_url": "data:image/gif;base64,R0lG"},
        {"type": "input_text", "text": '{"name":"n","uri":"file:///x","type":"resource_link"}'},
        {"type": "input_text", "text": '{"type":"audio","data":"QUFB","mimeType":"audio/wav"}'},
    ]
    assert output.success


def test_a_model_without_image_input_gets_a_note_instead_of_the_image() -> None:
    result = CallToolResult(
        content=[ImageContent(data="iVBORw0K", mime_type="image/png"), TextContent(text="hi")]
    )
    output = call_result_output(result, supports_images=False)
    assert output.content == (
        f'[{{"type":"text","text":"{IMAGE_OMITTED}"}},{{"type":"text","text":"hi"}}]'
    )


def test_a_failed_call_reads_as_rust_debug_text() -> None:
    output = call_error_output("MCP server 'demo' said \"no\"\nthen \\ left")
    assert output.content == (
        'err: "tool call error: MCP server \'demo\' said \\"no\\"\\nthen \\\\ left"'
    )
    assert not output.success


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param(1.0, "1.0", id="whole"),
        pytest.param(0.1, "0.1", id="tenth"),
        pytest.param(-2.5, "-2.5", id="negative"),
        pytest.param(100.0, "100.0", id="hundred"),
        pytest.param(123456.789, "123456.789", id="fraction"),
        pytest.param(1e15, "1000000000000000.0", id="sixteen-digits"),
        pytest.param(1e16, "1e16", id="seventeen-digits"),
        pytest.param(1.5e16, "1.5e16", id="large"),
        pytest.param(1.7976931348623157e308, "1.7976931348623157e308", id="max"),
        pytest.param(0.0001, "0.0001", id="small"),
        pytest.param(0.00001, "0.00001", id="smallest-plain"),
        pytest.param(0.000001, "1e-6", id="tiny"),
        pytest.param(1.25e-7, "1.25e-7", id="tiny-fraction"),
        pytest.param(5e-324, "5e-324", id="subnormal"),
        pytest.param(0.0, "0.0", id="zero"),
        pytest.param(-0.0, "-0.0", id="negative-zero"),
        pytest.param(float("nan"), "null", id="nan"),
        pytest.param(float("inf"), "null", id="infinity"),
    ],
)
def test_floats_are_written_as_serde_json_writes_them(value: float, text: str) -> None:
    assert rust_f64_json(value) == text


def test_compact_json_escapes_like_serde_json() -> None:
    assert compact_json({"k": "\x01\t/\u2028é"}) == '{"k":"\\u0001\\t/\u2028é"}'
