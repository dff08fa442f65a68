"""``%%agent -f``'s template: plain names from the namespace, ``{{``/``}}`` for braces,
and one sentence for every field it does not fill (nothing is evaluated)."""

from __future__ import annotations

import pytest

from agent_magics.errors import UserError
from agent_magics.jupyter.kernel.prompt_fields import fill_prompt

P = pytest.param


class Loud:
    """Attribute and item access would run this code: ``-f`` must never reach it."""

    def __getattr__(self, name: str) -> str:
        raise AssertionError("attribute code ran")

    def __getitem__(self, key: object) -> str:
        raise AssertionError("item code ran")

    def __str__(self) -> str:
        return "loud"


NAMESPACE = {"task": "count the rows", "n": 3.14159, "obj": Loud(), "d": {"a": 1}}


@pytest.mark.parametrize(
    ("template", "filled"),
    [
        P("Please {task}.", "Please count the rows.", id="a-name"),
        P('Reply as {{"rows": {n:.1f}}}', 'Reply as {"rows": 3.1}', id="braces-and-a-spec"),
        P("{task!r} {obj}", "'count the rows' loud", id="a-conversion"),
        P("no fields at all", "no fields at all", id="none"),
    ],
)
def test_filled(template: str, filled: str) -> None:
    assert fill_prompt(template, NAMESPACE) == filled


@pytest.mark.parametrize(
    ("template", "said"),
    [
        P(
            "{nope}",
            "The prompt names {nope}, but the notebook has no variable 'nope'",
            id="missing",
        ),
        P("{obj.secret}", "-f fills plain names only, and {obj.secret} is not one", id="attribute"),
        P("{d[a]}", "-f fills plain names only, and {d[a]} is not one", id="item"),
        P("{}", "-f fills plain names only, and {} is not one", id="positional"),
        P("{n:{w}}", "-f does not fill fields inside {n:{w}}'s format", id="nested"),
        P("{task:d}", "{task:d} could not be written", id="bad-spec"),
        P('{"a": 1}', "is not one", id="json-without-doubled-braces"),
        P("a } alone", "Single '}' encountered", id="lone-brace"),
    ],
)
def test_refused(template: str, said: str) -> None:
    with pytest.raises(UserError) as refused:
        fill_prompt(template, NAMESPACE)
    assert said in str(refused.value)
