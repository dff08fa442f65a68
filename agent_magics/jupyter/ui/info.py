"""Texts of the ``%agent`` line commands (status, tools): functions of the settings (and,
for the sandbox line, of the mechanism this machine offers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_magics.agent.compact_trigger import ContextState
from agent_magics.agent.providers import resolve_provider
from agent_magics.config import SessionConfig
from agent_magics.errors import ConfigError, for_person
from agent_magics.events import Usage
from agent_magics.transcript.calls import one_line

PIN_NOTE = (
    "the first policy seen for this notebook, which a later one can only make stricter; "
    "to loosen it, a teacher deletes this file and restarts the kernel"
)
"""What ``%agent status`` says of a notebook's pinned policy (see
:mod:`agent_magics.teaching.pins`)."""


def status_text(config: SessionConfig, usage: Usage, turn: str, mode: str) -> str:
    """What ``%agent status`` prints."""
    return "\n".join(
        [
            f"model:           {model_text(config)}",
            f"approval policy: {config.approval_policy.value}",
            f"sandbox:         {config.sandbox_mode.value} ({sandbox_text(config)})",
            f"cwd:             {config.cwd}",
            f"tokens used:     {usage.total_tokens:,} ({usage.input_tokens:,} in, "
            f"{usage.output_tokens:,} out)",
            f"turn:            {turn}",
            f"mode:            {mode}",
        ]
    )


def context_line(context: ContextState) -> str:
    """How full the model's window is: ``12,480 tokens, 41% of a 30,000-token window``."""
    told = f"{context.tokens:,} tokens"
    if context.full:
        return f"{told}; the server said the last request did not fit (the next compacts)"
    if not context.window:
        return f"{told} (the model's window is unknown)"
    share = round(100 * context.tokens / context.window)
    return f"{told}, {share}% of a {context.window:,}-token window"


def sandbox_text(config: SessionConfig) -> str:
    """What confines commands: the mechanism at work, or why none does (every command
    then asks), or nothing under danger-full-access."""
    from agent_magics.protocol.approval import SandboxMode
    from agent_magics.tools.sandbox.platform import probe

    if config.sandbox_mode is SandboxMode.DANGER_FULL_ACCESS:
        return "commands are not confined"
    mechanism = probe()
    if mechanism.kind is None:
        return f"no mechanism works here, so every command asks first: {mechanism.detail}"
    return f"commands confined by {mechanism.detail}"


def model_text(config: SessionConfig) -> str:
    """The model a turn would talk to and how, or the sentence saying there is none."""
    try:
        provider = resolve_provider(config)
    except ConfigError as exc:
        return f"none. {exc}"
    if provider == "replay" and config.provider == "auto":
        return f"none configured, so offline: the recording {config.offline_recording}"
    if provider == "replay":
        where = config.replay_path or "the demo recording shipped with the package"
        return f"{config.model} (replay of {where}, offline)"
    return f"{config.model} ({provider} at {config.base_url})"


def no_arguments_text(word: str, given: str) -> str:
    """What a line command that takes no arguments says when it is given some (one line;
    it did not run, so nothing was done half as meant)."""
    text = for_person(f"%agent {word} takes no arguments, so it did not run (given: {given}).")
    if word == "tools":
        text += (
            " It lists the tools of the current settings; a cell's options change them for "
            "this and later cells (e.g. %%agent --provider chat)."
        )
    return text


def recording_text(config: SessionConfig, shown: str | None) -> str:
    """What ``%agent recording`` says: whether the turns will play the recording
    (no model configured) or talk to a live model."""
    if shown is None:
        return for_person("no recording is set; %agent recording PATH sets one.")
    try:
        provider = resolve_provider(config)
    except ConfigError as exc:
        return for_person(exc)
    if provider == "replay" and config.provider == "auto":
        if not Path(str(config.offline_recording)).is_file():
            return for_person(
                f"no model is configured and there is no recording at {shown}; set "
                "OPENAI_API_KEY (or OPENAI_BASE_URL) and restart the kernel to use a live model."
            )
        return for_person(
            f"no model is configured, so the agent plays the recording {shown}: the "
            "model's answers were recorded, the tools run here for real. To use a live model, "
            "set OPENAI_API_KEY (or OPENAI_BASE_URL and AGENT_MAGICS_MODEL) and restart the kernel."
        )
    return for_person(f"a model is configured, so {shown} is not played: {model_text(config)}.")


NO_WEB_SEARCH_ON_CHAT = (
    "web_search           not offered: a Chat Completions server has no hosted search"
)


NOT_ON_CHAT = "not offered: a Chat Completions server has no namespaced tools"


def tools_text(specs: list[dict[str, Any]], provider: str = "responses") -> str:
    """One line per tool the model is offered: name and the first line of its description
    (a namespace, such as the sub-agents', cannot be sent to a Chat Completions server)."""
    lines = []
    for spec in specs:
        name = str(spec.get("name") or spec.get("type") or "?")
        about = one_line(str(spec.get("description") or _hosted(spec)), 100)
        if provider == "chat" and spec.get("type") == "namespace":
            about = NOT_ON_CHAT
        lines.append(f"{name:<20} {about}".rstrip())
    return "\n".join(lines) or "(no tools)"


def _hosted(spec: dict[str, Any]) -> str:
    """A hosted tool's spec has no description: say what it is, and the search's mode."""
    if spec.get("type") != "web_search":
        return ""
    mode = "live" if spec.get("external_web_access") else "cached"
    return f"The model server's own web search ({mode} results), run by the server."
