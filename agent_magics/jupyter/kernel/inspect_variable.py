"""``inspect_variable``: one value of the person's namespace, described within a budget.

The name is read, never run: a plain name, an attribute path (``df.columns``,
``model.config.lr``) or a literal key on a dict, list, tuple or data frame
(``data["train"]``, ``runs[-1]``, ``df["price"]``). It is parsed with :mod:`ast` and
walked by hand; calls, operators and computed keys are refused, and so are dunder
attributes. Each step is read without the person's code (:mod:`.lookup`): a property,
a ``__getattr__``, a dict subclass's ``__getitem__`` or a ``defaultdict``'s missing key
would run it, so those are refused with one sentence that points to ``run_python``,
which asks the person first. The value found is described by :mod:`.describe`, which
runs none of it either.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from agent_magics.errors import RespondToModel
from agent_magics.jupyter.kernel.describe import describe
from agent_magics.jupyter.kernel.lookup import _Missing, _NeedsCode, attribute, item, keyed
from agent_magics.jupyter.kernel.static import str_item
from agent_magics.text.rust import U64_MAX
from agent_magics.tools.args import decode_call
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.notebook.masking import OutputMask
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


def _needs_code(path: str, exc: _NeedsCode) -> RespondToModel:
    return RespondToModel(
        f"cannot read `{path}` without running the user's code ({exc}); "
        "run_python can read it, under the user's approval"
    )


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
        found, value = str_item(ns, node.id)
        if not found:
            raise RespondToModel(
                f"no variable named `{node.id}` in the kernel; list_variables shows what exists"
            )
        return value
    if isinstance(node, ast.Attribute):
        if node.attr.startswith("__"):
            raise RespondToModel(f"cannot inspect `{path}`: dunder attributes are not read")
        base = _walk(ns, node.value, path)
        try:
            return attribute(base, node.attr)
        except _Missing:
            where = ast.unparse(node.value)
            raise RespondToModel(f"`{where}` has no attribute `{node.attr}`") from None
        except _NeedsCode as exc:
            raise _needs_code(path, exc) from None
        except Exception as exc:  # pandas, polars or numpy raised on a broken value
            raise _raised(path, exc) from None
    if isinstance(node, ast.Subscript):
        key = _key(node.slice)
        if key is None:
            raise _refuse(path)
        base = _walk(ns, node.value, path)
        where = ast.unparse(node.value)
        if not keyed(base):
            raise RespondToModel(
                f"`{where}` is not a dict, list, tuple or data frame; keys are read only on those"
            )
        try:
            return item(base, key)
        except _Missing:
            raise RespondToModel(f"`{where}` has no key {key!r}") from None
        except _NeedsCode as exc:
            raise _needs_code(path, exc) from None
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
    "first docstring line; objects of the user's own classes: their type, docstring and "
    "stored attributes (their repr is never called). None of the user's code runs: "
    "`name` is a variable, an attribute path or a literal key, and a step that would run "
    "code (a property, __getattr__, a dict subclass's lookup, a defaultdict's missing "
    "key) is refused; run_python can read those, under the user's approval."
)


class InspectVariableHandler:
    """The ``inspect_variable`` tool: read-only, no approval."""

    name = "inspect_variable"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = True

    def __init__(self, shell: Any, mask: Callable[[], OutputMask | None] = lambda: None) -> None:
        self.shell = shell
        self.mask = mask  # the teacher's withheld answers: ``In``, ``Out`` quote them

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
        text, mask = describe(args.name.strip(), value, args.max_rows), self.mask()
        return ToolOutput(text if mask is None else mask(text))
