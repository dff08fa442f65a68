"""A teacher's policy: what the agent may do in a course's notebooks.

A policy is data a teacher writes where a student's cell cannot reach it first: the
notebook's metadata (``metadata.agent_magics``) and a site file an administrator puts
on the machine (see :mod:`.sources`). Several policies combine by :func:`merge` into the
strictest of them, field by field, so adding a policy can only take rights away.

A policy that cannot be read is never taken as no policy: :func:`parse` turns it into
one that switches the agent off and says why (a typo in a teacher's file must not open
the agent up to a class).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, get_args

from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode

SolutionCells = Literal["edit", "read-only", "withhold"]

APPROVAL_ORDER = (
    ApprovalPolicy.UNTRUSTED,
    ApprovalPolicy.ON_FAILURE,
    ApprovalPolicy.ON_REQUEST,
    ApprovalPolicy.NEVER,
)
"""Approval policies from the strictest (asks most) to the loosest (asks never)."""
SANDBOX_ORDER = (
    SandboxMode.READ_ONLY,
    SandboxMode.WORKSPACE_WRITE,
    SandboxMode.DANGER_FULL_ACCESS,
)
"""Sandbox modes from the strictest to the loosest."""
SOLUTION_ORDER: tuple[SolutionCells, ...] = get_args(SolutionCells)
"""What the agent may do with nbgrader solution cells, from the loosest to the strictest."""

SHELL_TOOLS = ("exec_command", "shell", "shell_command")
NAMESPACES: Mapping[str, tuple[str, ...]] = {
    "multi_agent_v1": ("spawn_agent", "send_input", "resume_agent", "wait_agent", "close_agent"),
}
"""Tools offered as one namespace: a policy names the namespace (all of its tools) or
each tool in it by its own name."""
GROUPS: Mapping[str, tuple[str, ...]] = {
    **{tool: (space,) for space, tools in NAMESPACES.items() for tool in tools},
    "local_shell": SHELL_TOOLS,  # a local_shell_call runs as a command: it goes with them
}
"""The names that also stand for a tool: its namespace, or the tools it goes with."""
KNOWN_TOOLS = frozenset(
    {
        *SHELL_TOOLS,
        "write_stdin",
        "local_shell",
        "apply_patch",
        "update_plan",
        "request_user_input",
        "view_image",
        "grep_files",
        "read_file",
        "list_dir",
        "read_notebook",
        "edit_notebook",
        "run_python",
        "run_cell",
        "list_variables",
        "inspect_variable",
        "list_mcp_resources",
        "list_mcp_resource_templates",
        "read_mcp_resource",
        "get_goal",
        "create_goal",
        "update_goal",
        "web_search",
        *NAMESPACES,
        *(tool for tools in NAMESPACES.values() for tool in tools),
    }
)
"""Tool names a policy may list: every tool a session can offer (a test walks a session
that offers them all); an MCP server's tools are named ``mcp__SERVER__TOOL``."""
MCP_PREFIX = "mcp__"


@dataclass(frozen=True)
class CoursePolicy:
    """The rules one source (or the strictest of several) sets; the defaults allow all.

    ``origins`` says where each field that is not a default came from ("this notebook's
    metadata", "the site file ..."), for the sentences a person reads; ``problems``
    holds why a source could not be read (the agent is then off)."""

    enabled: bool = True
    """False: the agent is off; a ``%%agent`` cell says so and no turn starts."""
    allowed_tools: tuple[str, ...] | None = None
    """The only tools the model is offered (None: all)."""
    denied_tools: tuple[str, ...] = ()
    """Tools the model is never offered."""
    max_approval_policy: ApprovalPolicy | None = None
    """The loosest approval policy a session may take (None: any)."""
    max_sandbox: SandboxMode | None = None
    """The loosest sandbox a session may take (None: any)."""
    run_python: bool = True
    """False: run_python and run_cell are not offered (the kernel's code runs outside
    every sandbox)."""
    solution_cells: SolutionCells = "edit"
    """nbgrader solution cells: the agent may edit them, only read them, or never see them."""
    origins: Mapping[str, str] = field(default_factory=dict, compare=False)
    problems: tuple[str, ...] = ()

    @property
    def in_force(self) -> bool:
        """Whether this policy takes anything away (a default policy does not)."""
        return self != CoursePolicy()

    def offers(self, tool: str) -> bool:
        """Whether the model may be offered ``tool``: named itself or by its group (see
        :data:`GROUPS`), not denied, and allowed when only some tools are; a namespace
        goes while any of its tools does."""
        names = {tool, *GROUPS.get(tool, ())}
        members = set(NAMESPACES.get(tool, ()))
        denied = set(self.denied_tools)
        if names & denied or (members and members <= denied):
            return False
        if tool in ("run_python", "run_cell") and not self.run_python:
            return False
        if self.allowed_tools is None:
            return True
        allowed = set(self.allowed_tools)
        return bool(names & allowed or members & allowed)

    def where(self, *names: str) -> str:
        """Where the fields ``names`` came from, in words ("this notebook's metadata")."""
        found = dict.fromkeys(self.origins[n] for n in names if n in self.origins)
        return " and ".join(found) or "this machine"


POLICY_KEYS = tuple(f.name for f in fields(CoursePolicy) if f.name not in ("origins", "problems"))
RECORD_KEYS = frozenset({"session_id", "exported", "graded_turns"})
"""Keys of ``metadata.agent_magics`` that the package itself writes and that are no part
of a policy (an exported session's notebook; the turns that touched graded cells)."""


class _PolicyProblem(ValueError):
    """A policy's text is not a policy; the message is part of one sentence."""


def _strings(key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
        raise _PolicyProblem(f"{key} must be a list of tool names")
    unknown = [v for v in value if v not in KNOWN_TOOLS and not v.startswith(MCP_PREFIX)]
    if unknown:
        raise _PolicyProblem(f"{key} names unknown tool(s) {', '.join(map(repr, unknown))}")
    return tuple(value)


def _choice(key: str, value: Any, order: Iterable[str]) -> Any:
    choices = [str(c) for c in order]
    if not isinstance(value, str) or value not in choices:
        raise _PolicyProblem(f"{key} must be one of {', '.join(choices)}, not {value!r}")
    return value


def _values(data: Mapping[str, Any]) -> dict[str, Any]:
    unknown = sorted(str(k) for k in data if k not in POLICY_KEYS and k not in RECORD_KEYS)
    if unknown:
        raise _PolicyProblem(f"unknown key(s) {', '.join(map(repr, unknown))}")
    values: dict[str, Any] = {}
    for key in ("enabled", "run_python"):
        if key in data:
            if not isinstance(data[key], bool):
                raise _PolicyProblem(f"{key} must be true or false, not {data[key]!r}")
            values[key] = data[key]
    for key in ("allowed_tools", "denied_tools"):
        if key in data:
            values[key] = _strings(key, data[key])
    if "max_approval_policy" in data:
        raw = _choice("max_approval_policy", data["max_approval_policy"], APPROVAL_ORDER)
        values["max_approval_policy"] = ApprovalPolicy(raw)
    if "max_sandbox" in data:
        values["max_sandbox"] = SandboxMode(
            _choice("max_sandbox", data["max_sandbox"], SANDBOX_ORDER)
        )
    if "solution_cells" in data:
        values["solution_cells"] = _choice("solution_cells", data["solution_cells"], SOLUTION_ORDER)
    return values


def broken(source: str, problem: str) -> CoursePolicy:
    """The strict reading of a policy that cannot be read: the agent is off, and why."""
    reason = f"the teacher's policy in {source} cannot be read ({problem})"
    return CoursePolicy(enabled=False, origins={"enabled": source}, problems=(reason,))


def parse(data: Any, source: str) -> CoursePolicy:
    """The policy ``data`` (a table of :data:`POLICY_KEYS`) sets, ``source`` naming where it
    was found; anything that is not a valid policy gives :func:`broken`'s."""
    if not isinstance(data, Mapping):
        return broken(source, f"it must be a table of settings, not {type(data).__name__}")
    try:
        values = _values(data)
    except _PolicyProblem as exc:
        return broken(source, str(exc))
    return CoursePolicy(**values, origins=dict.fromkeys(values, source))


def _strictest(values: list[Any], order: tuple[Any, ...]) -> Any:
    return min(values, key=order.index) if values else None


def merge(*policies: CoursePolicy) -> CoursePolicy:
    """The strictest of ``policies`` field by field, each field keeping its origin: the
    agent on only if every one leaves it on, the tools every one allows and none denies,
    the strictest approval and sandbox limits, run_python only if all allow it."""
    origins: dict[str, str] = {}

    def pick(name: str, winner: Any) -> Any:
        for p in policies:
            if getattr(p, name) == winner and name in p.origins:
                origins.setdefault(name, p.origins[name])
        return winner

    allowed = [p.allowed_tools for p in policies if p.allowed_tools is not None]
    both: tuple[str, ...] | None = None
    if allowed:
        both = tuple(t for t in allowed[0] if all(t in a for a in allowed[1:]))
        for p in policies:
            if p.allowed_tools is not None and "allowed_tools" in p.origins:
                origins.setdefault("allowed_tools", p.origins["allowed_tools"])
    denied = tuple(dict.fromkeys(t for p in policies for t in p.denied_tools))
    for p in policies:
        if p.denied_tools and "denied_tools" in p.origins:
            origins.setdefault("denied_tools", p.origins["denied_tools"])
    approvals = [p.max_approval_policy for p in policies if p.max_approval_policy is not None]
    sandboxes = [p.max_sandbox for p in policies if p.max_sandbox is not None]
    solutions = [p.solution_cells for p in policies]
    return CoursePolicy(
        enabled=pick("enabled", all(p.enabled for p in policies)),
        allowed_tools=both,
        denied_tools=denied,
        max_approval_policy=pick("max_approval_policy", _strictest(approvals, APPROVAL_ORDER)),
        max_sandbox=pick("max_sandbox", _strictest(sandboxes, SANDBOX_ORDER)),
        run_python=pick("run_python", all(p.run_python for p in policies)),
        solution_cells=pick(
            "solution_cells", max(solutions, key=SOLUTION_ORDER.index, default="edit")
        ),
        origins=origins,
        problems=tuple(dict.fromkeys(x for p in policies for x in p.problems)),
    )
