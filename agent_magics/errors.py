"""One exception tree, split by who acts next, and the one voice that words it for people.

    AgentMagicsError
    ├── RespondToModel        the model can fix it: the text goes back as the tool output
    │   ├── ArgumentError     a tool call's arguments did not decode
    │   └── LiveUnavailable   (tools.notebook.document) the open notebook's editor is not
    │                         reachable, so the edit did not happen
    ├── UserError             a person must act: one clear sentence, no traceback
    │   ├── ConfigError       a bad option or config value
    │   ├── ModelError        the model server refused (no key, unknown model, bad request),
    │   │   │                 or answered what it would answer again (a malformed stream)
    │   │   └── ContextWindowFull  the conversation no longer fits the model's window
    │   ├── ConnectionFailed  the model server could not be reached (after retries)
    │   ├── PolicyRefused     (teaching.bounds) a teacher's policy does not let the turn start
    │   ├── ToolDefinitionError  (tools.functions.schema) a function cannot be offered as a tool
    │   └── AgentTurnFailed   (jupyter.ui.runner) the turn a cell or ``ask`` waited for
    │                         failed: it carries the sentence the turn ended with
    ├── TurnAborted           the person stopped the turn (Abort turn, kernel interrupt)
    └── Fatal                 a bug or a broken invariant: the turn ends with the message

Every error that leaves a public entry point (the ``%%agent`` and ``%agent`` magics,
``agent-magics`` and its subcommands, ``ask``, ``ask_async``, ``Session``) is in this
tree, so ``except AgentMagicsError`` catches what the package raises on purpose. An
exception raised and caught inside one subsystem (a parser giving up, a timeout turned
into a retry) is private to it: its name starts with an underscore, or it is a value a
subsystem's own callers word in their own terms (``StreamFailed`` for the model clients,
``PatchError`` for apply_patch, whose text the model reads as Codex writes it).

Nothing here logs or prints; the caller decides how to show an error. What a person
reads is made by :func:`for_person`, the one place that writes who is speaking.
"""

from __future__ import annotations

AGENT = "agent"
"""Who speaks in a notebook (the magics, their line commands, ``%agent`` messages)."""
PROGRAM = "agent-magics"
"""Who speaks on a terminal (``agent-magics exec`` and the other subcommands)."""


def for_person(what: str | BaseException, speaker: str = AGENT) -> str:
    """The line a person reads: ``what`` (a sentence, or an error's own) after who says it,
    ``agent: `` in a notebook or ``agent-magics: `` on a terminal (``speaker``). The text
    is kept as it is; a template's ``{}`` stays for a later ``format``."""
    return f"{speaker}: {what}"


class AgentMagicsError(Exception):
    """Base of every error this package raises on purpose."""


class RespondToModel(AgentMagicsError):
    """The model made a mistake it can correct; ``str(self)`` is sent back as the output."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ArgumentError(RespondToModel):
    """The arguments of a function call could not be decoded."""


class UserError(AgentMagicsError):
    """A person must act (fix a setting, start a server); the message is one sentence.

    ``codex_text`` is how Codex words the same failure where a model reads it (a
    sub-agent's ``errored`` status): people get our sentence, the model Codex's text."""

    def __init__(self, message: str, *, codex_text: str | None = None) -> None:
        super().__init__(message)
        self.codex_text = codex_text


class ConfigError(UserError):
    """An option, ``-c key=value`` or config file value is invalid."""


class ModelError(UserError):
    """The model server answered with an error a person must fix (401, 404, 400...)."""


class ContextWindowFull(ModelError):
    """The model server said the request is longer than the model's context window
    (``context_length_exceeded``, or a local server's words for it)."""


class ConnectionFailed(UserError):
    """The model server could not be reached, or kept failing, after the retries."""


class TurnAborted(AgentMagicsError):
    """The turn was stopped by the person (a click on Abort turn or a kernel interrupt)."""


class Fatal(AgentMagicsError):
    """A broken invariant, e.g. a tool called with a payload kind it cannot take."""


__all__ = [
    "AGENT",
    "PROGRAM",
    "AgentMagicsError",
    "ArgumentError",
    "ConfigError",
    "ConnectionFailed",
    "ContextWindowFull",
    "Fatal",
    "ModelError",
    "RespondToModel",
    "TurnAborted",
    "UserError",
    "for_person",
]
