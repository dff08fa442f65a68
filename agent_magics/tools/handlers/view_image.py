"""``view_image``: attach a local image file to the conversation.

What the model gets back matches Codex: one ``input_image`` content item whose URL is a
``data:`` URL. PNG, JPEG and WebP files that fit in 2048×768 go out byte for byte; larger
ones are scaled down (aspect kept, bilinear/triangle filter) and re-encoded in their own
format; any other format Pillow can decode (GIF, BMP...) is re-encoded as PNG. Files that
do not decode get one fixed sentence.

Reading and decoding run in a worker thread so a big image never stalls the event loop.
"""

from __future__ import annotations

import asyncio
import base64
import io
import math
import os
import stat
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

from agent_magics.errors import Fatal, RespondToModel
from agent_magics.events import ImageViewed
from agent_magics.text.rust import io_error_text
from agent_magics.tools.args import decode_args
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import FunctionPayload, ToolInvocation, ToolOutput
from agent_magics.tools.sandbox.platform import off_limits
from agent_magics.tools.spec import FunctionSpec, ToolSpec, obj, string

if TYPE_CHECKING:
    from PIL import Image


VIEW_IMAGE_DESCRIPTION = (
    "Look at an image file on this machine: it is attached to the conversation so you can "
    "see it. Use it when you need to inspect a picture that exists on disk."
)


def view_image_spec(config: ToolsConfig) -> ToolSpec:
    path = string("Path of the image file on the local filesystem.")
    return FunctionSpec("view_image", VIEW_IMAGE_DESCRIPTION, obj({"path": path}, ["path"]))


MAX_WIDTH = 2048
MAX_HEIGHT = 768
JPEG_QUALITY = 85
IMAGE_DETAIL = "high"

NO_IMAGE_INPUT = "view_image is not allowed because you do not support image inputs"
UNREADABLE_IMAGE = "unable to process image: invalid or unsupported image data"

# Formats sent unchanged when small enough (Pillow format name -> MIME type).
_KEPT_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}


class ViewImageArgs(BaseModel):
    path: str


@dataclass(frozen=True)
class PreparedImage:
    """Bytes ready for the model, with their MIME type and pixel size."""

    mime: str
    data: bytes
    width: int
    height: int

    def data_url(self) -> str:
        return f"data:{self.mime};base64,{base64.b64encode(self.data).decode('ascii')}"


class UnreadableImage(Exception):
    """The bytes are not an image we can decode."""


def _sniff(data: bytes) -> str | None:
    """The kept format named by the file's signature, if any."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "PNG"
    if data.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    return None


def fit_size(width: int, height: int) -> tuple[int, int]:
    """The largest size with the same aspect that fits in MAX_WIDTH×MAX_HEIGHT.

    Rounds half away from zero and never goes below one pixel, like the Rust image crate.
    """
    ratio = min(MAX_WIDTH / width, MAX_HEIGHT / height)
    return max(math.floor(width * ratio + 0.5), 1), max(math.floor(height * ratio + 0.5), 1)


def _has_alpha(img: Image.Image) -> bool:
    return "A" in img.getbands() or "transparency" in img.info


def _encode(img: Image.Image, fmt: str, size: tuple[int, int] | None) -> PreparedImage:
    """Convert to 8-bit RGB(A), resize to ``size`` if given, and encode as ``fmt``."""
    if fmt == "JPEG":
        mode = "RGB"
    elif fmt == "WEBP":
        mode = "RGBA" if _has_alpha(img) else "RGB"
    else:
        mode = "RGBA"
    work = img.convert(mode)
    if size is not None:
        from PIL import Image

        work = work.resize(size, Image.Resampling.BILINEAR)
    out = io.BytesIO()
    if fmt == "JPEG":
        work.save(out, "JPEG", quality=JPEG_QUALITY)
    elif fmt == "WEBP":
        work.save(out, "WEBP", lossless=True)
    else:
        work.save(out, "PNG")
    mime = _KEPT_FORMATS.get(fmt, "image/png")
    return PreparedImage(mime, out.getvalue(), work.width, work.height)


def prepare_image(data: bytes) -> PreparedImage:
    """Turn a file's bytes into what the model receives; :class:`UnreadableImage` if not.
    Pillow is imported here, at the first image: a session that sees none never loads it."""
    from PIL import Image

    kept = _sniff(data)
    try:
        with Image.open(io.BytesIO(data)) as img:
            img.load()
            width, height = img.size
            if width <= MAX_WIDTH and height <= MAX_HEIGHT:
                if kept is not None:
                    return PreparedImage(_KEPT_FORMATS[kept], data, width, height)
                return _encode(img, "PNG", None)
            return _encode(img, kept or "PNG", fit_size(width, height))
    # Decoders of untrusted bytes fail in many ways (OSError, SyntaxError, struct.error,
    # decompression-bomb errors...); each one means "not an image we can use".
    except Exception as exc:
        raise UnreadableImage(str(exc)) from exc


def load_image(path: str) -> PreparedImage:
    """Check, read and prepare the image at ``path`` (blocking: run it in a thread)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError) as exc:
        raise RespondToModel(f"unable to locate image at `{path}`: {io_error_text(exc)}") from None
    if not stat.S_ISREG(info.st_mode):
        raise RespondToModel(f"image path `{path}` is not a file")
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise RespondToModel(f"unable to read image at `{path}`: {io_error_text(exc)}") from None
    try:
        return prepare_image(data)
    except UnreadableImage:
        raise RespondToModel(UNREADABLE_IMAGE) from None


class ViewImageHandler:
    """Reads an image file and hands it to the model as an ``input_image`` item."""

    name = "view_image"
    payload_kind: Literal["function", "custom"] = "function"
    supports_parallel = True

    def spec(self, config: ToolsConfig) -> ToolSpec:
        return view_image_spec(config)

    async def handle(self, inv: ToolInvocation) -> ToolOutput:
        if not inv.turn.supports_images:
            raise RespondToModel(NO_IMAGE_INPUT)
        if not isinstance(inv.payload, FunctionPayload):
            raise Fatal(f"tool {self.name} invoked with incompatible payload")
        args = decode_args(ViewImageArgs, inv.payload.arguments)
        # Joined as text, as Rust's PathBuf::join does: no normalisation of the path.
        path = os.path.join(inv.turn.cwd, args.path)
        if (why := off_limits(inv.turn.cwd, path)) is not None:
            raise RespondToModel(f"unable to read image: {why}")
        image = await asyncio.to_thread(load_image, path)
        url = image.data_url()
        inv.emit(ImageViewed(inv.call_id, path, url))
        return ToolOutput([{"type": "input_image", "image_url": url, "detail": IMAGE_DETAIL}])
