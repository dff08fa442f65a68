"""Argument decoding speaks serde's words, because the model learns from them."""

from __future__ import annotations

from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from agent_magics.errors import ArgumentError
from agent_magics.tools.args import decode_args


class Step(BaseModel):
    model_config = ConfigDict(extra="forbid")
    step: str
    status: Literal["pending", "in_progress", "completed"]


class Plan(BaseModel):
    model_config = ConfigDict(extra="forbid")
    explanation: str | None = None
    plan: list[Step]


class Exec(BaseModel):
    cmd: str
    yield_time_ms: int = Field(10_000, ge=0)
    tty: bool = False


@pytest.mark.parametrize(
    ("model", "raw", "expected"),
    [
        pytest.param(Exec, "", "EOF while parsing a value at line 1 column 0", id="empty"),
        pytest.param(Exec, "{not json", "key must be a string at line 1 column 2", id="bad-key"),
        # serde_json refuses the 128th nested list or object, where it starts.
        pytest.param(
            Exec, "[" * 5000, "recursion limit exceeded at line 1 column 128", id="deep-list"
        ),
        pytest.param(
            Exec,
            '{"cmd": ' * 200,
            "recursion limit exceeded at line 1 column 1017",
            id="deep-object",
        ),
        pytest.param(
            Exec,
            '{"cmd": "[[[[", "tty": ' + "[" * 126 + "]" * 126 + "}",
            "invalid type: sequence, expected a boolean at line 1 column 276",
            id="brackets-in-strings-do-not-count",
        ),
        pytest.param(
            Exec,
            '{"yield_time_ms": ' + "9" * 5000 + "}",
            "number out of range at line 1 column 5018",
            id="huge-number",
        ),
        # Text that ends early: serde says what it was reading and where the text ran out.
        pytest.param(Exec, "{", "EOF while parsing an object at line 1 column 1", id="eof-open"),
        pytest.param(
            Exec, '{"cmd"', "EOF while parsing an object at line 1 column 6", id="eof-key"
        ),
        pytest.param(
            Exec, '{"cmd": ', "EOF while parsing a value at line 1 column 8", id="eof-value"
        ),
        pytest.param(
            Exec, '{"cmd": "ls",', "EOF while parsing a value at line 1 column 13", id="eof-comma"
        ),
        pytest.param(
            Exec, '{"cmd": "ls', "EOF while parsing a string at line 1 column 11", id="eof-string"
        ),
        pytest.param(
            Plan, '{"plan": [1', "EOF while parsing a list at line 1 column 11", id="eof-list"
        ),
        pytest.param(
            Plan, '{"plan": []} trailing', "trailing characters at line 1 column 14", id="trailing"
        ),
        pytest.param(Exec, "[1,2]", "invalid type: integer `1`, expected a string", id="array"),
        pytest.param(Exec, "{}", "missing field `cmd`", id="missing"),
        pytest.param(
            Plan,
            '{"plan": [], "foo": 1}',
            "unknown field `foo`, expected `explanation` or `plan`",
            id="unknown-field",
        ),
        pytest.param(
            Plan,
            '{"plan": [{"step": "a", "status": "done"}]}',
            "unknown variant `done`, expected one of `pending`, `in_progress`, `completed`",
            id="variant",
        ),
        pytest.param(
            Plan, '{"plan": "x"}', 'invalid type: string "x", expected a sequence', id="not-a-list"
        ),
        pytest.param(
            Exec,
            '{"cmd": "a", "yield_time_ms": -5}',
            "invalid value: integer `-5`, expected u64",
            id="negative",
        ),
        pytest.param(
            Exec,
            '{"cmd": "a", "yield_time_ms": 1.5}',
            "invalid type: floating point `1.5`, expected u64",
            id="fraction",
        ),
        pytest.param(
            Exec,
            '{"cmd": "a", "tty": "yes"}',
            'invalid type: string "yes", expected a boolean',
            id="bool",
        ),
        pytest.param(Exec, "7", "invalid type: integer `7`, expected struct Exec", id="scalar"),
    ],
)
def test_errors_follow_serde(model: type[BaseModel], raw: str, expected: str) -> None:
    with pytest.raises(ArgumentError) as info:
        decode_args(model, raw)
    message = str(info.value)
    assert message.startswith("failed to parse function arguments: " + expected)


def test_unknown_keys_are_ignored_unless_forbidden() -> None:
    assert decode_args(Exec, '{"cmd": "ls", "extra": 1}').cmd == "ls"


def test_integers_are_not_coerced_from_strings() -> None:
    with pytest.raises(ArgumentError):
        decode_args(Exec, '{"cmd": "a", "yield_time_ms": "5"}')
