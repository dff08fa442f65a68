"""A person's Python functions as tools: schemas, validation, calls, approvals, ``_agent``."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import pytest
from pydantic import BaseModel, Field, SecretStr

import agent_magics
from agent_magics import Session
from agent_magics.errors import RespondToModel, TurnAborted
from agent_magics.events import (
    ApprovalDecided,
    ApprovalRequested,
    AssistantMessage,
    Event,
    ToolCallFinished,
    ToolCallProposed,
    ToolCallStarted,
    TurnAbortedEvent,
    Usage,
)
from agent_magics.jupyter.kernel.functions import functions_text, tool_command
from agent_magics.jupyter.ui.turn_record import TurnRecorder, usage_since
from agent_magics.protocol.approval import ApprovalRequest, ReviewDecision
from agent_magics.testing import ScriptedResponsesServer, custom_tool_call, function_call, message
from agent_magics.tools.approval.requirement import KERNEL_READ_ONLY
from agent_magics.tools.functions.handler import call_arguments, result_text
from agent_magics.tools.functions.registered import FunctionTools, registered_tools
from agent_magics.tools.functions.schema import (
    MAX_DESCRIPTION_CHARS,
    ToolDefinitionError,
    describe_function,
)
from tests.helpers.sessions import session_for

PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"


class Point(BaseModel):
    x: float
    y: float = 0


class Tree(BaseModel):
    name: str
    children: list[Tree] = []


def f_plain(a: int, b: str = "x", c: float = 1.5, d: bool = False) -> None: ...


def f_optional(limit: Optional[int] = None) -> None: ...  # noqa: UP045 (the old spelling)


def f_union(limit: int | None = None) -> None: ...


def f_list(ids: list[int]) -> None: ...


def f_literal(mode: Literal["fast", "slow"] = "fast") -> None: ...


def f_model(p: Point) -> None: ...


def f_described(
    n: Annotated[int, "how many rows"], q: str = Field("z", description="a query")
) -> None: ...


def f_untyped(thing) -> None: ...  # type: ignore[no-untyped-def]


def f_dict(options: dict[str, int]) -> None: ...


SCHEMAS = [
    pytest.param(
        f_plain,
        {
            "a": {"type": "integer"},
            "b": {"default": "x", "type": "string"},
            "c": {"default": 1.5, "type": "number"},
            "d": {"default": False, "type": "boolean"},
        },
        ["a"],
        id="plain-with-defaults",
    ),
    pytest.param(
        f_optional,
        {"limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}},
        [],
        id="optional",
    ),
    pytest.param(
        f_union,
        {"limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}},
        [],
        id="union-none",
    ),
    pytest.param(
        f_list, {"ids": {"items": {"type": "integer"}, "type": "array"}}, ["ids"], id="list-int"
    ),
    pytest.param(
        f_literal,
        {"mode": {"default": "fast", "enum": ["fast", "slow"], "type": "string"}},
        [],
        id="literal",
    ),
    pytest.param(
        f_model,
        {
            "p": {
                "properties": {"x": {"type": "number"}, "y": {"default": 0, "type": "number"}},
                "required": ["x"],
                "type": "object",
            }
        },
        ["p"],
        id="pydantic-model-inlined",
    ),
    pytest.param(
        f_described,
        {
            "n": {"description": "how many rows", "type": "integer"},
            "q": {"default": "z", "description": "a query", "type": "string"},
        },
        ["n"],
        id="annotated-and-field-descriptions",
    ),
    pytest.param(f_untyped, {"thing": {}}, ["thing"], id="no-annotation-any-json"),
    pytest.param(
        f_dict,
        {"options": {"additionalProperties": {"type": "integer"}, "type": "object"}},
        ["options"],
        id="dict",
    ),
]


@pytest.mark.parametrize(("function", "properties", "required"), SCHEMAS)
def test_schema_from_the_signature(function: Any, properties: Any, required: list[str]) -> None:
    params = describe_function(function).parameters
    expected: dict[str, Any] = {
        "additionalProperties": False,
        "properties": properties,
        "type": "object",
    }
    if required:
        expected["required"] = required
    assert params == expected


def test_a_model_that_refers_to_itself_keeps_its_definitions() -> None:
    def plant(tree: Tree) -> None: ...

    params = describe_function(plant).parameters
    assert params["properties"]["tree"] == {"$ref": "#/$defs/Tree"}
    assert params["$defs"]["Tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    assert "title" not in json.dumps(params)


def test_a_parameter_named_title_is_kept() -> None:
    def book(title: str) -> None: ...

    assert describe_function(book).parameters["properties"] == {"title": {"type": "string"}}


def test_the_description_is_the_docstring_within_its_budget() -> None:
    def documented() -> None:
        """Sum the prices.

        Tax is added on top."""

    def bare() -> None: ...

    def long() -> None: ...

    long.__doc__ = "word " * 1000
    assert describe_function(documented).description == "Sum the prices.\n\nTax is added on top."
    assert describe_function(bare).description == (
        "The Python function bare of the person's notebook."
    )
    cut = describe_function(long).description
    assert len(cut) == MAX_DESCRIPTION_CHARS and cut.endswith("…")
    assert describe_function(bare, description="Mine.").description == "Mine."


class Thing:
    pass


def with_star_args(*values: int) -> None: ...


def with_kwargs(**options: int) -> None: ...


def takes_a_thing(thing: Thing) -> None: ...


@pytest.mark.parametrize(
    ("function", "options", "says"),
    [
        pytest.param(with_star_args, {}, "*values cannot be described", id="star-args"),
        pytest.param(with_kwargs, {}, "**options cannot be described", id="star-kwargs"),
        pytest.param(takes_a_thing, {}, "has no JSON form", id="non-json-type"),
        pytest.param(f_plain, {"name": "read_file"}, "built-in tool", id="built-in-name"),
        pytest.param(f_plain, {"name": "run_python"}, "built-in tool", id="kernel-tool-name"),
        pytest.param(f_plain, {"name": "mcp__x__y"}, "built-in tool", id="mcp-name"),
        pytest.param(f_plain, {"name": "two words"}, "cannot be a tool name", id="bad-name"),
        pytest.param(f_plain, {"name": "x" * 65}, "cannot be a tool name", id="too-long"),
        pytest.param(f_plain, {"approval": "sometimes"}, "approval must be", id="approval"),
        pytest.param(lambda: None, {}, "'<lambda>' cannot be a tool name", id="lambda"),
    ],
)
def test_what_cannot_be_a_tool_is_refused_at_once(
    function: Any, options: dict[str, Any], says: str
) -> None:
    with pytest.raises(ToolDefinitionError, match=None) as caught:
        describe_function(function, **options)
    assert says in str(caught.value)


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        pytest.param("{}", "a: Field required", id="missing"),
        pytest.param('{"a": "seven"}', "a: Input should be a valid integer", id="wrong-type"),
        pytest.param('{"a": 1, "zz": 2}', "zz: Extra inputs are not permitted (got 2)", id="extra"),
        pytest.param('{"a": 1', "EOF while parsing an object at line 1 column 7", id="not-json"),
        pytest.param("[1, 2]", "send a JSON object of the parameters by name", id="array"),
    ],
)
def test_bad_arguments_are_answered_to_the_model(raw: str, says: str) -> None:
    with pytest.raises(RespondToModel) as caught:
        call_arguments(describe_function(f_plain), raw)
    assert caught.value.message.startswith("invalid arguments for f_plain: ")
    assert says in caught.value.message


def test_only_the_arguments_given_are_passed() -> None:
    seen: list[Any] = []

    def f(a: int, /, b: list[int] = [], *, c: Point | None = None, q: str = Field("z")) -> None:  # noqa: B006
        seen.append((a, b, c, q))

    tool = describe_function(f)
    args, kwargs = call_arguments(tool, '{"a": "3", "c": {"x": 1}}')
    assert args == [3] and kwargs == {"c": Point(x=1), "q": "z"}  # Field defaults filled in
    tool.function(*args, **kwargs)
    assert seen == [(3, [], Point(x=1), "z")]


def test_positional_only_parameters_keep_their_places() -> None:
    def f(a: int = 1, b: int = 2, c: int = 3, /) -> tuple[int, int, int]:
        return a, b, c

    tool = describe_function(f)
    args, kwargs = call_arguments(tool, '{"c": 9}')
    assert tool.function(*args, **kwargs) == (1, 2, 9)
    assert call_arguments(tool, "") == ([], {})


@dataclass
class Reading:
    value: float
    unit: str


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param("plain text", "plain text", id="str-as-is"),
        pytest.param({"a": [1, 2]}, '{"a":[1,2]}', id="dict"),
        pytest.param(Reading(1.5, "m"), '{"value":1.5,"unit":"m"}', id="dataclass"),
        pytest.param(Point(x=1), '{"x":1.0,"y":0.0}', id="pydantic"),
        pytest.param(None, "null", id="none"),
        pytest.param(Thing, repr(Thing).join('""'), id="repr-fallback"),
    ],
)
def test_return_values_become_text(value: Any, text: str) -> None:
    assert result_text(value) == text


@pytest.fixture
def registry() -> Iterator[FunctionTools]:
    """The process-wide registry, emptied after the test."""
    before = {t.name: t for t in registered_tools}
    registered_tools.clear()
    yield registered_tools
    registered_tools.clear()
    for t in before.values():
        registered_tools.add(t)


def test_the_decorator_registers_and_returns_the_function(registry: FunctionTools) -> None:
    @agent_magics.tool
    def area(w: float, h: float) -> float:
        """Area of a rectangle."""
        return w * h

    @agent_magics.tool(name="lookup", approval="auto", description="Find one.")
    async def find(key: str) -> str:
        return key

    assert area(2, 3) == 6  # still the person's function
    assert [(t.name, t.approval) for t in registry] == [("area", "ask"), ("lookup", "auto")]
    assert [h.name for h in registry()] == ["area", "lookup"]

    @agent_magics.tool  # type: ignore[no-redef]  # the cell, run again
    def area(side: float) -> float:
        return side * side

    assert list(registry.get("area").parameters["properties"]) == ["side"]  # type: ignore[union-attr]
    assert len(registry) == 2


# -- a whole turn against the scripted model server ---------------------------------------


def make_session(tmp_path: Path, url: str, tools: FunctionTools, **extra: Any) -> Session:
    return session_for(tmp_path, url, api_key=SecretStr("sk-test"), extra_tools=tools, **extra)


async def approve(request: ApprovalRequest) -> ReviewDecision:
    approve.seen.append(request)  # type: ignore[attr-defined]
    return ReviewDecision.APPROVED


def tools_of(*functions: Any, **options: Any) -> FunctionTools:
    tools = FunctionTools()
    for fn in functions:
        tools.add(describe_function(fn, **options))
    return tools


async def test_the_model_calls_a_function_and_reads_its_answer(tmp_path: Path) -> None:
    calls: list[tuple[list[float], float]] = []

    def total(prices: list[float], tax: float = 0.2) -> dict[str, float]:
        """Sum the prices and add the tax."""
        calls.append((prices, tax))
        return {"total": round(sum(prices) * (1 + tax), 2)}

    script = [
        [function_call("total", {"prices": ["oops"]}, "bad")],
        [function_call("total", {"prices": [10, 5]}, "good")],
        [message("The total is 18.")],
    ]
    approve.seen = []  # type: ignore[attr-defined]
    with ScriptedResponsesServer(script) as server:
        session = make_session(tmp_path, server.base_url, tools_of(total))
        session.approver = approve
        record = TurnRecorder("add them up")
        session.subscribe(record)
        result = await session.run_turn("add them up")
        await session.aclose()
    offered = {t.get("name") or t["type"]: t for t in server.requests[0]["tools"]}
    assert offered["total"] == {
        "type": "function",
        "name": "total",
        "description": "Sum the prices and add the tax.",
        "strict": False,
        "parameters": {
            "additionalProperties": False,
            "properties": {
                "prices": {"items": {"type": "number"}, "type": "array"},
                "tax": {"default": 0.2, "type": "number"},
            },
            "required": ["prices"],
            "type": "object",
        },
    }
    assert server.outputs(1)["bad"].startswith("invalid arguments for total: prices.0: Input")
    assert server.outputs(2)["good"] == '{"total":18.0}'
    assert calls == [([10.0, 5.0], 0.2)]  # the bad call never ran, nor asked anyone
    assert [r.tool_name for r in approve.seen] == ["total"]  # type: ignore[attr-defined]
    assert approve.seen[0].kind == "function"  # type: ignore[attr-defined]
    assert approve.seen[0].subject() == 'total {"prices": [10, 5]}'  # type: ignore[attr-defined]
    assert result.final_text == "The total is 18."
    turn = record.result(usage_since(Usage(), session.usage))
    assert (turn.status, turn.text, turn.usage.total_tokens) == ("done", "The total is 18.", 45)
    assert [(c.tool, c.arguments, c.status) for c in turn.calls] == [
        ("total", {"prices": ["oops"]}, "failed"),
        ("total", {"prices": [10, 5]}, "completed"),
    ]
    assert "The total is 18." in repr(turn) and "2 calls" in repr(turn)


async def test_async_functions_errors_and_denials(tmp_path: Path) -> None:
    ran: list[str] = []

    async def fetch(key: str) -> str:
        await asyncio.sleep(0)
        ran.append(key)
        return f"value of {key}"

    def explode(n: int) -> int:
        ran.append("explode")
        return 1 // n

    def later(key: str) -> Any:  # a plain function handing back a coroutine
        return fetch(key + "!")

    script = [
        [function_call("fetch", {"key": "k"}, "a"), function_call("later", {"key": "k"}, "l")],
        [function_call("explode", {"n": 0}, "b")],
        [message("done")],
    ]
    events: list[Event] = []
    with ScriptedResponsesServer(script) as server:
        tools = tools_of(explode)
        tools.add(describe_function(fetch, approval="auto"))
        tools.add(describe_function(later, approval="auto"))
        session = make_session(tmp_path, server.base_url, tools, approval_policy="on-request")
        session.approver = approve
        approve.seen = []  # type: ignore[attr-defined]
        session.subscribe(events.append)
        await session.run_turn("go")
        await session.aclose()
    assert server.outputs(1) == {"a": "value of k", "l": "value of k!"}
    out = server.outputs(2)["b"]
    assert out.startswith("explode raised ZeroDivisionError: integer division or modulo by zero")
    assert "Traceback (innermost frames last):" in out and "return 1 // n" in out
    assert ran == ["k", "k!", "explode"]
    asked = [e.request.tool_name for e in events if isinstance(e, ApprovalRequested)]
    assert asked == ["explode"]  # "auto" never asks

    ran.clear()
    with ScriptedResponsesServer([[function_call("explode", {"n": 1}, "c")]]) as server:
        session = make_session(tmp_path, server.base_url, tools_of(explode))
        await session.run_turn("go")  # the default approver says no
        await session.aclose()
    assert server.outputs(1)["c"] == "the person declined to run this function"
    assert ran == []


async def test_read_only_asks_for_every_call_and_never_refuses(tmp_path: Path) -> None:
    ran: list[str] = []

    def save(text: str) -> str:
        ran.append(text)
        return "saved"

    def lookup(key: str) -> str:
        ran.append("lookup " + key)
        return "found"

    def tools() -> FunctionTools:
        found = tools_of(save)
        found.add(describe_function(lookup, approval="auto"))
        return found

    calls = [function_call("save", {"text": "a"}, "s1"), function_call("lookup", {"key": "k"}, "l")]
    with ScriptedResponsesServer([calls, [message("done")]]) as server:
        session = make_session(
            tmp_path, server.base_url, tools(), approval_policy="never", sandbox_mode="read-only"
        )
        await session.run_turn("go")
        await session.aclose()
    # "ask" is refused with the one sentence, the turn goes on; "auto" was the person's yes.
    assert server.outputs(1) == {"s1": KERNEL_READ_ONLY, "l": "found"}
    assert ran == ["lookup k"]

    ran.clear()
    again = [function_call("save", {"text": "a"}, f"s{i}") for i in (2, 3)]
    script = [[again[0]], [again[1]], [function_call("save", {"text": "b"}, "s4")], [message("ok")]]
    with ScriptedResponsesServer(script) as server:
        session = make_session(
            tmp_path,
            server.base_url,
            tools(),
            approval_policy="on-request",
            sandbox_mode="read-only",
        )
        asked: list[ApprovalRequest] = []

        async def for_session(request: ApprovalRequest) -> ReviewDecision:
            asked.append(request)
            return ReviewDecision.APPROVED_FOR_SESSION

        session.approver = for_session
        await session.run_turn("go")
        await session.aclose()
    # "approve for session" under read-only covers the same call again, not other arguments.
    assert [r.arguments for r in asked] == ['{"text": "a"}', '{"text": "b"}']
    assert ran == ["a", "a", "b"]


async def test_the_stop_button_interrupts_a_running_function(tmp_path: Path) -> None:
    def slow() -> str:
        os.kill(os.getpid(), signal.SIGINT)  # what the kernel's stop button sends
        time.sleep(30)
        return "finished"

    handler = signal.getsignal(signal.SIGINT)
    with ScriptedResponsesServer([[function_call("slow", {}, "s")]]) as server:
        session = make_session(
            tmp_path, server.base_url, tools_of(slow, approval="auto"), approval_policy="never"
        )
        events: list[Event] = []
        session.subscribe(events.append)
        started = time.monotonic()
        with pytest.raises(TurnAborted):
            await session.run_turn("go")
        assert time.monotonic() - started < 20  # not the 30 s sleep
    assert signal.getsignal(signal.SIGINT) is handler
    await session.aclose()
    assert session.history[-1].wire()["output"].startswith("aborted by user after ")
    assert not [e for e in events if isinstance(e, ToolCallFinished)]


async def test_the_turn_record_names_the_files_it_changed(tmp_path: Path) -> None:
    script = [[custom_tool_call("apply_patch", PATCH, "p")], [message("made it")]]
    with ScriptedResponsesServer(script) as server:
        session = make_session(tmp_path, server.base_url, FunctionTools())
        record = TurnRecorder()
        session.subscribe(record)
        await session.run_turn("make hello.txt")
        await session.aclose()
    turn = record.result()
    assert turn.files == ("hello.txt",) and (tmp_path / "hello.txt").exists()
    assert turn.calls[0].arguments == PATCH and turn.calls[0].status == "completed"
    with pytest.raises(AttributeError):
        turn.text = "changed"  # type: ignore[misc]


def test_the_record_says_how_each_call_and_the_turn_ended() -> None:
    record = TurnRecorder("p")
    for event in [
        ToolCallProposed("c1", "explode", '{"n": 1}'),
        ApprovalDecided("c1", ReviewDecision.DENIED),
        ToolCallFinished("c1", "explode", "the person declined", False, 0.1),
        ToolCallProposed("c2", "edit_notebook", '{"path": "a.ipynb"}'),
        ToolCallFinished("c2", "edit_notebook", "Inserted", True, 0.1),
        ToolCallProposed("c3", "view_image", "not json"),
        AssistantMessage("partial answer"),
        TurnAbortedEvent("interrupted"),
    ]:
        record(event)
    turn = record.result(Usage(10, 0, 5, 0, 15))
    assert [(c.tool, c.arguments, c.status) for c in turn.calls] == [
        ("explode", {"n": 1}, "denied"),
        ("edit_notebook", {"path": "a.ipynb"}, "completed"),
        ("view_image", "not json", "aborted"),
    ]
    assert (turn.status, turn.error, turn.text, turn.files) == (
        "aborted",
        "interrupted",
        "partial answer",
        ("a.ipynb",),
    )
    assert repr(turn).splitlines()[:3] == [
        "<agent turn: aborted · 3 calls · 15 tokens (10 in, 5 out)>",
        "error: interrupted",
        "text: 'partial answer'",
    ]
    failed = TurnRecorder()
    failed.fail("The model server could not be reached.")
    assert (failed.result().status, failed.result().error) == (
        "failed",
        "The model server could not be reached.",
    )


def test_the_tool_command_registers_from_the_namespace() -> None:
    def shout(text: str) -> str:
        """Upper-case the text."""
        return text.upper()

    tools = FunctionTools()
    namespace: dict[str, Any] = {"shout": shout, "with_star_args": with_star_args, "n": 3}
    assert tool_command(namespace, "shout", tools) == (
        "agent: shout is offered to the agent from the next turn (asks before each call)."
    )
    assert "runs without asking" in tool_command(namespace, "shout --auto", tools)
    assert tools.get("shout").approval == "auto"  # type: ignore[union-attr]
    assert tool_command(namespace, "nothing", tools) == (
        "agent: there is no 'nothing' in the namespace."
    )
    assert "*values cannot be described" in tool_command(namespace, "with_star_args", tools)
    assert "is not a function" in tool_command(namespace, "n", tools)
    assert tool_command(namespace, "", tools).startswith("usage: %agent tool NAME")
    assert functions_text(tools) == (
        "your Python functions (ask: a person approves each call; auto: never asks):\n"
        "  shout              auto  shout(text: str) -> str"
    )
    assert tool_command(namespace, "--remove shout", tools) == "agent: shout is no longer offered."
    assert functions_text(tools) == ""


def test_each_call_says_when_it_ran() -> None:
    """A call that ran has its start and end (monotonic seconds), so calls run side by
    side show as overlapping spans; a call that never started has neither."""
    record = TurnRecorder("p")
    before = time.monotonic()
    for event in [
        ToolCallProposed("c1", "exec_command", '{"cmd": "true"}'),
        ToolCallProposed("c2", "exec_command", '{"cmd": "true"}'),
        ToolCallProposed("c3", "exec_command", '{"cmd": "rm -rf x"}'),
        ToolCallStarted("c1", "exec_command"),
        ToolCallStarted("c2", "exec_command"),
        ToolCallFinished("c1", "exec_command", "ok", True, 0.1),
        ToolCallFinished("c2", "exec_command", "ok", True, 0.1),
        ApprovalDecided("c3", ReviewDecision.DENIED),
        ToolCallFinished("c3", "exec_command", "rejected", False, 0.0),
    ]:
        record(event)
    first, second, denied = record.result().calls
    assert first.started is not None and second.started is not None
    assert first.ended is not None and second.ended is not None
    assert before <= first.started <= second.started <= first.ended <= second.ended
    assert (denied.started, denied.ended) == (None, None)
