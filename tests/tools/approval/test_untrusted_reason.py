"""Why a command that reads only still asks under ``-a untrusted``, through a real turn
in a real kernel: ``ls`` named by a path in the working folder is known-safe by its
name, but the program it runs lies where commands may write (the model or the
repository may have put it there). The card says that, not that ``ls`` is no
known-safe command."""

from __future__ import annotations

import pytest

from agent_magics.testing import function_call, message
from tests.helpers.cards import run_turn
from tests.helpers.kernels import Kernel

pytestmark = pytest.mark.slow


def test_a_safe_name_run_from_a_writable_place_says_so(kernel: Kernel) -> None:
    fake = kernel.ws / "ls"
    fake.write_text("#!/bin/sh\necho planted > planted.txt\n")
    fake.chmod(0o755)
    script = [[function_call("exec_command", {"cmd": "./ls"}, "c1")], [message("ok")]]
    [first] = run_turn(kernel, script, "-a untrusted", ["Deny"])
    assert (
        "Why you are asked: The approval policy is untrusted: only commands known to be "
        "safe run without asking. This one would count, but the program `./ls` names "
        "lies where commands may write" in first
    )
    assert "not among them" not in first
    assert not (kernel.ws / "planted.txt").exists()
