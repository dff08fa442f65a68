"""``inspect_variable`` runs none of the person's code in a real kernel (both ipykernel
lines), under ``-a untrusted -s read-only``, where it asks no one: reading
``counts['injected']`` on a ``defaultdict`` would insert the key, reading the property
would bill the account (it writes a file), ``__getattr__`` and a dict subclass's
``__getitem__`` would write files too. What would need the person's code is refused
with one sentence that points to ``run_python``."""

from __future__ import annotations

import pytest

from agent_magics.testing import ScriptedResponsesServer, Turn, function_call, message
from tests.helpers.kernels import TURN_DONE, Kernel, agent_cell

pytestmark = pytest.mark.slow

CELL = """
from collections import defaultdict

counts = defaultdict(int)
counts["seen"] += 1

class Account:
    owner = "ada"

    @property
    def close_and_bill(self):
        with open("billed.txt", "w") as out:
            out.write("billed")
        return "closed"

class Proxy:
    def __getattr__(self, name):
        open("proxied.txt", "w").close()
        return name

class Ledger(dict):
    def __getitem__(self, key):
        open("looked-up.txt", "w").close()
        return dict.__getitem__(self, key)

acct, proxy, ledger = Account(), Proxy(), Ledger(x=1)
"""
RUN_PYTHON = "run_python can read it, under the user's approval"
WRITTEN = ["billed.txt", "proxied.txt", "looked-up.txt"]


def inspect(name: str, call_id: str) -> dict[str, object]:
    return function_call("inspect_variable", {"name": name}, call_id)


def test_inspect_variable_runs_none_of_the_persons_code(kernel: Kernel) -> None:
    assert "error" not in [m["msg_type"] for m in kernel.run(CELL)]
    script: list[Turn] = [
        [
            inspect("counts['injected']", "c1"),
            inspect("acct.close_and_bill", "c2"),
            inspect("counts['seen']", "c3"),
            inspect("acct.owner", "c4"),
            inspect("proxy.secret", "c5"),
            inspect("ledger['x']", "c6"),
        ],
        [message("done")],
    ]
    with ScriptedResponsesServer(script) as server:
        kernel.run(agent_cell(server.base_url, "-a untrusted -s read-only", "look around"))
        kernel.wait_for(lambda: len(server.requests) == 2)
        seen = server.outputs(1)
        assert seen["c1"] == (
            "cannot read `counts['injected']` without running the user's code (a defaultdict "
            f"calls its default factory for a missing key and adds it); {RUN_PYTHON}"
        )
        assert seen["c2"] == (
            "cannot read `acct.close_and_bill` without running the user's code "
            f"(`close_and_bill` is a property: reading it runs its code); {RUN_PYTHON}"
        )
        assert seen["c3"] == "counts['seen']: int\n1"
        assert seen["c4"] == "acct.owner: str\n'ada'"
        assert seen["c5"] == (
            "cannot read `proxy.secret` without running the user's code (its class "
            f"__main__.Proxy answers missing attributes with __getattr__); {RUN_PYTHON}"
        )
        assert seen["c6"] == (
            "cannot read `ledger['x']` without running the user's code (__main__.Ledger "
            f"looks keys up with its own __getitem__); {RUN_PYTHON}"
        )
        kernel.wait_for(lambda: kernel.shows(TURN_DONE))
        assert not kernel.buttons("Approve")  # nothing asked: nothing that needs asking ran
    assert kernel.value("sorted(counts)") == ["seen"]
    assert [name for name in WRITTEN if (kernel.ws / name).exists()] == []
