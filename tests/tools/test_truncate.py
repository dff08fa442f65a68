"""Truncation helpers against Codex's vectors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agent_magics.agent.tool_outputs import history_output, truncate_items
from agent_magics.tools.context import ToolOutput
from agent_magics.tools.truncate import (
    TruncationPolicy,
    formatted_truncate_text,
    split_string,
    truncate_text,
)
from tests.helpers.paths import CONFORMANCE

VECTORS = CONFORMANCE / "vectors" / "truncation_cases.json"


def _load(key: str) -> list[Any]:
    if not VECTORS.is_file():
        return []
    cases: list[Any] = json.loads(VECTORS.read_text())[key]
    return cases


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, id=f"{c['origin']['test']}-{i}")
        for i, c in enumerate(_load("truncation_cases"))
    ],
)
def test_truncation_vectors(case: dict[str, Any], conformance: Path) -> None:
    policy = TruncationPolicy(case["policy"]["mode"], case["policy"]["limit"])
    fn = formatted_truncate_text if case["function"] == "formatted_truncate_text" else truncate_text
    assert fn(case["text"], policy) == case["expected"]


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(c, id=f"{c['origin']['test']}-{i}")
        for i, c in enumerate(_load("split_string_cases"))
    ],
)
def test_split_string_vectors(case: dict[str, Any], conformance: Path) -> None:
    removed, head, tail = split_string(case["text"], case["prefix_bytes"], case["suffix_bytes"])
    want = case["expected"]
    assert (removed, head, tail) == (want["removed_chars"], want["prefix"], want["suffix"])


def test_history_budget_is_twenty_percent_looser() -> None:
    policy = TruncationPolicy.bytes(100)
    fits = "x" * 120
    assert history_output(ToolOutput(fits), policy).content == fits
    cut = history_output(ToolOutput("y" * 121), policy).content
    assert isinstance(cut, str) and "…1 chars truncated…" in cut


def test_items_keep_images_and_count_dropped_text() -> None:
    items = [
        {"type": "input_text", "text": "a" * 8},
        {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
        {"type": "input_text", "text": "b" * 8},
        {"type": "input_text", "text": "c" * 8},
    ]
    out = truncate_items(items, TruncationPolicy.bytes(12))
    assert out[0] == items[0]
    assert out[1] == items[1]
    assert out[2]["text"] == "bb…4 chars truncated…bb"
    assert out[3] == {"type": "input_text", "text": "[omitted 1 text items ...]"}
