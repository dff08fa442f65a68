"""``list_variables`` and ``inspect_variable`` run none of the person's code, on a real
IPython shell: every method a class can give itself (``__repr__``, ``__len__``,
``__eq__``, ``__hash__``, a ``__class__`` property, ``__getattribute__`` of the class and
of its metaclass, properties, ``__missing__``...) records its call, the spies sit
everywhere a value can hide (dict keys, default arguments, annotations, pandas cells,
labels and names, numpy object arrays, polars object columns, time zones, slots), and
after each call the record must be empty."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from agent_magics.jupyter.kernel.inspect_variable import InspectVariableHandler
from agent_magics.jupyter.kernel.list_variables import ListVariablesHandler
from tests.helpers.tools import call_tool

SPIES = """
import collections, datetime, functools, types
import numpy as np, pandas as pd, polars as pl

calls = []
ANSWERS = {"__hash__": 7, "__eq__": False, "__len__": 1, "__bool__": True, "__index__": 1,
           "__repr__": "spy", "__str__": "spy", "__format__": "spy"}

def spying(name):
    def method(self, *args, **kwargs):
        calls.append((type(self).__name__, name))
        if name in ANSWERS:
            return ANSWERS[name]
        raise AttributeError(name)
    return method

DUNDERS = ["__repr__", "__str__", "__len__", "__iter__", "__getattr__", "__eq__", "__hash__",
           "__format__", "__bool__", "__index__", "__lt__", "__getitem__", "__contains__",
           "__sizeof__", "__dir__", "__call__", "__get__", "__reduce_ex__"]

class Meta(type):
    def __getattribute__(cls, name):
        calls.append(("Meta", name))
        return type.__getattribute__(cls, name)

def _getattribute(self, name):
    calls.append(("Spy", "." + name))
    return object.__getattribute__(self, name)

body = {n: spying(n) for n in DUNDERS}
body["__class__"] = property(lambda self: calls.append(("Spy", "__class__")) or dict)
body["__getattribute__"] = _getattribute
Spy = Meta("Spy", (), body)
spy = Spy()

class SpyDict(dict):
    locals().update({n: spying(n) for n in
                     ("__repr__", "__len__", "__iter__", "__getitem__", "items", "keys", "get")})

class SpyList(list):
    locals().update({n: spying(n) for n in ("__repr__", "__len__", "__iter__", "__getitem__")})

class Plain(dict):
    "A dict subclass that keeps dict's lookup."

class Proxy:
    def __getattr__(self, name):
        calls.append(("Proxy", name))
        return 1

class Descriptor:
    def __get__(self, obj, cls):
        calls.append(("Descriptor", "__get__"))
        return 1
    def __set__(self, obj, value):
        pass

class TZ(datetime.tzinfo):
    def utcoffset(self, when):
        calls.append(("TZ", "utcoffset"))
        return datetime.timedelta(0)
    def dst(self, when):
        calls.append(("TZ", "dst"))
        return datetime.timedelta(0)
    def tzname(self, when):
        calls.append(("TZ", "tzname"))
        return "spy"

class Slots:
    __slots__ = ("a", "b")

class Account:
    "A customer's account."
    kind = "retail"
    checker = Descriptor()
    def __init__(self, owner: str, limit: int = 100) -> None:
        self.owner = owner
        self.balance = spy
    @property
    def close_and_bill(self):
        calls.append(("Account", "close_and_bill"))
        return 0
    @functools.cached_property
    def report(self):
        calls.append(("Account", "report"))
        return 0
    def pay(self, amount: float, note: Spy = spy) -> Spy:
        "Pay an amount."
    @staticmethod
    def rate() -> float: ...
    @classmethod
    def open(cls, owner: "str") -> "Account": ...

class Colliding:
    "Equal to the string 'k' by hash, with an __eq__ that records its calls."
    def __hash__(self):
        return hash("k")
    __eq__ = spying("__eq__")

def default_spy(a, b=spy, *rest, c: Spy = spy, **more) -> Spy:
    "Takes spies."

acct = Account("ada")
collide = {Colliding(): "spy key", "k": "string key", 1: "one"}
nested = {spy: spy, "list": [spy, (spy,)], "deep": {"deeper": {"deepest": [spy]}}}
spy_dict, spy_list, plain_dict = SpyDict(a=spy), SpyList([spy, 2]), Plain(x=1)
counts = collections.defaultdict(Spy, present=1)
counter = collections.Counter(a=1)
point = collections.namedtuple("Point", "x y")(spy, 2)
proxy = Proxy()
slots = Slots()
slots.a = spy
when = datetime.datetime(2024, 1, 1, tzinfo=TZ())
module = types.ModuleType("planted")
module.value = spy
module.__getattr__ = lambda name: calls.append(("planted", name))
partial = functools.partial(default_spy, spy)
cells = pd.DataFrame({"o": [spy, 1], "n": [1.5, 2.5]})
labels = pd.DataFrame({spy: [1]})
rows = pd.DataFrame({"a": [1]}, index=pd.Index([spy]))
named = pd.Series([1.5, 2.5], name=spy)
zoned = pd.Series(pd.to_datetime(["2024-01-01"]).tz_localize(TZ()))
objects = np.empty(3, dtype=object)
objects[0] = spy
floats = np.array([1.5, 2.5])
frame = pl.DataFrame({"o": pl.Series([spy], dtype=pl.Object)})
np.set_printoptions(formatter={"float": spying("numpy formatter")})
pd.set_option("display.float_format", spying("pandas float_format"))
"""

NAMES = [
    # (name, what the answer starts with, or the sentence it holds)
    ("spy", "spy: __main__.Spy\nan instance of __main__.Spy at 0x"),
    ("Spy", "Spy: __main__.Meta\nclass Spy()"),
    ("acct", "acct: __main__.Account\nan instance of __main__.Account at 0x"),
    ("acct.owner", "acct.owner: str\n'ada'"),
    ("acct.balance", "acct.balance: __main__.Spy\n"),
    ("acct.kind", "acct.kind: str\n'retail'"),
    ("acct.pay", "acct.pay: method\ndef Account.pay(amount: float, note: __main__.Spy = <"),
    ("acct.rate", "acct.rate: function\ndef Account.rate() -> float"),
    ("acct.open", "acct.open: method\ndef Account.open(owner: str) -> Account"),
    ("Account", "Account: type\nclass Account(owner: str, limit: int = 100) -> None\n"),
    ("Account.close_and_bill", "Account.close_and_bill: property\n"),
    ("acct.close_and_bill", "`close_and_bill` is a property: reading it runs its code"),
    ("acct.report", "`report` is read through functools.cached_property, which runs code"),
    ("acct.checker", "`checker` is read through __main__.Descriptor, which runs code"),
    ("spy.anything", "its class __main__.Spy reads attributes with __getattribute__"),
    ("Spy.anything", "its metaclass __main__.Meta reads attributes with its own code"),
    ("proxy.anything", "its class __main__.Proxy answers missing attributes with __getattr__"),
    ("module.value", "module.value: __main__.Spy\n"),
    ("module.missing", "the module answers names it does not hold with its own __getattr__"),
    ("collide['k']", "collide['k']: str\n'string key'"),
    ("collide[1]", "collide[1]: str\n'one'"),
    ("nested['deep']", "nested['deep']: dict\nlength: 1\n  'deeper': dict {'deepest': [<"),
    ("spy_dict['a']", "__main__.SpyDict looks keys up with its own __getitem__"),
    ("spy_list[0]", "__main__.SpyList reads items with its own __getitem__"),
    ("plain_dict['x']", "plain_dict['x']: int\n1"),
    ("counts['present']", "counts['present']: int\n1"),
    ("counts['absent']", "a defaultdict calls its default factory for a missing key and adds it"),
    ("counter['absent']", "`counter` has no key 'absent'"),
    ("point[0]", "point[0]: __main__.Spy\n"),
    ("slots.a", "slots.a: __main__.Spy\n"),
    ("slots.b", "`slots` has no attribute `b`"),
    ("cells['n']", "cells['n']: pandas.Series\n"),
    ("labels['a']", "a column label is an object whose hash and == are its own code"),
    ("default_spy", "default_spy: function\ndef default_spy(a, b=<__main__.Spy object>, *rest"),
]
QUIET = [
    "nested",
    "spy_dict",
    "spy_list",
    "counts",
    "point",
    "proxy",
    "slots",
    "when",
    "module",
    "partial",
    "cells",
    "labels",
    "rows",
    "named",
    "zoned",
    "objects",
    "floats",
    "frame",
]


@pytest.fixture
def shell(shell: InteractiveShell) -> Iterator[InteractiveShell]:
    """The shared shell with the spies planted, and numpy's and pandas' printing as it
    was after."""
    result = shell.run_cell(textwrap.dedent(SPIES))
    assert result.success, result.error_in_exec or result.error_before_exec
    shell.user_ns["calls"].clear()
    try:
        yield shell
    finally:
        shell.run_cell(
            "np.set_printoptions(formatter=None); pd.reset_option('display.float_format')"
        )


async def inspect(ip: InteractiveShell, name: str) -> tuple[str, bool]:
    return await call_tool(InspectVariableHandler(ip), Path.cwd(), {"name": name, "max_rows": 5})


async def test_listing_calls_none_of_the_persons_code(shell: InteractiveShell) -> None:
    text, ok = await call_tool(ListVariablesHandler(shell), Path.cwd(), {})
    assert ok, text
    lines = {line.split("  ")[0]: line for line in text.splitlines()}
    assert lines["spy"] == "spy  __main__.Spy  object (repr not called)"
    assert lines["acct"] == "acct  __main__.Account  attributes: owner, balance"
    assert lines["spy_list"] == "spy_list  __main__.SpyList  len 2"
    assert lines["objects"] == "objects  numpy.ndarray  (3,) object, 24 B"
    assert shell.user_ns["calls"] == []


@pytest.mark.parametrize(("name", "expected"), NAMES, ids=[n for n, _ in NAMES])
async def test_resolving_a_name_calls_none_of_the_persons_code(
    shell: InteractiveShell, name: str, expected: str
) -> None:
    text, ok = await inspect(shell, name)
    assert shell.user_ns["calls"] == []
    if ok:
        assert text.startswith(expected), text
    else:
        assert expected in text, text
        if "run its code" in text or "own" in text or "adds it" in text:
            assert text.endswith("run_python can read it, under the user's approval"), text


@pytest.mark.parametrize("name", QUIET)
async def test_describing_calls_none_of_the_persons_code(
    shell: InteractiveShell, name: str
) -> None:
    text, ok = await inspect(shell, name)
    assert ok, text
    assert shell.user_ns["calls"] == []
    assert re.search(r"\bspy\b", text) is None, text  # a spy's repr says "spy"


async def test_what_is_shown_instead(shell: InteractiveShell) -> None:
    text, _ = await inspect(shell, "acct")
    assert text.splitlines()[2:] == [
        "class doc: A customer's account.",
        "attributes (2):",
        "  owner: str 'ada'",
        "  balance: __main__.Spy <__main__.Spy object>",
        "computed when read, so not read here: checker, close_and_bill",
    ]
    text, _ = await inspect(shell, "cells")
    assert text.endswith(
        "first rows not shown: column 0 holds a __main__.Spy, whose text only its own code "
        "makes; run_python can print them, under the user's approval"
    )
    text, _ = await inspect(shell, "floats")  # numpy's own formatter, not the person's
    assert text.endswith("values:\n[1.5 2.5]")
    text, _ = await inspect(shell, "cells['n']")  # pandas without display.float_format
    assert text.endswith("all 2 rows:\n0    1.5\n1    2.5")
    text, _ = await inspect(shell, "zoned")
    assert "one of its dtypes (or time zones) is a class of the person's own" in text
    text, _ = await inspect(shell, "point")
    assert text.splitlines()[1:] == ["length: 2", "  __main__.Spy <__main__.Spy object>", "  int 2"]


def test_a_plain_lookup_would_have_run_code(shell: InteractiveShell) -> None:
    """The colliding key is stored first, so a dict lookup of 'k' would compare with it."""
    assert shell.user_ns["collide"]["k"] == "string key"
    # what a lookup does: compare with the colliding key (once or, for some hash seeds whose
    # probe meets it again, twice)
    calls = shell.user_ns["calls"]
    assert calls and set(calls) == {("Colliding", "__eq__")}, calls
