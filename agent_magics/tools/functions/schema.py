"""A person's Python function seen as a tool: its schema, its arguments, its answer.

:func:`describe_function` reads the signature and type hints once, at registration, and
builds a pydantic model of the parameters: the model's JSON schema is what the model is
offered, and the same model validates each call's arguments, so the schema and the
checks never disagree. What cannot become a tool (``*args``, ``**kwargs``, a type with
no JSON form, a name the model cannot call) is refused there with one clear sentence.

The schema is kept as pydantic writes it (``integer``, ``anyOf`` for optional values,
``enum`` for ``Literal``), with the ``$ref`` to nested models inlined and the generated
titles dropped: function tools are sent with ``strict: false``, which takes these
keywords, and narrowing them to the subset of the built-in tools would offer
``Optional[int]`` as a string and drop a ``Literal``'s choices.
"""

from __future__ import annotations

import inspect
import re
import typing
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model
from pydantic.errors import PydanticSchemaGenerationError, PydanticUserError
from pydantic.fields import FieldInfo
from pydantic.json_schema import PydanticJsonSchemaWarning

from agent_magics.errors import UserError
from agent_magics.tools.spec import JsonSchema

Approval = Literal["ask", "auto"]
NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
"""A tool name: a Python identifier of ASCII letters, digits and ``_``, at most 64 long
(the Responses API's limit)."""
MAX_DESCRIPTION_CHARS = 2_000
"""The docstring is offered whole up to this many characters, then cut."""
RESERVED_NAMES = frozenset(
    {
        "apply_patch",
        "edit_notebook",
        "exec_command",
        "grep_files",
        "inspect_variable",
        "list_dir",
        "list_mcp_resource_templates",
        "list_mcp_resources",
        "list_variables",
        "read_file",
        "read_mcp_resource",
        "read_notebook",
        "request_user_input",
        "run_python",
        "shell",
        "shell_command",
        "update_plan",
        "view_image",
        "write_stdin",
    }
)
"""Names of the built-in and kernel tools: a function may not take one."""


class ToolDefinitionError(UserError):
    """A function cannot be offered as a tool; the message says why in one sentence."""


@dataclass(frozen=True)
class FunctionTool:
    """One registered function: what the model is offered and how a call reaches it."""

    name: str
    function: Callable[..., Any]
    description: str
    parameters: JsonSchema
    arguments: type[BaseModel]
    approval: Approval = "ask"
    positional: tuple[str, ...] = ()
    """Positional-only parameters, passed by position in this order."""
    field_defaults: tuple[str, ...] = ()
    """Parameters whose default is a pydantic ``Field(...)``: filled from it when left out."""

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.function)

    @property
    def signature(self) -> str:
        try:
            return f"{self.name}{inspect.signature(self.function, eval_str=True)}"
        except Exception:  # an annotation that no longer evaluates
            return f"{self.name}{inspect.signature(self.function)}"


def check_name(name: str) -> str:
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise ToolDefinitionError(
            f"{name!r} cannot be a tool name: use letters, digits and _ (at most 64, "
            "not starting with a digit)."
        )
    if name in RESERVED_NAMES or name.startswith("mcp__"):
        raise ToolDefinitionError(
            f"{name!r} is the name of a built-in tool; pass name=... to offer the function "
            "under another name."
        )
    return name


def describe_function(
    function: Callable[..., Any],
    *,
    name: str | None = None,
    approval: Approval = "ask",
    description: str | None = None,
) -> FunctionTool:
    """The tool ``function`` becomes, or :class:`ToolDefinitionError` saying why it cannot."""
    if not callable(function):
        raise ToolDefinitionError(f"{function!r} is not a function.")
    tool_name = check_name(name if name is not None else getattr(function, "__name__", ""))
    if approval not in ("ask", "auto"):
        raise ToolDefinitionError(f"approval must be 'ask' or 'auto', not {approval!r}.")
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:
        raise ToolDefinitionError(f"{tool_name}: its signature cannot be read ({exc}).") from None
    hints = _type_hints(function, tool_name)
    fields: dict[str, Any] = {}
    positional: list[str] = []
    field_defaults: list[str] = []
    for index, param in enumerate(signature.parameters.values()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            star = "*" if param.kind is param.VAR_POSITIONAL else "**"
            raise ToolDefinitionError(
                f"{tool_name}: {star}{param.name} cannot be described to the model; "
                "name every parameter."
            )
        if param.kind is param.POSITIONAL_ONLY:
            positional.append(param.name)
        if isinstance(param.default, FieldInfo):
            field_defaults.append(param.name)
        fields[f"p{index}"] = _field(param, hints.get(param.name, Any))
    model = _model(tool_name, fields)
    return FunctionTool(
        name=tool_name,
        function=function,
        description=_description(function, tool_name, description),
        parameters=_parameters(tool_name, model),
        arguments=model,
        approval=approval,
        positional=tuple(positional),
        field_defaults=tuple(field_defaults),
    )


def _type_hints(function: Callable[..., Any], tool_name: str) -> dict[str, Any]:
    target = function if inspect.isroutine(function) else type(function).__call__
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception as exc:  # a string annotation naming something undefined, say
        raise ToolDefinitionError(f"{tool_name}: its type hints cannot be read ({exc}).") from None


def _field(param: inspect.Parameter, annotation: Any) -> tuple[Any, FieldInfo]:
    """The parameter as a model field under its own name (``alias``), described by the
    plain strings of an ``Annotated[...]`` hint."""
    texts: list[str] = []
    if typing.get_origin(annotation) is Annotated:
        base, *meta = typing.get_args(annotation)
        texts = [m for m in meta if isinstance(m, str)]
        kept = [m for m in meta if not isinstance(m, str)]
        annotation = Annotated[tuple([base, *kept])] if kept else base
    description = " ".join(texts) or None
    default = param.default
    if isinstance(default, FieldInfo):
        own = Field(alias=param.name)
        if description is not None and default.description is None:
            own = Field(alias=param.name, description=description)
        return annotation, FieldInfo.merge_field_infos(default, own)
    value = ... if default is inspect.Parameter.empty else default
    return annotation, Field(value, alias=param.name, description=description)


def _model(tool_name: str, fields: dict[str, Any]) -> type[BaseModel]:
    config = ConfigDict(extra="forbid", arbitrary_types_allowed=False)
    try:
        return create_model(tool_name, __config__=config, **fields)
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError) as exc:
        first = str(exc).splitlines()[0]
        raise ToolDefinitionError(
            f"{tool_name}: a parameter's type has no JSON form the model could send ({first}); "
            "take plain values (str, int, float, bool, lists, dicts, pydantic models) "
            "and look objects up by name."
        ) from None


def _parameters(tool_name: str, model: type[BaseModel]) -> JsonSchema:
    with warnings.catch_warnings():
        # A default with no JSON form is left out of the schema, which is what we want.
        warnings.simplefilter("ignore", PydanticJsonSchemaWarning)
        try:
            schema = model.model_json_schema(by_alias=True)
        except PydanticUserError as exc:
            first = str(exc).splitlines()[0]
            raise ToolDefinitionError(f"{tool_name}: no JSON schema ({first}).") from None
    return tidy_schema(schema)


def tidy_schema(schema: JsonSchema) -> JsonSchema:
    """Inline ``#/$defs/...`` references (kept as they are when a model refers to
    itself) and drop pydantic's generated titles."""
    defs = schema.get("$defs", {})
    try:
        out: JsonSchema = _walk({k: v for k, v in schema.items() if k != "$defs"}, defs, ())
    except _Recursive:
        out = _walk(schema, None, ())
    out.setdefault("properties", {})
    return out


class _Recursive(Exception):
    pass


def _walk(node: Any, defs: dict[str, Any] | None, seen: tuple[str, ...]) -> Any:
    """``node`` without titles, its references inlined from ``defs`` (none if ``None``)."""
    if isinstance(node, list):
        return [_walk(n, defs, seen) for n in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if defs is not None and isinstance(ref, str) and ref.startswith("#/$defs/"):
        key = ref.removeprefix("#/$defs/")
        if key in seen or key not in defs:
            raise _Recursive
        rest = {k: v for k, v in node.items() if k != "$ref"}
        return _walk({**defs[key], **rest}, defs, (*seen, key))
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key in ("properties", "$defs") and isinstance(value, dict):
            out[key] = {k: _walk(v, defs, seen) for k, v in value.items()}
        else:
            out[key] = _walk(value, defs, seen)
    return out


def _description(function: Callable[..., Any], tool_name: str, given: str | None) -> str:
    text = given if given is not None else inspect.getdoc(function)
    if not text or not text.strip():
        return f"The Python function {tool_name} of the person's notebook."
    text = text.strip()
    if len(text) > MAX_DESCRIPTION_CHARS:
        text = text[: MAX_DESCRIPTION_CHARS - 1].rstrip() + "…"
    return text
