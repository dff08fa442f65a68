"""Images as the model receives them, as Codex prepares them.

One ``input_image`` content item whose URL is a ``data:`` URL. PNG, JPEG and WebP files
that fit in 2048×768 go out byte for byte; larger ones are scaled down (aspect kept,
bilinear/triangle filter) and re-encoded in their own format; any other format Pillow can
decode (GIF, BMP...) is re-encoded as PNG. Bytes that do not decode raise
:class:`UnreadableImage`. Used by ``view_image``, ``read_notebook`` and the kernel's
outputs; Pillow is imported at the first image.
"""

from __future__ import annotations

import base64
import io
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image


MAX_WIDTH = 2048
MAX_HEIGHT = 768
JPEG_QUALITY = 85
IMAGE_DETAIL = "high"

# Formats sent unchanged when small enough (Pillow format name -> MIME type).
_KEPT_FORMATS = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}


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
