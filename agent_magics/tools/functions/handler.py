"""A person's Python function offered as a tool (registered with ``@agent_magics.tool``).

The call's arguments are validated against the function's signature before anyone is
asked: a bad call is answered to the model and the turn goes on. Then the approval rule
of :func:`~agent_magics.tools.approval.requirement.kernel_approval_requirement` applies, as to
run_python's code (the card shows the function's name and the arguments), and the
function runs:

* a coroutine function is awaited on the session's loop;
* a plain function is called right there, on the loop's thread, which in a kernel is
  the main thread: the person's functions touch the namespace and pyplot, which expect
  it, and run one at a time as cells do. While it runs, the kernel's stop button raises
  ``KeyboardInterrupt`` in it, as in a cell, and the turn stops.

An exception becomes the output, with the last frames of its traceback; the return
value becomes text (:func:`result_text`) within the
turn's output budget. The function runs in the kernel's own process: no sandbox.
"""

from __future__ import annotations

import inspect
import json
import signal
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import pydantic_core
from pydantic import ValidationError

from agent_magics.errors import RespondToModel, TurnAborted
from agent_magics.import_guard import await_person_code, call_person_code
from agent_magics.protocol.approval import ApprovalRequest
from agent_magics.tools.approval.orchestrator import GuardedCall, run_guarded
from agent_magics.tools.approval.requirement import (
    FUNCTION_ASKS,
    kernel_approval_requirement,
    kernel_session_key,
    kernel_session_scope,
)
from agent_magics.tools.args import json_error_text, parse_json
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import FunctionPayload, ToolInvocation, ToolOutput
from agent_magics.tools.functions.schema import FunctionTool
from agent_magics.tools.sandbox import SandboxSpec
from agent_magics.tools.spec import FunctionSpec, ToolSpec
from agent_magics.tools.truncate import formatted_truncate_text

REJECTED = "the person declined to run this function"
TRACEBACK_FRAMES = 3
"""Frames of a raised exception's traceback the model sees (the innermost ones)."""
INTERRUPTED = "interrupted"
MAX_ERRORS_SHOWN = 5
"""Validation problems listed to the model for one bad call."""
MAX_INPUT_CHARS = 80
"""How much of a refused argument value the model is shown again."""


class PythonFunctionHandler:
    """Calls one :class:`FunctionTool`."""

    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = False

    def __init__(self, tool: FunctionTool) -> None:
        self.tool = tool
        self.name: str = tool.name

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return FunctionSpec(self.name, self.tool.description, self.tool.parameters)

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        if not isinstance(inv.payload, FunctionPayload):
            raise RespondToModel(f"{self.name} handler received unsupported payload")
        raw = inv.payload.arguments
        args, kwargs = call_arguments(self.tool, raw)
        turn = inv.turn
        request = ApprovalRequest(
            call_id=inv.call_id,
            tool_name=self.name,
            kind="function",
            cwd=turn.cwd,
            arguments=raw,
            keys=kernel_session_key(turn.sandbox_mode, ("function", self.name), raw),
            session_scope=kernel_session_scope(turn.sandbox_mode, self.name),
        )
        requirement = kernel_approval_requirement(
            turn.approval_policy,
            turn.sandbox_mode,
            FUNCTION_ASKS,
            auto=self.tool.approval == "auto",
            function=True,
        )

        async def attempt(_sandbox: SandboxSpec) -> ToolOutput:
            return await self._call(args, kwargs)

        ran = await run_guarded(
            inv, GuardedCall(request, requirement, attempt, REJECTED, runs_outside_sandbox=True)
        )
        output = ran.value
        if isinstance(output.content, str):
            text = formatted_truncate_text(output.content, inv.turn.truncation)
            return ToolOutput(text, output.success)
        return output

    async def _call(self, args: list[Any], kwargs: dict[str, Any]) -> ToolOutput:
        function = self.tool.function
        try:
            if self.tool.is_async:
                value = await await_person_code(function(*args, **kwargs))
            else:
                with interruptible():
                    value = call_person_code(function, *args, **kwargs)
                if inspect.isawaitable(value):  # a wrapper around a coroutine function
                    value = await await_person_code(value)
        except KeyboardInterrupt:
            raise TurnAborted(INTERRUPTED) from None
        except Exception as exc:
            return ToolOutput(error_text(self.name, exc), success=False)
        return ToolOutput(result_text(value))


def error_text(name: str, exc: BaseException) -> str:
    """``<name> raised <Type>: <message>`` and the last frames of the traceback."""
    frames = traceback.extract_tb(exc.__traceback__)[-TRACEBACK_FRAMES:]
    lines = traceback.format_list(frames)
    head = "".join(traceback.format_exception_only(type(exc), exc)).rstrip()
    return f"{name} raised {head}\nTraceback (innermost frames last):\n{''.join(lines)}".rstrip()


@contextmanager
def interruptible() -> Iterator[None]:
    """While a plain function runs on the main thread, SIGINT (the kernel's stop button)
    raises ``KeyboardInterrupt`` in it; the handler in place before comes back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is None:  # installed outside Python: leave it alone
        yield
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def call_arguments(tool: FunctionTool, raw: str) -> tuple[list[Any], dict[str, Any]]:
    """The positional and keyword arguments of one call, validated; a bad call raises
    :class:`RespondToModel` with every problem (up to :data:`MAX_ERRORS_SHOWN`)."""
    prefix = f"invalid arguments for {tool.name}: "
    if raw.strip():
        try:
            data = parse_json(raw)
        except json.JSONDecodeError as exc:
            raise RespondToModel(prefix + json_error_text(raw, exc)) from None
    else:
        data = {}
    if not isinstance(data, dict):
        raise RespondToModel(prefix + "send a JSON object of the parameters by name")
    try:
        values = tool.arguments.model_validate(data)
    except ValidationError as exc:
        raise RespondToModel(prefix + validation_text(exc)) from None
    given = {tool.arguments.model_fields[f].alias or f for f in values.model_fields_set}
    given.update(tool.field_defaults)
    by_name = {
        (info.alias or field): getattr(values, field)
        for field, info in tool.arguments.model_fields.items()
    }
    # Positional-only parameters go up to the last one given (those before it that were
    # left out take their defaults from the model, which holds the signature's).
    last = max((i for i, n in enumerate(tool.positional) if n in given), default=-1)
    args = [by_name[n] for n in tool.positional[: last + 1]]
    kwargs = {n: v for n, v in by_name.items() if n in given and n not in tool.positional}
    return args, kwargs


def validation_text(exc: ValidationError) -> str:
    """pydantic's problems, one per clause: ``where: what (got value)``."""
    parts = []
    errors = exc.errors(include_url=False)
    for err in errors[:MAX_ERRORS_SHOWN]:
        where = ".".join(str(p) for p in err["loc"]) or "arguments"
        text = f"{where}: {err['msg']}"
        if err["type"] not in ("missing",):
            shown = json.dumps(_jsonable(err.get("input")), ensure_ascii=False)
            if len(shown) > MAX_INPUT_CHARS:
                shown = shown[: MAX_INPUT_CHARS - 1] + "…"
            text += f" (got {shown})"
        parts.append(text)
    if len(errors) > MAX_ERRORS_SHOWN:
        parts.append(f"and {len(errors) - MAX_ERRORS_SHOWN} more")
    return "; ".join(parts)


def _jsonable(value: Any) -> Any:
    return pydantic_core.to_jsonable_python(value, fallback=repr)


def result_text(value: Any) -> str:
    """What the model reads of a return value: a string as it is, anything else as
    JSON (objects with no JSON form as their ``repr``)."""
    if isinstance(value, str):
        return value
    try:
        return pydantic_core.to_json(value, fallback=repr).decode("utf-8")
    except (pydantic_core.PydanticSerializationError, ValueError, TypeError):
        return repr(value)
