"""The command tools' specs: ``exec_command``, ``write_stdin``, ``shell``, ``shell_command``."""

from __future__ import annotations

from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.spec import (
    FunctionSpec,
    JsonSchema,
    ToolSpec,
    array,
    boolean,
    number,
    obj,
    string,
)

EXEC_DESCRIPTION = (
    "Run a shell command in a terminal-like session. Returns its output, or a session ID "
    "to keep talking to it when it is still running."
)
STDIN_DESCRIPTION = (
    "Send characters to a running exec_command session and return the output it produced."
)
BUDGET = "Most tokens of output to return (default 10000)."

SHELL_DESCRIPTION = (
    "Run a command and return its output.\n"
    '- `command` is an argv handed to execvp(); wrap shell syntax as ["bash", "-lc", "..."].\n'
    "- Set `workdir` rather than using `cd`, unless there is no other way."
)
SHELL_COMMAND_DESCRIPTION = (
    "Run a shell script in the user's shell and return its output.\n"
    "- Set `workdir` rather than using `cd`, unless there is no other way."
)


def command_props(sandbox_permissions: JsonSchema, *, login: bool) -> dict[str, JsonSchema]:
    """The properties the command tools share: ``workdir``, those of
    :class:`~agent_magics.tools.handlers.shell.EscalationArgs` (each tool words
    ``sandbox_permissions`` its own way) and, when ``login`` is offered, ``login``."""
    props = {
        "workdir": string("Folder to run in; the turn's working folder when omitted."),
        "sandbox_permissions": sandbox_permissions,
        "justification": string(
            "Only with `require_escalated`: the question to show the user when asking."
        ),
        "prefix_rule": array(
            string(),
            "Only with `require_escalated`: a command prefix the user may approve for later "
            'calls too, e.g. ["git", "pull"].',
        ),
    }
    if login:
        props["login"] = boolean(
            "Run the shell as a login shell (true, the default) or not (false)."
        )
    return props


def exec_command_spec(config: ToolsConfig) -> ToolSpec:
    props = {
        "cmd": string("The shell command to run."),
        "shell": string("Shell program to run the command with; the user's shell by default."),
        "tty": boolean(
            "Give the command a pseudo-terminal (needed for interactive input); "
            "plain pipes when false or omitted."
        ),
        "yield_time_ms": number(
            "How long to wait for output before returning (default 10000 ms; 250-30000)."
        ),
        "max_output_tokens": number(BUDGET),
    }
    sandbox_permissions = {
        "type": "string",
        "description": (
            "`use_default` (the default) runs in the sandbox; `require_escalated` asks to "
            "run outside it."
        ),
        "enum": ["use_default", "require_escalated"],
    }
    props.update(command_props(sandbox_permissions, login=config.allow_login_shell))
    return FunctionSpec("exec_command", EXEC_DESCRIPTION, obj(props, ["cmd"]))


def write_stdin_spec(config: ToolsConfig) -> ToolSpec:
    props = {
        "session_id": number("The session ID exec_command returned."),
        "chars": string("Characters to type into the session; empty (default) just polls."),
        "yield_time_ms": number(
            "How long to wait for output: 250 ms by default for input (at most 30000); "
            "an empty poll waits 5000-300000 ms."
        ),
        "max_output_tokens": number(BUDGET),
    }
    return FunctionSpec("write_stdin", STDIN_DESCRIPTION, obj(props, ["session_id"]))


def _shell_props(login: bool) -> dict[str, JsonSchema]:
    sandbox_permissions = string(
        'Set to "require_escalated" to ask for running outside the sandbox; the default '
        'is "use_default".'
    )
    return {
        **command_props(sandbox_permissions, login=login),
        "timeout_ms": number("Stop the command after this many milliseconds (default 10000)."),
    }


def shell_spec(config: ToolsConfig) -> ToolSpec:
    props = _shell_props(login=False)
    props["command"] = array(string(), "The command and its arguments.")
    return FunctionSpec("shell", SHELL_DESCRIPTION, obj(props, ["command"]))


def shell_command_spec(config: ToolsConfig) -> ToolSpec:
    props = _shell_props(login=config.allow_login_shell)
    props["command"] = string("The script to run in the user's shell.")
    return FunctionSpec("shell_command", SHELL_COMMAND_DESCRIPTION, obj(props, ["command"]))
