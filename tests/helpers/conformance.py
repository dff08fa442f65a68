"""What the tests that replay Codex's conformance cases through our handlers share: the
harness's modules, the cases as parameters or as a list, building a case's workspace, comparing the
outputs with the golden, and comparing a tool's schema with Codex's.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import warnings
from collections.abc import Callable, Collection, Iterable
from pathlib import Path
from typing import Any

import pytest

from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.registry import ToolHandler
from tests.helpers.paths import CONFORMANCE as CONF

# The conformance harness's own modules (tests/conformance/harness.py, compare.py).
if str(CONF) not in sys.path:
    sys.path.insert(0, str(CONF))
harness: Any = importlib.import_module("harness")
compare: Any = importlib.import_module("compare")
mock_server: Any = importlib.import_module("mock_server")


def golden_rels() -> list[str]:
    """Every recorded case, as ``group/name.json`` below ``goldens/`` (and ``cases/``)."""
    root = CONF / "goldens"
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.json"))


# Cases whose recorded bytes hang on the kernel's timing, not on our code: a PTY's echo
# of the input is made by a kernel worker after write() returns, so under load ``cat``
# can copy the first lines back before the rest is echoed and the kept head of a
# truncated output reads "row 0, row 1, row 0, row 1, ..." instead of the echo first.
# Such a case is run again, at most ``RACE_RUNS`` times in all, until it matches.
ECHO_RACES = frozenset({"write_stdin/max_output_tokens.json"})
RACE_RUNS = 3


def matches_golden(rel: str, compare_once: Callable[[], list[str]]) -> list[str]:
    """``compare_once``'s problems for case ``rel``, tried again while it differs if the
    case is one of :data:`ECHO_RACES` (the last run's problems are returned)."""
    runs = RACE_RUNS if rel in ECHO_RACES else 1
    problems: list[str] = []
    for _ in range(runs):
        problems = compare_once()
        if not problems:
            break
    return problems


def case_params(
    groups: Iterable[str],
    keep: Callable[[dict[str, Any]], bool] = lambda case: True,
    extra: Iterable[str] = (),
) -> list[Any]:
    """The cases of ``groups`` that ``keep`` accepts, then the ``extra`` ones, as
    ``group/name.json`` parameters with the id ``group/name``."""
    rels = [
        f"{group}/{path.name}"
        for group in groups
        for path in sorted((CONF / "cases" / group).glob("*.json"))
        if keep(json.loads(path.read_text()))
    ]
    return [pytest.param(rel, id=rel.removesuffix(".json")) for rel in [*rels, *extra]]


def build_case(rel: str, ws: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Case ``rel`` and its golden, with the case's files and setup commands made in ``ws``."""
    case = json.loads((CONF / "cases" / rel).read_text())
    golden = json.loads((CONF / "goldens" / rel).read_text())
    harness.materialize_files(str(ws), case.get("files") or {})
    for command in case.get("setup") or []:
        subprocess.run(command, shell=True, cwd=ws, check=True)
    return case, golden


def golden_problems(
    golden: dict[str, Any],
    ws: Path,
    outputs: dict[str, Any],
    *,
    only: Collection[str] | None = None,
    workspace: bool = True,
) -> list[str]:
    """How ``outputs`` (and the workspace, unless told not to) differ from the golden,
    judging only the calls whose ids are in ``only`` when it is given."""
    if only is not None:
        outputs = {k: v for k, v in outputs.items() if k in only}
        golden = {**golden, "outputs": {k: v for k, v in golden["outputs"].items() if k in only}}
    candidate: dict[str, Any] = {"outputs": outputs}
    if workspace:
        with warnings.catch_warnings():  # the harness reads files without closing them
            warnings.simplefilter("ignore", ResourceWarning)
            candidate["workspace"] = harness.snapshot_tree(str(ws))
    problems: list[str] = compare.compare_case(golden, candidate, ws=str(ws))
    return problems


def without_descriptions(schema: Any) -> Any:
    if isinstance(schema, dict):
        return {k: without_descriptions(v) for k, v in schema.items() if k != "description"}
    if isinstance(schema, list):
        return [without_descriptions(v) for v in schema]
    return schema


def descriptions(schema: Any) -> list[str]:
    if isinstance(schema, dict):
        own = [schema["description"]] if isinstance(schema.get("description"), str) else []
        return own + [d for v in schema.values() for d in descriptions(v)]
    if isinstance(schema, list):
        return [d for v in schema for d in descriptions(v)]
    return []


def codex_spec(name: str, specs: str = "codex_tool_specs.json") -> dict[str, Any]:
    """The tool ``name`` as Codex offers it, from the recorded ``specs`` file."""
    codex = json.loads((CONF / specs).read_text())
    matches: list[dict[str, Any]] = [t for t in codex["tools"] if t.get("name") == name]
    [theirs] = matches
    return theirs


def assert_schema_in_own_words(handler: ToolHandler, specs: str) -> None:
    """The handler's spec is Codex's but for the descriptions: as many, none copied."""
    theirs = codex_spec(handler.name, specs)
    ours = handler.spec(ToolsConfig()).to_wire()
    assert without_descriptions(ours) == without_descriptions(theirs)
    assert len(descriptions(ours)) == len(descriptions(theirs))
    shared = set(descriptions(ours)) & set(descriptions(theirs))
    assert not shared, f"descriptions copied from Codex: {shared}"
