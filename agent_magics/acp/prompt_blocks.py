"""A prompt's content blocks as what the model reads.

ACP prompts are lists of blocks: the text is the prompt; an image is attached to it (a
data URL, as ``exec -i`` attaches one); a link (``resource_link``, how jupyter-ai sends
an attachment) and an embedded resource (the text of a file the client sent) are told
beside the prompt, an embedded text cut at :data:`MAX_EMBEDDED_CHARS`. A link to a
notebook (its MIME type, or a name ending in ``.ipynb``) also names the notebook whose
kernel the kernel tools act on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from acp.schema import (
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

NOTEBOOK_MIME = "application/x-ipynb+json"
MAX_EMBEDDED_CHARS = 100_000


def prompt_parts(blocks: list[Any], cwd: Path) -> tuple[str, list[str], list[str], list[Path]]:
    """``(text, context, images, notebooks)`` of a prompt."""
    text: list[str] = []
    context: list[str] = []
    images: list[str] = []
    notebooks: list[Path] = []
    for block in blocks:
        if isinstance(block, TextContentBlock):
            text.append(block.text)
        elif isinstance(block, ImageContentBlock):
            images.append(f"data:{block.mime_type};base64,{block.data}")
        elif isinstance(block, ResourceContentBlock):
            path = file_path(block.uri, cwd)
            if block.mime_type == NOTEBOOK_MIME or block.uri.endswith(".ipynb"):
                if path is not None:
                    notebooks.append(path)
                context.append(f"The person attached the notebook {path or block.uri}.")
            else:
                context.append(f"The person points you at {path or block.uri} ({block.name}).")
        elif isinstance(block, EmbeddedResourceContentBlock):
            resource = block.resource
            if isinstance(resource, TextResourceContents):
                body = resource.text[:MAX_EMBEDDED_CHARS]
                cut = "\n[cut]" if len(resource.text) > MAX_EMBEDDED_CHARS else ""
                context.append(f'<attached uri="{resource.uri}">\n{body}{cut}\n</attached>')
            else:
                context.append(f"The person attached {resource.uri} (not text, not shown).")
    return "\n".join(text), context, images, notebooks


def file_path(uri: str, cwd: Path) -> Path | None:
    """The local path a ``file://`` URI (or a plain path) names."""
    parts = urlsplit(uri)
    if parts.scheme == "file":
        return Path(unquote(parts.path))
    if parts.scheme == "" and uri:
        return cwd / uri
    return None
