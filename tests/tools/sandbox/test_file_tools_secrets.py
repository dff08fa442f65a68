"""The agent's own file tools keep off what the sandbox hides from commands: they run in
the kernel's (or ``agent-magics exec``'s) own process, outside any sandbox, so the
session signing key, Jupyter's runtime files and the ``/proc`` entries of the processes
running the agent (their environment holds the API key) must be refused by each of them,
not left to the redaction (which knows a few forms of the key) or to chance.

Before: read_file printed the key (scrubbed only because it is written in hex);
grep_files said whether the key matched a pattern, one bit per call; apply_patch told a
right guess of the key's line from a wrong one; view_image and read_notebook opened it.
End to end through ``agent-magics exec`` with a scripted model on 127.0.0.1."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from agent_magics.testing import ScriptedResponsesServer, custom_tool_call, function_call, message
from agent_magics.tools.sandbox.platform import OFF_LIMITS
from tests.helpers.leaks import leaked
from tests.helpers.sandbox import Arena, make_key

pytestmark = pytest.mark.slow

TOOLS = '["read_file", "list_dir", "grep_files", "read_notebook", "edit_notebook"]'
REFUSED = OFF_LIMITS.split("{path}", 1)[1]


def guess(path: str, line: str, call_id: str) -> dict[str, object]:
    patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n-{line}\n+x\n*** End Patch\n"
    return custom_tool_call("apply_patch", patch, call_id)


def test_no_file_tool_reads_the_signing_key(arena: Arena) -> None:
    key = make_key(arena.home)
    path = str(arena.home / ".agent_magics" / "session_key")
    calls = [
        function_call("read_file", {"file_path": path}, "read"),
        function_call("grep_files", {"pattern": key[:12], "path": str(arena.home)}, "grep"),
        function_call("grep_files", {"pattern": key[:12], "path": path}, "grep_file"),
        function_call("view_image", {"path": path}, "image"),
        function_call("read_notebook", {"path": path}, "notebook"),
        function_call("read_file", {"file_path": "/proc/self/environ"}, "own_env"),
        function_call("read_file", {"file_path": f"/proc/{os.getpid()}/environ"}, "parent_env"),
        guess(path, key, "right_guess"),
        guess(path, "0" * 64, "wrong_guess"),
    ]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(arena.home), "OPENAI_API_KEY": "sk-test"}
    with ScriptedResponsesServer([calls, [message("done")]]) as server:
        argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
        argv += ["--base-url", server.base_url, "-m", "m", "-a", "never", "-C", str(arena.ws)]
        argv += ["-c", f"experimental_supported_tools={TOOLS}", "-c", "sessions_dir=false"]
        done = subprocess.run(
            [*argv, "try it"], env=env, cwd=arena.ws, capture_output=True, text=True,
            timeout=120, stdin=subprocess.DEVNULL,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        said = server.outputs(1)
    refused = ("read", "grep_file", "image", "notebook", "own_env", "parent_env")
    for call in (*refused, "right_guess", "wrong_guess"):
        assert REFUSED in said[call], (call, said[call])
    assert said["right_guess"] == said["wrong_guess"]  # no guess is told from another
    assert path not in said["grep"]  # the search found other files, never the key
    answers = json.dumps(said)  # (the calls hold the model's guesses of the key, not these)
    assert leaked(answers, key, key[::-1]) == []
