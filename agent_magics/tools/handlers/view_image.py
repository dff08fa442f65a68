"""``view_image``: attach a local image file to the conversation.

What the model gets back matches Codex: one ``input_image`` content item, prepared by
:mod:`agent_magics.tools.images`. Files that do not decode get one fixed sentence.

Reading and decoding run in a worker thread so a big image never stalls the event loop.
"""

from __future__ import annotations

import asyncio
import os
import stat
from typing import Literal

from pydantic import BaseModel

from agent_magics.errors import Fatal, RespondToModel
from agent_magics.events import ImageViewed
from agent_magics.text.rust import io_error_text
from agent_magics.tools.args import decode_args
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import FunctionPayload, ToolInvocation, ToolOutput
from agent_magics.tools.images import IMAGE_DETAIL, PreparedImage, UnreadableImage, prepare_image
from agent_magics.tools.sandbox.platform import off_limits
from agent_magics.tools.spec import FunctionSpec, ToolSpec, obj, string

VIEW_IMAGE_DESCRIPTION = (
    "Look at an image file on this machine: it is attached to the conversation so you can "
    "see it. Use it when you need to inspect a picture that exists on disk."
)


def view_image_spec(config: ToolsConfig) -> ToolSpec:
    path = string("Path of the image file on the local filesystem.")
    return FunctionSpec("view_image", VIEW_IMAGE_DESCRIPTION, obj({"path": path}, ["path"]))


NO_IMAGE_INPUT = "view_image is not allowed because you do not support image inputs"
UNREADABLE_IMAGE = "unable to process image: invalid or unsupported image data"


class ViewImageArgs(BaseModel):
    path: str


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
