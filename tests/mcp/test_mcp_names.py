"""MCP tool names: Codex's vectors, then the rules they rest on."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from agent_magics.mcp.names import qualify_tools, sanitize_tool_name


def _cases(conformance: Path) -> list[dict[str, Any]]:
    data = json.loads((conformance / "vectors" / "mcp_tool_name_cases.json").read_text())
    cases: list[dict[str, Any]] = data["cases"]
    return cases


def test_every_vector_passes(conformance: Path) -> None:
    cases = _cases(conformance)
    assert cases
    for case in cases:
        pairs = [(server, tool) for server, tool in case["tools"]]
        got = [name for name, _, _ in qualify_tools(pairs)]
        # Codex keeps the names in a hash map; the vectors list them sorted.
        assert sorted(got) == sorted(case["expected_names"]), case["test"]


def test_the_original_names_are_kept_for_the_call() -> None:
    assert qualify_tools([("server.one", "tool.two")]) == [
        ("mcp__server_one__tool_two", "server.one", "tool.two")
    ]


def test_a_long_name_keeps_24_characters_and_the_sha1_of_the_raw_name() -> None:
    tool = "é" * 30 + "x" * 30
    [(name, _, _)] = qualify_tools([("srv", tool)])
    raw = f"mcp__srv__{tool}"
    assert len(name) == 64
    assert name == "mcp__srv__" + "_" * 14 + hashlib.sha1(raw.encode()).hexdigest()


def test_a_name_of_exactly_64_characters_is_not_hashed() -> None:
    tool = "t" * (64 - len("mcp__s__"))
    assert qualify_tools([("s", tool)])[0][0] == f"mcp__s__{tool}"


def test_names_that_sanitise_alike_keep_the_first() -> None:
    got = qualify_tools([("a", "x.y"), ("a", "x_y"), ("b", "x")])
    assert got == [("mcp__a__x_y", "a", "x.y"), ("mcp__b__x", "b", "x")]


def test_order_follows_the_input() -> None:
    got = [name for name, _, _ in qualify_tools([("z", "b"), ("a", "c")])]
    assert got == ["mcp__z__b", "mcp__a__c"]


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        pytest.param("", "_", id="empty"),
        pytest.param("ok-Name_09", "ok-Name_09", id="allowed"),
        pytest.param("a b/c:d", "a_b_c_d", id="punctuation"),
        pytest.param("ünï", "_n_", id="non-ascii"),
        pytest.param("٣", "_", id="non-ascii-digit"),
    ],
)
def test_sanitize(raw: str, clean: str) -> None:
    assert sanitize_tool_name(raw) == clean
