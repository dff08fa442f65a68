"""``list_variables``: the person's variables in this kernel, one line each.

Left out: private names (``_x``), what IPython put in the namespace itself (``In``,
``Out``, ``exit``, ``get_ipython``...: ``shell.user_ns_hidden``, unless the person bound
the name to something else since), and this extension's own objects. Modules are not
listed one per line: a notebook imports many and the model can read the imports, so
they are named together on the last line (``modules: np (numpy), pd (pandas)``).
No line runs the person's code (:mod:`agent_magics.jupyter.kernel.describe`): an object of a
class of theirs is listed with the names of its attributes, not with its repr.
"""

from __future__ import annotations

import fnmatch
import types
from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel

from agent_magics.jupyter.kernel.describe import budget, is_own, summary, type_name
from agent_magics.jupyter.kernel.static import module_name
from agent_magics.tools.args import decode_call
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import ToolInvocation, ToolOutput
from agent_magics.tools.notebook.masking import OutputMask
from agent_magics.tools.spec import FunctionSpec, ToolSpec, obj, string

MAX_VARIABLES = 100  # lines listed; the rest are counted
MAX_LINE_CHARS = 200  # one variable's line
MAX_MODULES = 30  # modules named on the last line
GLOB_CHARS = frozenset("*?[")


class ListVariablesArgs(BaseModel):
    filter: str | None = None


def visible(shell: Any) -> dict[str, Any]:
    """The person's names in ``shell.user_ns``, without IPython's own or private ones."""
    hidden = shell.user_ns_hidden
    missing = object()
    return {
        name: value
        for name, value in list(dict.items(shell.user_ns))
        if type(name) is str  # a key of another type could run code when compared
        and not name.startswith("_")
        and hidden.get(name, missing) is not value
        and not is_own(value)
    }


def matches(name: str, pattern: str | None) -> bool:
    """A glob when ``pattern`` has ``*``, ``?`` or ``[``; else a case-insensitive part."""
    if not pattern:
        return True
    if GLOB_CHARS.intersection(pattern):
        return fnmatch.fnmatchcase(name, pattern)
    return pattern.lower() in name.lower()


def _line(name: str, value: Any) -> str:
    try:
        about = summary(value)
    except Exception as exc:  # a broken object must not end the listing
        about = f"<could not describe: {type(exc).__name__}>"
    line = f"{name}  {type_name(value)}  {about}"
    return line if len(line) <= MAX_LINE_CHARS else line[: MAX_LINE_CHARS - 1] + "…"


def listing(shell: Any, pattern: str | None) -> str:
    found = {n: v for n, v in visible(shell).items() if matches(n, pattern)}
    names = sorted(found, key=lambda n: (n.lower(), n))
    modules = [n for n in names if issubclass(type(found[n]), types.ModuleType)]
    variables = [n for n in names if n not in modules]
    shown = variables[:MAX_VARIABLES]
    lines = [_line(n, found[n]) for n in shown]
    if len(variables) > len(shown):
        lines.append(f"… {len(variables) - len(shown)} more; narrow the list with `filter`")
    if modules:
        named = [f"{n} ({module_name(found[n])})" for n in modules[:MAX_MODULES]]
        more = f", … {len(modules) - MAX_MODULES} more" if len(modules) > MAX_MODULES else ""
        lines.append("modules: " + ", ".join(named) + more)
    if not lines:
        where = f" matching {pattern!r}" if pattern else ""
        return f"No variables{where} in the kernel's namespace."
    return budget("\n".join(lines))


_DESCRIPTION = (
    "List the variables defined in the Python kernel this conversation runs in (the "
    "user's notebook namespace): one line each with name, type, and shape and size "
    "(or a short value). Objects of the user's own classes show their attribute names "
    "instead: their repr is never called. Modules are named together on the last line. "
    "Private names and IPython's own are left out. Use inspect_variable to look at one "
    "of them closely."
)


class ListVariablesHandler:
    """The ``list_variables`` tool: read-only, no approval."""

    name = "list_variables"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = True

    def __init__(self, shell: Any, mask: Callable[[], OutputMask | None] = lambda: None) -> None:
        self.shell = shell
        self.mask = mask  # the teacher's withheld answers: a value may quote their lines

    def spec(self, config: ToolsConfig) -> ToolSpec:
        params = obj(
            {
                "filter": string(
                    "Only names containing this text (case-insensitive), or matching it "
                    "as a glob when it has *, ? or [ (e.g. `df_*`)."
                )
            }
        )
        return FunctionSpec(self.name, _DESCRIPTION, params)

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        args = decode_call(ListVariablesArgs, inv)
        text, mask = listing(self.shell, args.filter), self.mask()
        return ToolOutput(text if mask is None else mask(text))
