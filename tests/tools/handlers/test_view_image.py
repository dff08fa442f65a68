"""view_image on real files made with Pillow: pass-through, resizing, re-encoding, errors."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
from pathlib import Path

import pytest
from PIL import Image

from agent_magics.errors import ArgumentError, RespondToModel
from agent_magics.events import Event, ImageViewed
from agent_magics.tools.config import ToolsConfig
from agent_magics.tools.context import (
    FunctionPayload,
    SessionServices,
    ToolInvocation,
    ToolOutput,
    TurnContext,
)
from agent_magics.tools.handlers.view_image import ViewImageHandler
from agent_magics.tools.images import fit_size
from agent_magics.tools.registry import ToolHandler

UNREADABLE = "unable to process image: invalid or unsupported image data"


def _write_image(path: Path, size: tuple[int, int], fmt: str, mode: str = "RGB") -> bytes:
    """A two-way gradient (so encoders cannot cheat) saved in ``fmt``; returns its bytes."""
    across = Image.linear_gradient("L").rotate(90).resize(size)
    down = Image.linear_gradient("L").resize(size)
    img = Image.merge("RGB", (across, down, Image.new("L", size, 128)))
    if mode == "RGBA":
        img.putalpha(down)
    img.convert(mode).save(path, fmt)
    return path.read_bytes()


def _invocation(
    cwd: Path, raw: str, events: list[Event] | None = None, images: bool = True
) -> ToolInvocation:
    sink: list[Event] = [] if events is None else events
    return ToolInvocation(
        "call-7",
        "view_image",
        FunctionPayload(raw),
        TurnContext(cwd=cwd, supports_images=images),
        SessionServices(emit=sink.append),
    )


async def _view(cwd: Path, path: str, events: list[Event] | None = None) -> ToolOutput:
    return await ViewImageHandler().handle(_invocation(cwd, json.dumps({"path": path}), events))


async def _error(cwd: Path, path: str) -> str:
    with pytest.raises(RespondToModel) as info:
        await _view(cwd, path)
    return info.value.message


def _single_image(out: ToolOutput) -> tuple[str, bytes]:
    """The MIME type and bytes of the one ``input_image`` item of ``out``."""
    assert out.success is True
    assert isinstance(out.content, list)
    [item] = out.content
    assert set(item) == {"type", "image_url", "detail"}
    assert item["type"] == "input_image"
    assert item["detail"] == "high"
    head, _, b64 = item["image_url"].partition(";base64,")
    assert head.startswith("data:")
    return head.removeprefix("data:"), base64.b64decode(b64, validate=True)


@pytest.mark.parametrize(
    ("name", "fmt", "mime", "size", "mode"),
    [
        pytest.param("small.png", "PNG", "image/png", (40, 30), "RGB", id="png"),
        pytest.param("alpha.png", "PNG", "image/png", (5, 9), "RGBA", id="png-alpha"),
        pytest.param("photo.jpg", "JPEG", "image/jpeg", (64, 48), "RGB", id="jpeg"),
        pytest.param("pic.webp", "WEBP", "image/webp", (33, 17), "RGB", id="webp"),
        pytest.param("edge.png", "PNG", "image/png", (2048, 768), "RGB", id="exactly-at-limit"),
        pytest.param("named.gif", "PNG", "image/png", (3, 3), "RGB", id="png-named-gif"),
    ],
)
async def test_small_kept_formats_pass_through_byte_for_byte(
    tmp_path: Path, name: str, fmt: str, mime: str, size: tuple[int, int], mode: str
) -> None:
    original = _write_image(tmp_path / name, size, fmt, mode)
    events: list[Event] = []
    out = await _view(tmp_path, str(tmp_path / name), events)
    assert _single_image(out) == (mime, original)
    url = f"data:{mime};base64,{base64.b64encode(original).decode()}"
    assert out.content == [{"type": "input_image", "image_url": url, "detail": "high"}]
    assert events == [ImageViewed("call-7", str(tmp_path / name), url)]


@pytest.mark.parametrize(
    ("name", "fmt", "mode", "size"),
    [
        pytest.param("anim.gif", "GIF", "P", (7, 5), id="gif"),
        pytest.param("bitmap.bmp", "BMP", "RGB", (12, 4), id="bmp"),
        pytest.param("scan.tiff", "TIFF", "RGB", (9, 9), id="tiff"),
        pytest.param("gray.png.bmp", "BMP", "L", (6, 2), id="grayscale-bmp"),
    ],
)
async def test_other_decodable_formats_become_rgba_png(
    tmp_path: Path, name: str, fmt: str, mode: str, size: tuple[int, int]
) -> None:
    _write_image(tmp_path / name, size, fmt, mode)
    mime, data = _single_image(await _view(tmp_path, str(tmp_path / name)))
    assert mime == "image/png"
    with Image.open(io.BytesIO(data)) as got, Image.open(tmp_path / name) as src:
        assert got.format == "PNG"
        assert got.mode == "RGBA"
        assert got.size == size
        assert got.tobytes() == src.convert("RGBA").tobytes()


@pytest.mark.parametrize(
    ("name", "fmt", "mode", "size", "mime", "out_fmt", "out_size"),
    [
        pytest.param(
            "wide.png", "PNG", "RGB", (3000, 20), "image/png", "PNG", (2048, 14), id="png-wide"
        ),
        pytest.param(
            "tall.png", "PNG", "RGBA", (100, 1000), "image/png", "PNG", (77, 768), id="png-tall"
        ),
        pytest.param(
            "big.jpg", "JPEG", "RGB", (4096, 2048), "image/jpeg", "JPEG", (1536, 768), id="jpeg"
        ),
        pytest.param(
            "big.webp", "WEBP", "RGB", (1000, 1000), "image/webp", "WEBP", (768, 768), id="webp"
        ),
        pytest.param(
            "long.gif", "GIF", "P", (2100, 10), "image/png", "PNG", (2048, 10), id="gif-as-png"
        ),
        pytest.param(
            "one.png", "PNG", "RGB", (5000, 1), "image/png", "PNG", (2048, 1), id="at-least-1px"
        ),
    ],
)
async def test_large_images_are_resized_to_fit(
    tmp_path: Path,
    name: str,
    fmt: str,
    mode: str,
    size: tuple[int, int],
    mime: str,
    out_fmt: str,
    out_size: tuple[int, int],
) -> None:
    _write_image(tmp_path / name, size, fmt, mode)
    got_mime, data = _single_image(await _view(tmp_path, str(tmp_path / name)))
    assert got_mime == mime
    with Image.open(io.BytesIO(data)) as got:
        assert got.format == out_fmt
        assert got.size == out_size


async def test_resized_png_keeps_colour(tmp_path: Path) -> None:
    Image.new("RGB", (4000, 40), (10, 200, 30)).save(tmp_path / "flat.png")
    _, data = _single_image(await _view(tmp_path, str(tmp_path / "flat.png")))
    with Image.open(io.BytesIO(data)) as got:
        assert got.size == (2048, 20)
        assert got.convert("RGBA").getcolors() == [(2048 * 20, (10, 200, 30, 255))]


@pytest.mark.parametrize(
    ("width", "height", "expected"),
    [
        pytest.param(3000, 20, (2048, 14), id="wide"),
        pytest.param(4096, 2048, (1536, 768), id="two-to-one"),
        pytest.param(100, 1000, (77, 768), id="tall-rounds-up"),
        pytest.param(2049, 768, (2048, 768), id="one-px-too-wide"),
        pytest.param(10, 100_000, (1, 768), id="never-zero"),
        pytest.param(4096, 3, (2048, 2), id="half-rounds-away-from-zero"),
    ],
)
def test_fit_size(width: int, height: int, expected: tuple[int, int]) -> None:
    assert fit_size(width, height) == expected


@pytest.mark.parametrize(
    ("name", "content"),
    [
        pytest.param("fake.png", b"not an image", id="text-named-png"),
        pytest.param("empty.png", b"", id="empty-file"),
        pytest.param("cut.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", id="truncated-png"),
        pytest.param("svg.svg", b'<svg xmlns="http://www.w3.org/2000/svg"/>', id="svg"),
    ],
)
async def test_undecodable_files(tmp_path: Path, name: str, content: bytes) -> None:
    (tmp_path / name).write_bytes(content)
    assert await _error(tmp_path, str(tmp_path / name)) == UNREADABLE


async def test_truncated_jpeg_body(tmp_path: Path) -> None:
    data = _write_image(tmp_path / "whole.jpg", (300, 200), "JPEG")
    (tmp_path / "half.jpg").write_bytes(data[: len(data) // 3])
    assert await _error(tmp_path, str(tmp_path / "half.jpg")) == UNREADABLE


async def test_directory_is_not_a_file(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    message = await _error(tmp_path, str(tmp_path / "sub"))
    assert message == f"image path `{tmp_path}/sub` is not a file"


async def test_missing_file(tmp_path: Path) -> None:
    message = await _error(tmp_path, str(tmp_path / "nope.png"))
    expected = f"unable to locate image at `{tmp_path}/nope.png`: "
    assert message == expected + "No such file or directory (os error 2)"


async def test_path_below_a_file(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("x")
    message = await _error(tmp_path, str(tmp_path / "f" / "x.png"))
    expected = f"unable to locate image at `{tmp_path}/f/x.png`: "
    assert message == expected + "Not a directory (os error 20)"


async def test_relative_path_is_joined_to_cwd(tmp_path: Path) -> None:
    (tmp_path / "img").mkdir()
    original = _write_image(tmp_path / "img" / "a.png", (2, 2), "PNG")
    events: list[Event] = []
    out = await _view(tmp_path, "img/a.png", events)
    assert _single_image(out) == ("image/png", original)
    assert [e.path for e in events if isinstance(e, ImageViewed)] == [f"{tmp_path}/img/a.png"]
    message = await _error(tmp_path, "img/../missing.png")
    assert message.startswith(f"unable to locate image at `{tmp_path}/img/../missing.png`: ")


async def test_symlink_to_image_is_followed(tmp_path: Path) -> None:
    original = _write_image(tmp_path / "real.png", (3, 2), "PNG")
    (tmp_path / "link.png").symlink_to(tmp_path / "real.png")
    assert _single_image(await _view(tmp_path, str(tmp_path / "link.png"))) == (
        "image/png",
        original,
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
async def test_unreadable_file(tmp_path: Path) -> None:
    _write_image(tmp_path / "locked.png", (2, 2), "PNG")
    (tmp_path / "locked.png").chmod(0)
    message = await _error(tmp_path, str(tmp_path / "locked.png"))
    expected = f"unable to read image at `{tmp_path}/locked.png`: "
    assert message == expected + "Permission denied (os error 13)"


async def test_model_without_image_input(tmp_path: Path) -> None:
    _write_image(tmp_path / "a.png", (2, 2), "PNG")
    for raw in (json.dumps({"path": str(tmp_path / "a.png")}), "not json"):
        with pytest.raises(RespondToModel) as info:
            await ViewImageHandler().handle(_invocation(tmp_path, raw, images=False))
        assert info.value.message == (
            "view_image is not allowed because you do not support image inputs"
        )


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        pytest.param("{}", "missing field `path` at line 1 column 2", id="no-path"),
        pytest.param(
            '{"path": 5}',
            "invalid type: integer `5`, expected a string at line 1 column 11",
            id="path-not-string",
        ),
    ],
)
async def test_bad_arguments(tmp_path: Path, raw: str, message: str) -> None:
    events: list[Event] = []
    with pytest.raises(ArgumentError) as info:
        await ViewImageHandler().handle(_invocation(tmp_path, raw, events))
    assert info.value.message == "failed to parse function arguments: " + message
    assert events == []


async def test_decoding_runs_off_the_event_loop(tmp_path: Path) -> None:
    _write_image(tmp_path / "big.png", (3000, 1000), "PNG")
    task = asyncio.ensure_future(_view(tmp_path, str(tmp_path / "big.png")))
    await asyncio.sleep(0)  # the handler runs until it first yields to the loop
    assert not task.done()
    _, data = _single_image(await task)
    with Image.open(io.BytesIO(data)) as got:
        assert got.size == (2048, 683)


def test_handler_shape(tmp_path: Path) -> None:
    handler = ViewImageHandler()
    assert isinstance(handler, ToolHandler)
    assert handler.name == "view_image"
    assert handler.payload_kind == "function"
    assert handler.supports_parallel is True
    params = handler.spec(ToolsConfig()).to_wire()["parameters"]
    assert params["required"] == ["path"]
    assert params["properties"]["path"]["type"] == "string"


async def test_nul_byte_in_path(tmp_path: Path) -> None:
    message = await _error(tmp_path, "a\x00b.png")
    expected = f"unable to locate image at `{tmp_path}/a\x00b.png`: "
    assert message == expected + "file name contained an unexpected NUL byte"
