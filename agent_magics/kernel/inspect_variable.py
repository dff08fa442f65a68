"""``inspect_variable``: one value of the person's namespace, described within a budget.

The name is read, never run: a plain name, an attribute path (``df.columns``,
``model.config.lr``) or a literal key on a dict, list, tuple or data frame
(``data["train"]``, ``runs[-1]``, ``df["price"]``). It is parsed with :mod:`ast` and
walked by hand; calls, operators and computed keys are refused, and so are dunder
attributes. Reading an attribute may run a property's code, as the person's own
``df.columns`` would.
"""

from __future__ import annotations

import ast
from typing import Any, Literal

from pydantic import BaseModel, Field

from agent_magics.errors import RespondToModel
from agent_magics.kernel import frames
from agent_magics.kernel.describe import describe
from agent_magics.rust_text import U64_MAX
from agent_magics.tools.args import decode_call
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.spec import FunctionSpec, ToolSpec, number, obj, string

DEFAULT_MAX_ROWS = 10  # first rows of a data frame or series
MAX_ROWS = 100  # the most rows one call shows
MAX_NAME_CHARS = 300  # longest name or path accepted

SHAPE_HELP = (
    "give a variable name, an attribute path such as `df.columns`, or a literal key such "
    "as `data['train']` or `items[0]`; expressions and calls are not evaluated"
)


class InspectVariableArgs(BaseModel):
    name: str
    max_rows: int = Field(default=DEFAULT_MAX_ROWS, ge=0, le=U64_MAX)


def _refuse(path: str) -> RespondToModel:
    return RespondToModel(f"cannot inspect `{path}`: {SHAPE_HELP}")


def _key(node: ast.expr) -> str | int | None:
    value = node.value if isinstance(node, ast.Constant) else None
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return value
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, ast.USub)
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) is int
    ):
        return -node.operand.value
    return None


def _keyed(value: Any) -> bool:
    return isinstance(value, (dict, list, tuple)) or frames.is_frame(value)


def resolve(ns: dict[str, Any], path: str) -> Any:
    """The value ``path`` names in ``ns``, or :class:`RespondToModel` saying why not."""
    text = path.strip()
    if not text or len(text) > MAX_NAME_CHARS:
        raise RespondToModel(f"name must be 1 to {MAX_NAME_CHARS} characters: {SHAPE_HELP}")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError:
        raise _refuse(text) from None
    return _walk(ns, tree.body, text)


def _walk(ns: dict[str, Any], node: ast.expr, path: str) -> Any:
    if isinstance(node, ast.Name):
        if node.id not in ns:
            raise RespondToModel(
                f"no variable named `{node.id}` in the kernel; list_variables shows what exists"
            )
        return ns[node.id]
    if isinstance(node, ast.Attribute):
        if node.attr.startswith("__"):
            raise RespondToModel(f"cannot inspect `{path}`: dunder attributes are not read")
        base = _walk(ns, node.value, path)
        try:
            return getattr(base, node.attr)
        except AttributeError:
            where = ast.unparse(node.value)
            raise RespondToModel(f"`{where}` has no attribute `{node.attr}`") from None
        except Exception as exc:
            raise _raised(path, exc) from None
    if isinstance(node, ast.Subscript):
        key = _key(node.slice)
        if key is None:
            raise _refuse(path)
        base = _walk(ns, node.value, path)
        where = ast.unparse(node.value)
        if not _keyed(base):
            raise RespondToModel(
                f"`{where}` is not a dict, list, tuple or data frame; keys are read only on those"
            )
        try:
            return base[key]
        except (KeyError, IndexError, TypeError):
            raise RespondToModel(f"`{where}` has no key {key!r}") from None
        except Exception as exc:
            raise _raised(path, exc) from None
    raise _refuse(path)


def _raised(path: str, exc: Exception) -> RespondToModel:
    return RespondToModel(f"reading `{path}` raised {type(exc).__name__}: {str(exc)[:200]}")


_DESCRIPTION = (
    "Look closely at one variable of the Python kernel this conversation runs in. Data "
    "frames and series (pandas, polars): shape, column dtypes, index, memory and the "
    "first rows; numpy arrays: shape, dtype and a summary of the values; dicts, lists and "
    "sets: length and first items; functions, classes and modules: signature and the "
    "first docstring line; anything else: its type and a shortened repr. Nothing is "
    "executed: `name` is a variable, an attribute path or a literal key."
)


class InspectVariableHandler:
    """The ``inspect_variable`` tool: read-only, no approval."""

    name = "inspect_variable"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = True

    def __init__(self, shell: Any) -> None:
        self.shell = shell

    def spec(self, config: ToolsConfig) -> ToolSpec:
        params = obj(
            {
                "name": string(
                    "A variable name, an attribute path (`df.dtypes`, `model.config`) or a "
                    "literal key (`data['train']`, `items[0]`, `df['price']`)."
                ),
                "max_rows": number(
                    f"How many first rows of a data frame or series to show "
                    f"(default {DEFAULT_MAX_ROWS}, at most {MAX_ROWS})."
                ),
            },
            ["name"],
        )
        return FunctionSpec(self.name, _DESCRIPTION, params)

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        args = decode_call(InspectVariableArgs, inv)
        if args.max_rows > MAX_ROWS:
            raise RespondToModel(f"max_rows must be at most {MAX_ROWS}")
        value = resolve(self.shell.user_ns, args.name)
        return ToolOutput(describe(args.name.strip(), value, args.max_rows))
