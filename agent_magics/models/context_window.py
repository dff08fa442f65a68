"""How many tokens the model takes: its context window, which compaction measures against.

A session's window is the first of these that answers (:meth:`WindowCache.resolve`):

1. ``setting``: the ``model_context_window`` setting;
2. ``catalog``: :data:`CATALOG`, the windows Codex's model catalog gives OpenAI's models,
   matched as Codex matches a model name: the longest slug the name starts with, else the
   same after one namespace (``openai/gpt-oss-20b``);
3. ``server``: the model server, asked by :func:`server_window` (vLLM, llama.cpp,
   Ollama, LM Studio, in that order), once per session for each base URL and model;
4. ``unknown``.

A session calls it once, before its first request, and keeps the answer::

    windows = WindowCache()  # one per session: a server is asked once in it
    window = await windows.resolve(model, base_url, api_key, setting=setting)
    window.tokens, window.source  # e.g. (32768, "server"), or (None, "unknown")

:func:`agent_magics.agent.context_window.session_window` does the same from a
:class:`~agent_magics.config.SessionConfig`, and says what the person should hear.

Asking a server never raises and never takes long: each request has
:data:`PROBE_TIMEOUT_S`, all of them :data:`PROBE_BUDGET_S`; an answer that is not
JSON of the expected shape, too large, or an error counts as no answer; a server that
cannot be reached is not asked again for the next kind. The probes go only to the
configured base URL's own host, with the same headers as a model request.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

import httpx

from agent_magics.models.encoding import _DecodingError
from agent_magics.models.encoding import body as decoded_body
from agent_magics.models.http import auth_headers
from agent_magics.models.pool import shared_client

WindowSource = Literal["setting", "catalog", "server", "unknown"]

CATALOG: tuple[tuple[str, int], ...] = (
    # codex-rs/core/models.json, the catalog Codex ships (context_window of each slug)
    ("gpt-5.4", 272_000),
    ("gpt-5.3-codex", 272_000),
    ("gpt-5.2-codex", 272_000),
    ("gpt-5.2", 272_000),
    ("gpt-5.1-codex-max", 272_000),
    ("gpt-5.1-codex-mini", 272_000),
    ("gpt-5.1-codex", 272_000),
    ("gpt-5.1", 272_000),
    ("gpt-5-codex-mini", 272_000),
    ("gpt-5-codex", 272_000),
    ("gpt-5", 272_000),
    ("gpt-oss-120b", 128_000),
    ("gpt-oss-20b", 128_000),
    # Codex's earlier table (core/src/openai_model_info.rs) for the models before GPT-5
    ("o3", 200_000),
    ("o4-mini", 200_000),
    ("codex-mini-latest", 200_000),
    ("gpt-4.1", 1_047_576),
    ("gpt-4o", 128_000),
    ("gpt-3.5-turbo", 16_385),
)
"""Model slug and its window in tokens, as Codex knows them."""

PROBE_TIMEOUT_S = 2.0  # each request to the server
PROBE_BUDGET_S = 6.0  # all of them together
MAX_ANSWER_BYTES = 1 << 20  # Ollama's /api/show carries the license and template too
MAX_WINDOW = 1 << 30  # a number above this is no window
OLLAMA_DEFAULT_NUM_CTX = 4096
"""What Ollama runs a model with when neither the model nor the request sets ``num_ctx``
on a machine with less than 24 GiB of VRAM (docs/context-length: 4k below 24 GiB, 32k
up to 48, 256k above; earlier releases had 2048). The smallest of those, since Ollama
drops the start of a prompt longer than its window without a word."""
NAMESPACE = re.compile(r"[A-Za-z0-9_]+")


@dataclass(frozen=True)
class WindowInfo:
    """The window in tokens (``None`` when unknown) and where it came from."""

    tokens: int | None
    source: WindowSource


def catalog_window(model: str) -> int | None:
    """The catalog's window for ``model``: the longest slug it starts with, else, for a
    name with one namespace of letters, digits and ``_`` before a ``/``, the same for
    the rest of the name (Codex's ``find_model_by_longest_prefix`` and
    ``find_model_by_namespaced_suffix`` in ``models_manager/manager.rs``)."""
    found = _longest_prefix(model)
    if found is None:
        namespace, slash, rest = model.partition("/")
        if slash and "/" not in rest and NAMESPACE.fullmatch(namespace):
            found = _longest_prefix(rest)
    return found


def _longest_prefix(model: str) -> int | None:
    best: tuple[str, int] | None = None
    for slug, tokens in CATALOG:
        if model.startswith(slug) and (best is None or len(slug) > len(best[0])):
            best = (slug, tokens)
    return best[1] if best else None


class _Unreachable(Exception):
    """The server could not be connected to: asking it anything else is no use."""


async def server_window(
    client: httpx.AsyncClient, base_url: str, model: str, api_key: str | None = None
) -> int | None:
    """The window the model server at ``base_url`` (``.../v1``) runs ``model`` with, or
    ``None``: the first of vLLM, llama.cpp, Ollama and LM Studio that answers."""
    base = base_url.rstrip("/")
    if not base.lower().startswith(("http://", "https://")):
        return None
    ask = _Asker(client, auth_headers(api_key))
    root = base.removesuffix("/v1")
    try:
        async with asyncio.timeout(PROBE_BUDGET_S):
            for probe in (_vllm, _llama_cpp, _ollama, _lm_studio):
                tokens = await probe(ask, base, root, model)
                if tokens is not None:
                    return tokens
    except (_Unreachable, TimeoutError):
        return None
    return None


class _Asker:
    """One JSON request to the server; any failure but an unreachable host is ``None``."""

    def __init__(self, client: httpx.AsyncClient, headers: dict[str, str]) -> None:
        self.client = client
        self.headers = {"accept": "application/json", **headers}

    async def __call__(self, method: str, url: str, body: Any = None) -> Any:
        content = None if body is None else json.dumps(body).encode()
        headers = self.headers | ({"content-type": "application/json"} if content else {})
        request = self.client.build_request(
            method, url, content=content, headers=headers, timeout=PROBE_TIMEOUT_S
        )
        try:
            response = await self.client.send(request, stream=True)
        except (httpx.ConnectError, httpx.ConnectTimeout, httpx.UnsupportedProtocol):
            raise _Unreachable from None
        except httpx.HTTPError:
            return None
        try:
            if response.status_code != 200:
                return None
            data = b""
            async for chunk in decoded_body(response):
                data += chunk
                if len(data) > MAX_ANSWER_BYTES:
                    return None
            return json.loads(data)
        except (httpx.HTTPError, _DecodingError, ValueError, RecursionError):
            return None
        finally:
            await response.aclose()


def _tokens(value: Any) -> int | None:
    """A window is a positive whole number of tokens (JSON's ``true`` is not one)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_WINDOW:
        return value
    return None


def _entry(data: Any, model: str) -> dict[str, Any] | None:
    """The model's entry in an OpenAI-style list (``{"data": [{"id": ...}, ...]}``): the
    one whose ``id`` is ``model``, or the only one."""
    listed = data.get("data") if isinstance(data, dict) else None
    if not isinstance(listed, list):
        return None
    entries: list[dict[str, Any]] = [e for e in listed if isinstance(e, dict)]
    named = [e for e in entries if e.get("id") == model]
    if named:
        return named[0]
    return entries[0] if len(entries) == 1 else None


async def _vllm(ask: _Asker, base: str, root: str, model: str) -> int | None:
    # vLLM's ModelCard (vllm/entrypoints/openai/protocol.py) adds ``max_model_len`` to
    # each model of GET /v1/models: the context length it serves (--max-model-len).
    entry = _entry(await ask("GET", f"{base}/models"), model)
    return _tokens(entry.get("max_model_len")) if entry else None


async def _llama_cpp(ask: _Asker, base: str, root: str, model: str) -> int | None:
    # llama-server's GET /props (tools/server/README.md): ``default_generation_settings``
    # is a slot's settings, whose ``n_ctx`` is the context one request gets (--ctx-size
    # shared among the --parallel slots). Servers that imitate /props may put ``n_ctx``
    # at the top instead.
    data = await ask("GET", f"{root}/props")
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    per_slot = settings.get("n_ctx") if isinstance(settings, dict) else None
    return _tokens(per_slot) or _tokens(data.get("n_ctx"))


async def _ollama(ask: _Asker, base: str, root: str, model: str) -> int | None:
    # Ollama's POST /api/show (docs/api.md): ``model_info`` holds the GGUF metadata, the
    # trained window as "<general.architecture>.context_length"; ``parameters`` is the
    # Modelfile's PARAMETER lines as text, ``num_ctx 8192`` among them when the model
    # sets its window. Ollama runs the model with num_ctx (or its default), so the
    # smaller of the two is what a request gets.
    version = await ask("GET", f"{root}/api/version")  # Ollama's, before anything is posted
    if not isinstance(version, dict) or "version" not in version:
        return None
    data = await ask("POST", f"{root}/api/show", {"model": model})
    info = data.get("model_info") if isinstance(data, dict) else None
    if not isinstance(info, dict):
        return None
    trained = _tokens(info.get(f"{info.get('general.architecture')}.context_length"))
    if trained is None:
        return None
    num_ctx = _num_ctx(data.get("parameters"))
    return min(trained, num_ctx or OLLAMA_DEFAULT_NUM_CTX)


def _num_ctx(parameters: Any) -> int | None:
    if not isinstance(parameters, str):
        return None
    for line in parameters.splitlines():
        name, _, value = line.strip().partition(" ")
        if name == "num_ctx" and value.strip().isdigit():
            return _tokens(int(value.strip()))
    return None


async def _lm_studio(ask: _Asker, base: str, root: str, model: str) -> int | None:
    # LM Studio's GET /api/v0/models (its docs' "REST API v0"): each model has
    # ``max_context_length``, the most it can be loaded with, and once loaded
    # ``loaded_context_length``, the window it was loaded with.
    entry = _entry(await ask("GET", f"{root}/api/v0/models"), model)
    if entry is None:
        return None
    return _tokens(entry.get("loaded_context_length")) or _tokens(entry.get("max_context_length"))


class WindowCache:
    """One session's windows: what each (base URL, model) server answered, silence too,
    so that it is asked once."""

    def __init__(self) -> None:
        self._answers: dict[tuple[str, str], int | None] = {}
        self._lock = asyncio.Lock()

    async def resolve(
        self,
        model: str,
        base_url: str,
        api_key: str | None,
        *,
        setting: int | None = None,
        ask_server: bool = True,
        client: httpx.AsyncClient | None = None,
    ) -> WindowInfo:
        """The window by the order in this module's docstring; ``ask_server=False``
        (a recording plays, no server) stops at the catalog."""
        if setting:
            return WindowInfo(setting, "setting")
        known = catalog_window(model)
        if known is not None:
            return WindowInfo(known, "catalog")
        if not ask_server:
            return WindowInfo(None, "unknown")
        key = (base_url.rstrip("/"), model)
        async with self._lock:
            if key not in self._answers:
                client = client or await shared_client(base_url)
                self._answers[key] = await server_window(client, base_url, model, api_key)
        tokens = self._answers[key]
        return WindowInfo(tokens, "server") if tokens is not None else WindowInfo(None, "unknown")
