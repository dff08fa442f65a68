"""A teacher's policy as data: parsing, the strictest of several, and holding settings to it
(fast; the end-to-end tests through real turns are in tests/teaching/test_teaching_kernel.py)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from agent_magics.config import load_config
from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode
from agent_magics.teaching.bounds import PolicyRefused, bind, summary
from agent_magics.teaching.guard import PolicyGuard
from agent_magics.teaching.pins import PINNED, pin_file
from agent_magics.teaching.policy import CoursePolicy, merge, parse
from agent_magics.teaching.sources import notebook_policy, site_policy

NB = "this notebook's metadata"


def write_notebook(path: Path, policy: object) -> Path:
    path.write_text(json.dumps({"cells": [], "metadata": {"agent_magics": policy}}))
    return path


def test_parse_takes_every_key_and_says_where_each_came_from() -> None:
    policy = parse(
        {
            "enabled": True,
            "allowed_tools": ["exec_command", "mcp__time__now"],
            "denied_tools": ["apply_patch"],
            "max_approval_policy": "on-request",
            "max_sandbox": "workspace-write",
            "run_python": False,
            "solution_cells": "withhold",
            "session_id": "abc",  # written by an export: no part of a policy
        },
        NB,
    )
    assert policy.allowed_tools == ("exec_command", "mcp__time__now")
    assert policy.max_approval_policy is ApprovalPolicy.ON_REQUEST
    assert policy.max_sandbox is SandboxMode.WORKSPACE_WRITE
    assert (policy.run_python, policy.solution_cells, policy.problems) == (False, "withhold", ())
    assert policy.where("max_sandbox") == NB and policy.enabled


@pytest.mark.parametrize(
    ("data", "why"),
    [
        pytest.param({"run_python": "no"}, "run_python must be true or false, not 'no'", id="type"),
        pytest.param({"agent": False}, "unknown key(s) 'agent'", id="unknown-key"),
        pytest.param({"denied_tools": ["rm"]}, "names unknown tool(s) 'rm'", id="tool"),
        pytest.param({"allowed_tools": "exec_command"}, "must be a list of tool names", id="list"),
        pytest.param({"max_sandbox": "none"}, "max_sandbox must be one of read-only", id="choice"),
        pytest.param(["enabled"], "it must be a table of settings, not list", id="not-a-table"),
    ],
)
def test_a_broken_policy_turns_the_agent_off_and_says_why(data: object, why: str) -> None:
    policy = parse(data, NB)
    assert not policy.enabled and policy.in_force
    with pytest.raises(PolicyRefused) as refused:
        bind(policy, load_config(options={"cwd": "."}, env={}))
    message = str(refused.value)
    assert message.startswith(f"The teacher's policy in {NB} cannot be read (")
    assert why in message and message.endswith("so the agent is off until it is fixed.")


def test_merge_is_the_strictest_field_by_field() -> None:
    site = parse(
        {"max_approval_policy": "untrusted", "allowed_tools": ["exec_command", "read_file"]},
        "the site file a",
    )
    notebook = parse(
        {
            "max_approval_policy": "never",
            "max_sandbox": "read-only",
            "allowed_tools": ["read_file", "apply_patch"],
            "denied_tools": ["view_image"],
            "run_python": False,
            "solution_cells": "read-only",
        },
        NB,
    )
    both = merge(site, notebook)
    assert both == merge(notebook, site)  # order does not matter
    assert both.max_approval_policy is ApprovalPolicy.UNTRUSTED
    assert both.where("max_approval_policy") == "the site file a"
    assert both.max_sandbox is SandboxMode.READ_ONLY and both.where("max_sandbox") == NB
    assert both.allowed_tools == ("read_file",) and both.denied_tools == ("view_image",)
    assert not both.run_python and both.solution_cells == "read-only"
    assert [t for t in ("read_file", "exec_command", "view_image") if both.offers(t)] == [
        "read_file"
    ]
    assert not merge(both, parse({"enabled": False}, NB)).enabled
    assert merge(both, parse({"solution_cells": "withhold"}, NB)).solution_cells == "withhold"
    assert merge().in_force is False


def test_chosen_settings_looser_than_the_policy_are_refused_defaults_lowered() -> None:
    policy = parse({"max_approval_policy": "on-request", "max_sandbox": "workspace-write"}, NB)
    loose = load_config(
        options={"cwd": ".", "approval_policy": "never", "sandbox_mode": "danger-full-access"},
        env={},
    )
    with pytest.raises(PolicyRefused) as refused:
        bind(policy, loose, cell=frozenset({"approval_policy", "sandbox_mode"}))
    assert str(refused.value) == (
        "The teacher's policy (this notebook's metadata) allows approval up to on-request and "
        "sandbox up to workspace-write; this cell asks for -a never -s danger-full-access."
    )
    # an environment variable is a choice too, and the cell did not make it
    env = {"AGENT_MAGICS_SANDBOX": "danger-full-access"}
    both = r"; these settings ask for -a never -s danger-full-access\.$"
    with pytest.raises(PolicyRefused, match=both):
        options = {"cwd": ".", "approval_policy": "never"}
        bind(policy, load_config(options=options, env=env), cell=frozenset({"approval_policy"}))
    # nothing chosen: the defaults are brought down without a word
    strict = parse({"max_approval_policy": "untrusted", "max_sandbox": "read-only"}, NB)
    lowered = bind(strict, load_config(options={"cwd": "."}, env={}))
    assert (lowered.approval_policy, lowered.sandbox_mode) == (
        ApprovalPolicy.UNTRUSTED,
        SandboxMode.READ_ONLY,
    )
    # tighter than the policy is fine
    tight = load_config(options={"cwd": ".", "sandbox_mode": "read-only"}, env={})
    assert bind(policy, tight).sandbox_mode is SandboxMode.READ_ONLY


def test_summary_is_one_short_line() -> None:
    policy = parse({"max_sandbox": "read-only", "run_python": False}, NB)
    assert summary(policy) == (
        "Teacher's policy (this notebook's metadata): sandbox up to read-only; no run_python."
    )
    assert summary(CoursePolicy()) is None
    off = summary(parse({"enabled": False}, "the site file x"))
    assert off == "The teacher's policy (the site file x) turns the agent off here."


def test_site_files_and_notebooks_are_read_where_they_exist(tmp_path: Path) -> None:
    a, b, missing = tmp_path / "a.toml", tmp_path / "b.toml", tmp_path / "none.toml"
    a.write_text('max_sandbox = "workspace-write"\n')
    b.write_text("run_python = false\nmax_sandbox = 'read-only'\n")
    policy = site_policy([a, b, missing])
    assert policy.max_sandbox is SandboxMode.READ_ONLY and not policy.run_python
    assert policy.where("max_sandbox") == f"the site file {b}"
    b.write_text("run_python = [")
    assert "not TOML" in site_policy([a, b]).problems[0]
    assert notebook_policy(None) == CoursePolicy() == notebook_policy(missing)
    nb = write_notebook(tmp_path / "n.ipynb", {"run_python": False})
    assert not notebook_policy(nb).run_python
    (tmp_path / "bad.ipynb").write_text("{")
    assert not notebook_policy(tmp_path / "bad.ipynb").enabled


def test_the_guard_keeps_the_strictest_policy_it_has_seen(tmp_path: Path) -> None:
    nb = write_notebook(tmp_path / "n.ipynb", {"max_sandbox": "read-only", "run_python": False})
    guard = PolicyGuard(lambda: nb, site_files=[], pins=tmp_path / "pins")
    write_notebook(nb, {})  # a turn took the policy out of the metadata
    assert guard.read().max_sandbox is SandboxMode.READ_ONLY and not guard.seen.run_python
    write_notebook(nb, {"enabled": False})  # ...or made it stricter: that counts
    assert not guard.read().enabled


def test_the_first_policy_of_a_notebook_is_pinned_and_holds_in_the_next_guard(
    tmp_path: Path,
) -> None:
    """A new guard (a new kernel) reads a notebook whose policy was loosened meanwhile:
    the pin the first guard left holds; a stricter notebook still counts."""
    pins, nb = tmp_path / "pins", write_notebook(tmp_path / "n.ipynb", {"run_python": False})
    PolicyGuard(lambda: nb, site_files=[], pins=pins)
    pinned = json.loads(pin_file(nb, pins).read_text())
    assert pinned == {"notebook": str(nb), "policy": {"run_python": False}}
    write_notebook(nb, {"run_python": True})
    guard = PolicyGuard(lambda: nb, site_files=[], pins=pins)
    assert not guard.seen.run_python and guard.seen.where("run_python") == PINNED
    assert guard.pin() == pin_file(nb, pins)
    write_notebook(nb, {"run_python": True, "max_sandbox": "read-only"})
    assert guard.read().max_sandbox is SandboxMode.READ_ONLY and not guard.seen.run_python
    assert json.loads(pin_file(nb, pins).read_text()) == pinned  # the first one stays


def test_no_pin_for_a_default_or_broken_policy_and_a_damaged_pin_turns_the_agent_off(
    tmp_path: Path,
) -> None:
    pins = tmp_path / "pins"
    plain = write_notebook(tmp_path / "plain.ipynb", {"graded_turns": []})
    broken = write_notebook(tmp_path / "broken.ipynb", {"run_python": "no"})
    for nb in (plain, broken):
        PolicyGuard(lambda nb=nb: nb, site_files=[], pins=pins)
        assert not pin_file(nb, pins).exists()
    nb = write_notebook(tmp_path / "n.ipynb", {"run_python": False})
    PolicyGuard(lambda: nb, site_files=[], pins=pins)
    pin_file(nb, pins).write_text("{")
    seen = PolicyGuard(lambda: nb, site_files=[], pins=pins).seen
    assert not seen.enabled
    assert f"{PINNED} ({pin_file(nb, pins)}) cannot be read" in seen.problems[0]


def test_a_notebook_caught_mid_save_is_read_from_its_last_save(tmp_path: Path) -> None:
    """Jupyter writes a notebook in place and keeps the previous save as ``.~NAME``
    until it is done; during Run All it saves often. A read caught mid-write must not
    turn the agent off (it did, in JupyterLab, once in a few runs)."""
    notebook = tmp_path / "lesson.ipynb"
    saved = {"metadata": {"agent_magics": {"run_python": False}}, "cells": []}
    notebook.write_text(json.dumps(saved)[:20])  # half written
    (tmp_path / ".~lesson.ipynb").write_text(json.dumps(saved))
    policy = notebook_policy(notebook)
    assert policy.enabled and not policy.run_python


def test_a_notebook_whose_save_finishes_a_moment_later_is_read(tmp_path: Path) -> None:
    notebook = tmp_path / "lesson.ipynb"
    saved = {"metadata": {"agent_magics": {"max_sandbox": "read-only"}}, "cells": []}
    notebook.write_text("")
    done = threading.Timer(0.2, lambda: notebook.write_text(json.dumps(saved)))
    done.start()
    try:
        policy = notebook_policy(notebook)
    finally:
        done.join()
    assert policy.enabled and policy.max_sandbox is SandboxMode.READ_ONLY
