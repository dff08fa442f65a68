"""Recorded sessions: written from a live model, played back offline.

A recording is JSONL. The first line names the format and the protocol that was
recorded; each further line is one exchange: the request body exactly as sent, and the
response stream as the list of its ``data:`` payloads (the API key is never in a body,
and is cut out of every line besides). The teaching notebooks' recordings
(``notebooks/recordings/record.py``) keep of each request only what playback reads: the
model's name and the prompts, environment contexts and tool outputs of its input, with
image data left out; the response stream is kept whole. Playback answers each request
with the next exchange recorded for the same conversation, read by the same decoder the
live client uses: the same prompts and the same tool outputs so far, once times, process
ids and the working folder are masked. A recording may hold several paths through a
conversation (a call approved in one run, denied in another; several sessions of one
notebook), so the exchange is looked up by that signature, in recorded order first. A
request no exchange matches ends the turn with one sentence saying that this is a
recording and how to use a live model. Recordings play only when asked for (the
``replay`` provider, or a notebook's ``%agent recording`` when no model is configured):
a session with no model configured is told so, not answered by the demo.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from importlib import resources
from pathlib import Path
from typing import Any

from agent_magics.errors import ConfigError, ModelError
from agent_magics.models.base import ModelEvent, ModelRequest
from agent_magics.models.chat import ChatDecoder, chat_body
from agent_magics.models.chat_convert import chat_tools
from agent_magics.models.responses import ResponsesDecoder, responses_body
from agent_magics.models.secret import Scrubber
from agent_magics.models.stream import Decoder, replay_tape

FORMAT = "agent_magics.recording"
VERSION = 1
DEMO_RECORDING = "demo.jsonl"
LIVE_HINT = (
    "for a live model, leave out --provider replay and set OPENAI_API_KEY or point "
    "--base-url at a model server."
)
DEMO_FOLDER = "in a folder holding the demo's stats.py and test_stats.py"
OPENING = ("<environment_context>", "# AGENTS.md instructions for", "<notebook_context>")

Protocol = tuple[Callable[[ModelRequest], dict[str, Any]], Callable[[ModelRequest], Decoder]]
PROTOCOLS: dict[str, Protocol] = {
    "responses": (responses_body, lambda request: ResponsesDecoder()),
    "chat": (chat_body, lambda request: ChatDecoder(chat_tools(request.tools)[1])),
}

_VOLATILE = [
    (re.compile(r"Wall time: \d+(?:\.\d+)? seconds"), "Wall time: <t> seconds"),
    (re.compile(r"Chunk ID: [0-9a-f]+"), "Chunk ID: <id>"),
    (re.compile(r"session ID \d+"), "session ID <id>"),
    (re.compile(r"process id \d+"), "process id <id>"),
    (re.compile(r"after \d+ milliseconds"), "after <ms> milliseconds"),
    (re.compile(r'"duration_seconds":\s*[0-9.]+'), '"duration_seconds":<t>'),
    (re.compile(r"\b\d+\.\d{2} s\b"), "<t> s"),  # run_python's "Ran in 0.12 s."
    # edit_notebook names the cell it inserted by its new id, which nbformat draws at random
    (
        re.compile(r"Inserted (code|markdown|raw) cell \S+ as cell"),
        r"Inserted \1 cell <id> as cell",
    ),
]
_CWD = re.compile(r"<cwd>(.*?)</cwd>", re.S)


class Recorder:
    """Writes a recording as a live client streams; each call appends one exchange.
    The key, and any piece of it a stream cut apart, is scrubbed from every line."""

    def __init__(self, path: Path, provider: str, secret: str | None = None) -> None:
        self.path = path
        self._scrub = Scrubber(secret)
        path.parent.mkdir(parents=True, exist_ok=True)
        header = {"format": FORMAT, "version": VERSION, "provider": provider}
        # A later session of the same run (a notebook's --new) adds its exchanges: the
        # recording then plays every session back, each found by its signature.
        if path.exists() and path.stat().st_size:
            if _header(path) != header:
                raise ConfigError(f"{path} holds something other than a {provider} recording.")
        else:
            self._write(header, "w")

    def add(self, body: dict[str, Any], tape: list[Any]) -> None:
        self._write({"request": body, "response": tape}, "a")

    def _write(self, record: dict[str, Any], mode: str) -> None:
        line = self._scrub(json.dumps(record, ensure_ascii=False))
        with self.path.open(mode, encoding="utf-8") as out:
            out.write(line + "\n")


def _header(path: Path) -> dict[str, Any] | None:
    with path.open(encoding="utf-8") as lines:
        try:
            first = json.loads(lines.readline())
        except ValueError:
            return None
    return first if isinstance(first, dict) else None


def load_recording(path: Path | None) -> tuple[str, list[dict[str, Any]]]:
    """The recorded protocol and the exchanges; ``None`` means the shipped demo."""
    try:
        if path is None:
            text = (resources.files("agent_magics.recordings") / DEMO_RECORDING).read_text(
                encoding="utf-8"
            )
        else:
            text = Path(path).read_text(encoding="utf-8")
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
    except (OSError, ValueError) as exc:
        raise ConfigError(f"Cannot read the recording {path}: {exc}.") from None
    header = records[0] if records else {}
    provider = header.get("provider")
    if header.get("format") != FORMAT or provider not in PROTOCOLS:
        raise ConfigError(f"{path} is not a recording of a model session.")
    return str(provider), [r for r in records[1:] if "request" in r]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _cwd(items: Any) -> str | None:
    """The working folder a request names in its environment context."""
    found = _CWD.search(json.dumps(items))
    return json.loads(f'"{found.group(1)}"') if found else None


def _moved(tape: list[Any], recorded: str | None, live: str | None) -> list[Any]:
    """The recorded answer with the recorded working folder written as the live one: the
    file tools take absolute paths, so a recorded call names the folder it was recorded in,
    a temporary folder that is gone when the recording plays."""
    if not recorded or not live or recorded == live:
        return tape
    old, new = json.dumps(recorded)[1:-1], json.dumps(live)[1:-1]
    return [json.loads(json.dumps(d).replace(old, new)) if isinstance(d, dict) else d for d in tape]


def signature(body: dict[str, Any]) -> list[tuple[str, str]]:
    """What must match between a live request and its recording: the prompts and the
    tool outputs sent, in order, with volatile parts and the working folder masked."""
    items = body.get("input") or body.get("messages") or []
    cwd = _cwd(items)
    out: list[tuple[str, str]] = []
    for item in items:
        if item.get("role") == "user" and item.get("type", "message") == "message":
            text = _text(item.get("content"))
            if not text.startswith(OPENING):
                out.append(("prompt", text))
        elif item.get("role") == "tool" or item.get("type") in (
            "function_call_output",
            "custom_tool_call_output",
        ):
            text = _text(item.get("output", item.get("content")))
            for pattern, mask in _VOLATILE:
                text = pattern.sub(mask, text)
            out.append(("output", text.replace(cwd, "{cwd}") if cwd else text))
    return out


def output_tools(body: dict[str, Any]) -> dict[str, str]:
    """The tool each output of a request answers, by call id (Responses items and Chat
    Completions messages)."""
    names: dict[str, str] = {}
    for item in body.get("input") or body.get("messages") or []:
        if item.get("type") in ("function_call", "custom_tool_call"):
            names[str(item.get("call_id"))] = str(item.get("name", ""))
        for call in item.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                names[str(call.get("id"))] = str(function.get("name", ""))
    return names


def _output_names(body: dict[str, Any]) -> list[str]:
    """Per step of :func:`signature`: ``""`` for a prompt, the tool's name for an output."""
    tools = output_tools(body)
    names = []
    for item in body.get("input") or body.get("messages") or []:
        if item.get("role") == "user" and item.get("type", "message") == "message":
            if not _text(item.get("content")).startswith(OPENING):
                names.append("")
        elif item.get("role") == "tool" or item.get("type") in (
            "function_call_output",
            "custom_tool_call_output",
        ):
            names.append(tools.get(str(item.get("call_id", item.get("tool_call_id"))), ""))
    return names


def _first_difference(here: str, there: str) -> str:
    """The first line where two outputs differ, each side quoted (shortened); in a
    command's, the first of what the command printed (after the lines about the run)."""
    marker = "\nOutput:\n"
    if marker in here and marker in there:
        here, there = here.split(marker, 1)[1], there.split(marker, 1)[1]
    mine, theirs = here.splitlines(), there.splitlines()
    for k in range(max(len(mine), len(theirs))):
        a = mine[k] if k < len(mine) else ""
        b = theirs[k] if k < len(theirs) else ""
        if a != b:
            return f"{_short(a)!r} here where it recorded {_short(b)!r}"
    return "in its spacing"


def _short(line: str, chars: int = 80) -> str:
    return line if len(line) <= chars else line[: chars - 3] + "..."


def _what(demo: bool) -> str:
    return "This is the offline demo" if demo else "This is an offline recording"


def _prompts(signature: list[tuple[str, str]]) -> list[str]:
    return [text for kind, text in signature if kind == "prompt"]


def _answered(step: tuple[str, str]) -> bool:
    """Whether a step is a tool output saying a person (or a headless run) denied or
    stopped the call."""
    return step[0] == "output" and ("rejected by user" in step[1] or "aborted by user" in step[1])


def _closest(
    live: list[tuple[str, str]], recorded: list[list[tuple[str, str]]]
) -> tuple[tuple[str, str] | None, tuple[str, str] | None, int]:
    """Where the live conversation leaves the recorded one closest to it: the live step
    there and the recorded one (``None`` past either end), and the step's index."""
    best, reach, goes_on = None, -1, False
    for steps in recorded:
        k = 0
        while k < min(len(steps), len(live)) and steps[k] == live[k]:
            k += 1
        if (k, k < len(steps)) > (reach, goes_on):  # the furthest; one that goes on wins
            best, reach, goes_on = steps, k, k < len(steps)
    here = live[reach] if 0 <= reach < len(live) else None
    there = best[reach] if best is not None and 0 <= reach < len(best) else None
    return here, there, reach


def _mismatch(
    live: list[tuple[str, str]],
    recorded: list[list[tuple[str, str]]],
    demo: bool,
    hint: str,
    names: list[str] | None = None,
) -> str:
    """One sentence: where the live conversation left the recording (another prompt, an
    approval answered otherwise or a stopped turn, another tool output: which tool's and
    its first line that differs, past its end) and what to do; ``recorded`` holds the
    signatures of every exchange, ``names`` the live steps' tools."""
    here, there, reach = _closest(live, recorded)
    folder = f" {DEMO_FOLDER}" if demo else ""
    if there is None:
        return f"{_what(demo)} and it has no more answers; {hint}"
    if here is not None and here[0] == there[0] == "prompt":
        expected = there[1] if len(there[1]) <= 200 else there[1][:197] + "..."
        what = f"it expects the prompt {expected!r}{folder}"
        what += "" if demo else ": run the cells as they are"
    elif here is not None and (_answered(here) or _answered(there) or here[0] != there[0]):
        return (
            f"{_what(demo)} and this request does not match it (the run went another way at "
            "an approval card or a stopped turn, and the recording holds every card approved "
            f"or every card denied, not a mix): restart the kernel and run it again, or {hint}"
        )
    else:
        tool = names[reach] if names is not None and 0 <= reach < len(names) else ""
        what = f"the output of {tool} differs" if tool else "a tool output differs"
        what += " from the recorded one"
        if here is not None:
            what += f", {_first_difference(here[1], there[1])}"
        what += ": "
        what += (
            f"it runs{folder}"
            if demo
            else (
                "a file or a library it uses is not as it was where it was recorded, or no "
                "sandbox works on this machine, so commands asked first"
            )
        )
    return f"{_what(demo)} and this request does not match it ({what}); {hint}"


class ReplayClient:
    """Plays a recording back as if the model answered: each request gets the exchange
    recorded for the same conversation, the next one in recorded order first; with no
    path, the shipped demo. ``hint`` ends every sentence that stops a turn."""

    provider = "replay"

    def __init__(self, path: Path | None = None, hint: str = LIVE_HINT) -> None:
        self.path = path
        self.hint = hint
        self.recorded_provider, self.exchanges = load_recording(path)
        self.signatures = [signature(e.get("request", {})) for e in self.exchanges]
        self.position = 0

    def _find(self, live: list[tuple[str, str]]) -> int | None:
        order = [*range(self.position, len(self.exchanges)), *range(self.position)]
        return next((i for i in order if self.signatures[i] == live), None)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelEvent]:
        demo = self.path is None
        build_body, make_decoder = PROTOCOLS[self.recorded_provider]
        body = build_body(request)
        live = signature(body)
        found = self._find(live)
        if found is None:
            names = _output_names(body)
            raise ModelError(_mismatch(live, self.signatures, demo, self.hint, names))
        self.position = found + 1
        exchange = self.exchanges[found]
        recorded = exchange.get("request") or {}
        where, here = (_cwd(b.get("input") or b.get("messages") or []) for b in (recorded, body))
        tape = _moved(exchange.get("response") or [], where, here)
        for event in replay_tape(make_decoder(request), tape):
            yield event

    async def aclose(self) -> None:
        return None
