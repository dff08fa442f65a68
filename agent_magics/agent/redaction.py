"""The secrets of a session, kept out of tool outputs, events and MCP server logs.

Which secrets (:func:`session_secrets`):

1. the model server's API key;
2. what the MCP settings read as credentials: the variable named by
   ``bearer_token_env_var``, those named in ``env_http_headers``, the values of
   ``http_headers`` and of a stdio server's ``env`` whose name looks secret;
3. every variable of our environment whose name looks secret (it contains ``KEY``,
   ``TOKEN``, ``SECRET`` or ``PASSW``: the first three are the patterns of Codex's
   ``shell_environment_policy`` default excludes), such as ``GITHUB_TOKEN`` or
   ``AWS_SECRET_ACCESS_KEY``;
   a value that is a path (``SSH_KEY_PATH=/home/...``) is not a credential, and its
   pieces would eat other paths, so it is left alone; Jupyter's and JupyterHub's tokens
   (``JUPYTER_TOKEN``, ``JUPYTERHUB_API_TOKEN``, ``JPY_API_TOKEN``) are among them;
4. what the front end hands the session (a :data:`SecretSource`: Jupyter's tokens,
   signing keys and cookie secrets in the files of its runtime folder), asked again at
   each turn's start and after each tool call, when a server or kernel may have started
   (:meth:`SessionRedactor.refresh`), and what the process registers
   (:func:`register_secrets`: the signing key of the kernel the session runs in,
   wherever its connection file is; the token of a server the chat started);
5. the session signing key (:mod:`agent_magics.tools.sandbox.user_files`) as its file
   holds it and in base64, read again when the file changes: whoever holds it can
   forge a session file that ``resume last`` trusts.

Header names that look secret also include ``Authorization`` and ``Cookie``.

A value shorter than :data:`MIN_SECRET_LENGTH` is not a credential worth hiding and
would eat ordinary words (``1``, ``true``), so it is left alone.

Where: every tool output is scrubbed before it joins the history (what the model
reads), every event before a front end sees it (cards, the terminal, the saved
notebook), every line an MCP server writes to stderr before it reaches its log. The
settings are read again whenever the session's settings change.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agent_magics.config import SessionConfig, looks_secret
from agent_magics.events import Event, ToolCallFinished, ToolOutputDelta
from agent_magics.models.secret import Scrubber
from agent_magics.tools.context import ContentItem, ToolOutput
from agent_magics.tools.sandbox.user_files import signing_key_secrets

if TYPE_CHECKING:
    from agent_magics.mcp.config import McpServerConfig

MIN_SECRET_LENGTH = 8
PATH_STARTS = ("/", "~", "./", "../")  # environment values like these are paths


SecretSource = Callable[[], Sequence[str]]
"""Where a front end finds the secrets it knows of that may change during a session (a
server or kernel started later): cheap when nothing changed, as it is asked at each
turn's start and after each tool call."""


def no_secrets() -> tuple[str, ...]:
    """The source of a front end that knows of no secrets."""
    return ()


REGISTERED: list[str] = []
"""Secrets the process knows that no setting names (see :func:`register_secrets`)."""


def register_secrets(*values: str) -> None:
    """Scrub ``values`` from every session's outputs from now on (the kernel side
    registers its signing key: this layer does not import IPython)."""
    for value in values:
        if len(value.strip()) >= MIN_SECRET_LENGTH and value not in REGISTERED:
            REGISTERED.append(value)


def session_secrets(config: SessionConfig, environ: Mapping[str, str]) -> tuple[str, ...]:
    """Every secret of the session, each at least :data:`MIN_SECRET_LENGTH` long."""
    found = [config.key() or ""]
    found += [
        value
        for name, value in environ.items()
        if looks_secret(name) and not value.startswith(PATH_STARTS)
    ]
    for server in config.mcp_servers.values():
        found += _mcp_secrets(server, environ)
    return tuple(sorted({s for s in found if len(s.strip()) >= MIN_SECRET_LENGTH}))


def _mcp_secrets(server: McpServerConfig, environ: Mapping[str, str]) -> Iterator[str]:
    if server.bearer_token_env_var:
        yield environ.get(server.bearer_token_env_var, "")
    for var in server.env_http_headers.values():
        yield environ.get(var, "")
    for name, value in (*server.http_headers.items(), *server.env.items()):
        if looks_secret(name):
            yield value
            # "Bearer <token>" and "Basic <token>": the token alone is the secret too.
            yield value.partition(" ")[2]


class SessionRedactor:
    """The scrubber of a session's secrets, rebuilt when its settings change, a secret
    is registered, the front end's source (``found``) tells of others or the signing
    key's file changes."""

    def __init__(
        self,
        settings: Callable[[], SessionConfig],
        environ: Mapping[str, str] | None = None,
        found: SecretSource = no_secrets,
    ) -> None:
        self._settings = settings
        self._environ = os.environ if environ is None else environ
        self._source = found
        self._found = tuple(found())
        self._for: tuple[SessionConfig, int, tuple[str, ...]] | None = None
        self._scrub = Scrubber()

    def refresh(self) -> None:
        """Ask the front end's source again (a server or kernel may have started)."""
        self._found = tuple(self._source())

    @property
    def scrubber(self) -> Scrubber:
        config, in_files = self._settings(), (*self._found, *signing_key_secrets())
        now = (config, len(REGISTERED), in_files)
        if self._for is None or config is not self._for[0] or now[1:] != self._for[1:]:
            found = [*session_secrets(config, self._environ), *REGISTERED, *in_files]
            self._scrub = Scrubber(*(s for s in found if len(s.strip()) >= MIN_SECRET_LENGTH))
            self._for = now
        return self._scrub

    def text(self, text: str) -> str:
        return self.scrubber(text)

    def output(self, output: ToolOutput) -> ToolOutput:
        """A tool output with the secrets taken out of its text (images are kept)."""
        scrub = self.scrubber
        if not scrub:
            return output
        return ToolOutput(_content(output.content, scrub), output.success)

    def event(self, event: Event) -> Event:
        """An event with the secrets taken out of its text fields. A command's output (as
        it streams, and when its call finishes) may come from a server or kernel it just
        started: the source is asked again first; the model's text deltas do not ask."""
        if isinstance(event, (ToolOutputDelta, ToolCallFinished)):
            self.refresh()
        scrub = self.scrubber
        if not scrub:
            return event
        changes: dict[str, Any] = {}
        for f in dataclasses.fields(event):
            value = getattr(event, f.name)
            if isinstance(value, str):
                clean: Any = scrub(value)
            elif isinstance(event, ToolCallFinished) and f.name == "output":
                clean = _content(value, scrub)
            else:
                continue
            if clean != value:
                changes[f.name] = clean
        return dataclasses.replace(event, **changes) if changes else event


def _content(content: str | list[ContentItem], scrub: Scrubber) -> str | list[ContentItem]:
    if isinstance(content, str):
        return scrub(content)
    return [
        {**item, "text": scrub(item["text"])} if isinstance(item.get("text"), str) else item
        for item in content
    ]
