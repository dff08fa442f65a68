"""``%%agent -f``: the notebook's variables filled into the prompt, by name only.

A scripted run (papermill's parameters cell, a loop over files) wants its values in the
prompt; prompts often hold code and JSON, so braces are text unless the cell asks. A
field is a plain name looked up in the namespace, never an expression: ``str.format``
would also follow ``{a.b}`` and ``{a[0]}``, which run the object's own attribute and
item code, and a prompt pasted from elsewhere should not do that. The value is written
as ``format(value, spec)`` would (``{n:.2f}``, ``{name!r}``), as the person's own cell
would have printed it.
"""

from __future__ import annotations

import string
from collections.abc import Callable, Mapping
from typing import Any

from agent_magics.errors import UserError

_CONVERSIONS: dict[str, Callable[[object], str]] = {"r": repr, "s": str, "a": ascii}


def fill_prompt(template: str, namespace: Mapping[str, Any]) -> str:
    """``template`` with each ``{name}`` replaced by that variable of ``namespace``;
    ``{{`` and ``}}`` give literal braces. Raises :class:`UserError` naming the first
    field that is not a plain name, or not defined."""
    try:
        pieces = list(string.Formatter().parse(template))
    except ValueError as exc:  # a lone { or }
        raise UserError(
            f"-f reads the prompt as a template, and this one does not read ({exc}); "
            "write {{ and }} for literal braces."
        ) from None
    out: list[str] = []
    for text, name, spec, conversion in pieces:
        out.append(text)
        if name is None:
            continue
        field = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "")
        field += "}"
        if not name.isidentifier():
            raise UserError(
                f"-f fills plain names only, and {field} is not one; write {{{{ and }}}} for "
                "literal braces, or put the value in a variable first."
            )
        if spec and ("{" in spec or "}" in spec):
            raise UserError(f"-f does not fill fields inside {field}'s format.")
        if name not in namespace:
            raise UserError(
                f"The prompt names {{{name}}}, but the notebook has no variable {name!r} "
                "(-f fills names from its variables; {{ and }} give literal braces)."
            )
        value = namespace[name]
        if conversion:
            if conversion not in _CONVERSIONS:
                raise UserError(f"{field}: the conversion must be !r, !s or !a.")
            value = _CONVERSIONS[conversion](value)
        try:
            out.append(format(value, spec or ""))
        except (TypeError, ValueError) as exc:
            raise UserError(f"{field} could not be written: {exc}.") from None
    return "".join(out)
