"""Decoding a function call's JSON arguments, with errors worded as Codex words them.

Codex decodes arguments with serde; the model learns from those messages, so we keep
their shape: ``failed to parse function arguments: missing field `cmd` at line 1 column 2``.
Line and column are computed from the raw text; the wording follows serde's.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from agent_magics.errors import ArgumentError, RespondToModel
from agent_magics.tools.context import FunctionPayload

if TYPE_CHECKING:
    from agent_magics.tools.context import ToolInvocation

M = TypeVar("M", bound=BaseModel)
PREFIX = "failed to parse function arguments: "
MAX_DEPTH = 128
"""serde_json's recursion limit: arguments nested this deep are refused, in its words."""
TOO_DEEP = "recursion limit exceeded"
OUT_OF_RANGE = "number out of range"
_NESTING = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')  # string literals and brackets
_LONG_NUMBER = re.compile(r"\d{4301,}")  # past Python's int parsing limit


def parse_json(raw: str) -> Any:
    """``json.loads`` within serde_json's limits: text nesting :data:`MAX_DEPTH` lists
    or objects, or with a number Python will not parse, raises
    :class:`json.JSONDecodeError` with serde's message at serde's position, as a
    syntax error does (so :func:`json_error_text` words every one of them)."""
    if raw.count("[") + raw.count("{") >= MAX_DEPTH:
        at = _too_deep_at(raw)
        if at is not None:
            raise json.JSONDecodeError(TOO_DEEP, raw, at)
    try:
        return json.loads(raw)
    except RecursionError:  # the caller's stack was already deep
        raise json.JSONDecodeError(TOO_DEEP, raw, len(raw.rstrip()) - 1) from None
    except json.JSONDecodeError:
        raise
    except ValueError:  # an integer of more digits than Python converts
        found = _LONG_NUMBER.search(raw)
        raise json.JSONDecodeError(OUT_OF_RANGE, raw, found.end() - 1 if found else 0) from None


def _too_deep_at(raw: str) -> int | None:
    """Where the :data:`MAX_DEPTH`-th nested ``[`` or ``{`` is, outside strings."""
    depth = 0
    for token in _NESTING.finditer(raw):
        ch = token.group()
        if ch in "[{":
            depth += 1
            if depth >= MAX_DEPTH:
                return token.start()
        elif ch in "]}":
            depth = max(depth - 1, 0)
    return None


def _position(raw: str, index: int) -> str:
    line = raw.count("\n", 0, index) + 1
    col = index - (raw.rfind("\n", 0, index) + 1)
    return f"line {line} column {col}"


def _open_container(raw: str) -> str | None:
    """``{`` or ``[``: the innermost container still open at the end of ``raw``."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in raw:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "{[":
            stack.append(ch)
        elif ch in "}]" and stack:
            stack.pop()
    return stack[-1] if stack else None


def _eof_text(raw: str, msg: str) -> str:
    """serde's wording when the text ends early: what it was reading when it ran out."""
    if msg.startswith("Unterminated string"):
        return "EOF while parsing a string"
    last = raw.rstrip()[-1]
    if last in ",:":
        return "EOF while parsing a value"
    container = last if last in "{[" else _open_container(raw)
    return "EOF while parsing a list" if container == "[" else "EOF while parsing an object"


def json_error_text(raw: str, exc: json.JSONDecodeError) -> str:
    msg = exc.msg
    if msg in (TOO_DEEP, OUT_OF_RANGE):
        return f"{msg} at {_position(raw, exc.pos + 1)}"
    if not raw.strip():
        return f"EOF while parsing a value at {_position(raw, len(raw))}"
    at_end = not raw[exc.pos :].strip() or msg.startswith("Unterminated string")
    if at_end:
        # serde reports where the text ran out: the column of its last character.
        return f"{_eof_text(raw, msg)} at {_position(raw, len(raw))}"
    if msg.startswith("Expecting property name"):
        text = "key must be a string"
    elif msg.startswith("Extra data"):
        text = "trailing characters"
    elif msg.startswith("Expecting ':'"):
        text = "expected `:`"
    elif msg.startswith("Expecting ',' delimiter"):
        text = "expected `,` or `}`"
    elif msg.startswith("Invalid control character"):
        text = "control character (\\u0000-\\u001F) found while parsing a string"
    elif msg.startswith("Invalid \\escape") or msg.startswith("Invalid \\u"):
        text = "invalid escape"
    else:
        text = "expected value"
    return f"{text} at {_position(raw, exc.pos + 1)}"


def describe_value(value: Any) -> str:
    """serde's ``Unexpected`` rendering of a JSON value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{str(value).lower()}`"
    if isinstance(value, int):
        return f"integer `{value}`"
    if isinstance(value, float):
        return f"floating point `{value}`"
    if isinstance(value, str):
        return f"string {json.dumps(value, ensure_ascii=False)}"
    if isinstance(value, list):
        return "sequence"
    return "map"


def _expected_list(names: list[str]) -> str:
    quoted = [f"`{n}`" for n in names]
    if len(quoted) == 1:
        return quoted[0]
    if len(quoted) == 2:
        return f"{quoted[0]} or {quoted[1]}"
    return "one of " + ", ".join(quoted)


_EXPECTED_BY_TYPE = {
    "string_type": "a string",
    "int_type": "u64",
    "int_from_float": "u64",
    "bool_type": "a boolean",
    "list_type": "a sequence",
    "model_type": "a map",
    "model_attributes_type": "a map",
    "dict_type": "a map",
    "float_type": "f64",
}


def _field_names(model: type[BaseModel]) -> list[str]:
    return [f.alias or name for name, f in model.model_fields.items()]


def _submodel(model: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel]:
    current: Any = model
    for part in loc:
        if isinstance(part, int):
            continue
        fields = getattr(current, "model_fields", {})
        field = fields.get(part)
        if field is None:
            break
        ann = field.annotation
        for candidate in (ann, *getattr(ann, "__args__", ())):
            inner = getattr(candidate, "__args__", (candidate,))
            found = next(
                (
                    c
                    for c in (candidate, *inner)
                    if isinstance(c, type) and issubclass(c, BaseModel)
                ),
                None,
            )
            if found is not None:
                current = found
                break
    return current if isinstance(current, type) and issubclass(current, BaseModel) else model


def _validation_message(model: type[BaseModel], exc: ValidationError) -> str:
    err = exc.errors(include_url=False)[0]
    kind = err["type"]
    loc = tuple(err["loc"])
    value = err.get("input")
    if kind == "missing":
        return f"missing field `{loc[-1]}`"
    if kind == "extra_forbidden":
        owner = _submodel(model, loc[:-1])
        return f"unknown field `{loc[-1]}`, expected {_expected_list(_field_names(owner))}"
    if kind in ("literal_error", "enum"):
        expected = err.get("ctx", {}).get("expected", "")
        names = [
            p.strip().strip("'") for p in expected.replace(" or ", ",").split(",") if p.strip()
        ]
        return f"unknown variant `{value}`, expected {_expected_list(names)}"
    if kind in ("greater_than_equal", "greater_than", "less_than_equal"):
        return f"invalid value: {describe_value(value)}, expected u64"
    expected = _EXPECTED_BY_TYPE.get(kind, "a valid value")
    if isinstance(value, dict) and kind not in ("model_type", "dict_type"):
        expected = _EXPECTED_BY_TYPE.get(kind, "a valid value")
    return f"invalid type: {describe_value(value)}, expected {expected}"


def decode_args(model: type[M], raw: str) -> M:
    """Decode ``raw`` into ``model`` or raise :class:`ArgumentError` in Codex's words.

    A JSON array fills the model's fields in declaration order, as serde does for structs.
    """
    try:
        data = parse_json(raw)
    except json.JSONDecodeError as exc:
        raise ArgumentError(PREFIX + json_error_text(raw, exc)) from None
    end = _position(raw, len(raw.rstrip()))
    if isinstance(data, list):
        names = _field_names(model)
        if len(data) > len(names):
            raise ArgumentError(PREFIX + f"trailing characters at {end}")
        data = dict(zip(names, data, strict=False))
    elif not isinstance(data, dict):
        raise ArgumentError(
            PREFIX + f"invalid type: {describe_value(data)}, expected struct {model.__name__}"
            f" at {end}"
        )
    try:
        return model.model_validate(data, strict=True)
    except ValidationError as exc:
        raise ArgumentError(PREFIX + f"{_validation_message(model, exc)} at {end}") from None


def decode_call(model: type[M], inv: ToolInvocation) -> M:
    """A function call's JSON arguments as ``model``, or :class:`RespondToModel` in
    Codex's words (also for a call of another kind, which the tool does not take)."""
    if not isinstance(inv.payload, FunctionPayload):
        raise RespondToModel(f"{inv.tool_name} handler received unsupported payload")
    return decode_args(model, inv.payload.arguments)
