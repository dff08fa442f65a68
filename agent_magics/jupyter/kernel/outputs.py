"""Turning what a run_python call printed and displayed into the model's answer.

Pure functions over the entries of :mod:`.capture`. Text is budgeted like
exec_command's output (head + tail); figures and PNG/JPEG outputs become
``input_image`` items (as view_image sends them) when the model takes images, else a
one-line placeholder; HTML-only outputs are reduced to their text; a DataFrame comes
through its ``text/plain`` repr, trimmed.
"""

from __future__ import annotations

import base64
import binascii
import re
import traceback
from collections.abc import Callable, Mapping
from html.parser import HTMLParser
from typing import Any

from agent_magics.tools.context import ContentItem
from agent_magics.tools.images import IMAGE_DETAIL, UnreadableImage, prepare_image
from agent_magics.tools.truncate import TruncationPolicy, truncate_text

MAX_OUTPUT_TOKENS = 10_000  # the whole text answer, as exec_command's default budget
ITEM_TEXT_BYTES = 6_000  # one display's text (a DataFrame repr...) before the whole is cut
HTML_SUMMARY_BYTES = 2_000  # the text of an HTML-only output
ERROR_BYTES = 4_000  # the short traceback
MAX_TRACEBACK_FRAMES = 5  # the last frames of a traceback that are shown
MAX_IMAGES = 4  # images sent per call; later ones get a line of text
MAX_NAMES = 30  # names listed per line of the names summary
IMAGE_TYPES = ("image/png", "image/jpeg")

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
DEFAULT_REPR = re.compile(r"^<[\w.]+ object(?: at 0x[0-9a-f]+)?>$")
_BLOCK_TAGS = {"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "pre"}
_SKIPPED_TAGS = {"script", "style", "head"}


def strip_ansi(text: str) -> str:
    return ANSI.sub("", text)


def _budget(text: str, max_bytes: int) -> str:
    return truncate_text(text, TruncationPolicy.bytes(max_bytes))


class _TextOfHtml(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._skipping = 0

    def handle_starttag(self, tag: str, attrs: Any) -> None:
        if tag in _SKIPPED_TAGS:
            self._skipping += 1
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")
        elif tag in ("td", "th"):
            self.parts.append(" ")

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED_TAGS:
            self._skipping = max(self._skipping - 1, 0)
        elif tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._skipping:
            self.parts.append(data)


def html_text(markup: str) -> str:
    """The readable text of an HTML fragment: tags, scripts and styles dropped, blank
    runs squeezed, within :data:`HTML_SUMMARY_BYTES`."""
    parser = _TextOfHtml()
    parser.feed(markup)
    parser.close()
    lines = (" ".join(line.split()) for line in "".join(parser.parts).splitlines())
    return _budget("\n".join(line for line in lines if line), HTML_SUMMARY_BYTES)


def _as_text(value: Any) -> str:
    if isinstance(value, list):  # a mimebundle may split text into lines
        return "".join(str(v) for v in value)
    return str(value)


def bundle_text(data: Mapping[str, Any]) -> str:
    """What a mimebundle says as text: its ``text/plain`` unless that is only a default
    ``<... object>`` repr and there is HTML or markdown to summarise instead."""
    plain = _as_text(data["text/plain"]) if "text/plain" in data else ""
    if plain and not DEFAULT_REPR.match(plain.strip()):
        return _budget(strip_ansi(plain), ITEM_TEXT_BYTES)
    if "text/html" in data:
        return "[HTML] " + html_text(_as_text(data["text/html"]))
    if "text/markdown" in data:
        return _budget(_as_text(data["text/markdown"]), ITEM_TEXT_BYTES)
    if "image/svg+xml" in data:
        return f"[SVG image, {len(_as_text(data['image/svg+xml']))} characters]"
    if plain:
        return plain
    kinds = ", ".join(sorted(data)) or "unknown"
    return f"[output of type {kinds}]"


def _image_bytes(value: Any) -> bytes | None:
    if isinstance(value, bytes):
        return value
    try:
        return base64.b64decode(_as_text(value), validate=False)
    except (binascii.Error, ValueError):
        return None


class Images:
    """The images of one answer, at most :data:`MAX_IMAGES`, when the model takes them."""

    def __init__(self, supports_images: bool) -> None:
        self.supports_images = supports_images
        self.urls: list[str] = []
        self.seen = 0

    def add(self, data: Mapping[str, Any]) -> str:
        """Keep the bundle's image if allowed; the line of text that stands for it."""
        mime = next(m for m in IMAGE_TYPES if m in data)
        caption = _as_text(data.get("text/plain", "")).strip()
        plain = caption and not caption.startswith("<IPython")
        what = f"{mime} {caption}" if plain else mime
        self.seen += 1
        raw = _image_bytes(data[mime])
        try:
            image = prepare_image(raw or b"")
        except UnreadableImage:
            return f"[image {self.seen}: {what}, unreadable]"
        size = f"{image.width}×{image.height}"
        if not self.supports_images:
            return f"[image {self.seen}: {what} {size}, not shown: this model does not take images]"
        if len(self.urls) >= MAX_IMAGES:
            return f"[image {self.seen}: {what} {size}, not sent: at most {MAX_IMAGES} per call]"
        self.urls.append(image.data_url())
        return f"[image {self.seen}: {what} {size}, attached]"


def entries_text(entries: list[dict[str, Any]], images: Images) -> str:
    """The outputs in the order they happened: streams as printed, ``Out:`` before the
    last expression's value, display outputs as text, images as one line each."""
    parts: list[str] = []
    for entry in entries:
        if "stream" in entry:
            parts.append(strip_ansi(entry["text"]))
            continue
        data = entry.get("data") or {}
        text = images.add(data) if any(m in data for m in IMAGE_TYPES) else bundle_text(data)
        if entry.get("result"):
            text = "Out: " + text if "\n" not in text else "Out:\n" + text
        if parts and not parts[-1].endswith("\n"):
            parts.append("\n")
        parts.append(text + "\n")
    return "".join(parts)


def short_traceback(
    exc: BaseException,
    hidden_files: tuple[str, ...] = (),
    mask: Callable[[str], str] | None = None,
) -> str:
    """The exception with its last :data:`MAX_TRACEBACK_FRAMES` frames, no colours;
    frames of ``hidden_files`` (the shell's own machinery) are left out, and ``mask``
    (the teacher's withheld answers) applies before the budget cuts."""
    summary = traceback.StackSummary.from_list(
        [f for f in traceback.extract_tb(exc.__traceback__) if f.filename not in hidden_files]
    )
    dropped = max(len(summary) - MAX_TRACEBACK_FRAMES, 0)
    lines = ["Traceback (most recent call last):\n"]
    if dropped:
        lines.append(f"  … {dropped} earlier frame{'s' if dropped > 1 else ''} …\n")
    lines.extend(traceback.format_list(summary[dropped:]))
    lines.extend(traceback.format_exception_only(type(exc), exc))
    if not summary:
        lines = lines[1:]
    text = strip_ansi("".join(lines)).rstrip("\n")
    return _budget(text if mask is None else mask(text), ERROR_BYTES)


def names_summary(before: Mapping[str, int], after: Mapping[str, int]) -> str:
    """``Names defined: a, b`` / ``rebound`` / ``deleted``: the public names of the
    namespace that appeared, got a new object or went away (changes inside an object,
    such as a new column, are not seen)."""
    groups = (
        ("defined", [n for n in after if n not in before]),
        ("rebound", [n for n in after if n in before and before[n] != after[n]]),
        ("deleted", [n for n in before if n not in after]),
    )
    lines = []
    for label, names in groups:
        if names:
            more = f" and {len(names) - MAX_NAMES} more" if len(names) > MAX_NAMES else ""
            lines.append(f"Names {label}: {', '.join(sorted(names)[:MAX_NAMES])}{more}")
    return "\n".join(lines)


def namespace_ids(namespace: Mapping[str, Any]) -> dict[str, int]:
    """Public names and the identity of their objects, to compare before and after."""
    return {k: id(v) for k, v in namespace.items() if not k.startswith("_")}


def answer_content(head: str, body: str, tail: str, images: Images) -> str | list[ContentItem]:
    """The model's answer: ``head`` (status line), ``body`` (outputs, cut to
    :data:`MAX_OUTPUT_TOKENS`), ``tail`` (error and names), then the images."""
    body = truncate_text(body, TruncationPolicy.tokens(MAX_OUTPUT_TOKENS))
    sections = [head, f"Output:\n{body.rstrip()}" if body.strip() else "Output: (none)", tail]
    text = "\n".join(s for s in sections if s)
    if not images.urls:
        return text
    items: list[ContentItem] = [{"type": "input_text", "text": text}]
    items += [{"type": "input_image", "image_url": u, "detail": IMAGE_DETAIL} for u in images.urls]
    return items
