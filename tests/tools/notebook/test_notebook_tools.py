"""read_notebook and edit_notebook on real notebooks written with nbformat.

Codex has no notebook tools: a model there edits a notebook's JSON with apply_patch or
the shell, which nothing validates and which writes under an open editor.
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from PIL import Image

from agent_magics.errors import RespondToModel
from agent_magics.protocol.approval import ApprovalPolicy, SandboxMode
from agent_magics.testing import ScriptedResponsesServer, function_call, message
from agent_magics.tools.context import FunctionPayload, SessionServices, ToolInvocation, TurnContext
from agent_magics.tools.handlers.edit_notebook import EditNotebookHandler
from agent_magics.tools.handlers.read_notebook import ReadNotebookHandler
from agent_magics.tools.notebook.document import (
    MAX_OUTPUT_BYTES,
    OWN_NOTEBOOK,
    SESSION_ENV,
    NotebookFiles,
)
from agent_magics.tools.registry import ToolHandler
from agent_magics.tools.sandbox.roots import real
from tests.helpers.sandbox import Arena

v4: Any = nbformat.v4
nbf: Any = nbformat  # its reader and writer carry no annotations


def _png() -> str:
    out = io.BytesIO()
    Image.new("RGB", (3, 2), (255, 0, 0)).save(out, "PNG")
    return base64.b64encode(out.getvalue()).decode("ascii")


def make_notebook(path: Path, minor: int = 5) -> Any:
    nb = v4.new_notebook(
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        }
    )
    nb.metadata["custom"] = {"keep": "me"}
    code = v4.new_code_cell("print('hi')\n1 + 1", id="first", execution_count=3)
    code.outputs = [
        v4.new_output("stream", name="stdout", text="hi\n"),
        v4.new_output("execute_result", data={"text/plain": "2"}, execution_count=3),
    ]
    boom = v4.new_code_cell("raise ValueError('bad')", id="boom", execution_count=4)
    boom.outputs = [
        v4.new_output(
            "error", ename="ValueError", evalue="bad", traceback=["\x1b[31mValueError\x1b[0m: bad"]
        )
    ]
    plot = v4.new_code_cell("show()", id="plot", execution_count=5)
    plot.outputs = [
        v4.new_output("display_data", data={"image/png": _png(), "text/plain": "<Figure>"}),
        v4.new_output("stream", name="stdout", text="x" * (MAX_OUTPUT_BYTES * 3)),
    ]
    nb.cells = [
        code,
        v4.new_markdown_cell("# Title", id="md"),
        v4.new_raw_cell("raw text", id="raw"),
        boom,
        plot,
    ]
    nb.nbformat_minor = minor
    if minor < 5:
        for cell in nb.cells:
            del cell["id"]
    nbformat.validate(nb)
    path.write_text(nbf.writes(nb))
    return nb


async def call(
    handler: ToolHandler, cwd: Path, args: dict[str, Any], **turn: Any
) -> tuple[str | list[Any], bool]:
    inv = ToolInvocation(
        "c1",
        handler.name,
        FunctionPayload(json.dumps(args)),
        TurnContext(cwd=cwd, **turn),
        SessionServices(),
    )
    try:
        out = await handler.handle(inv)
    except RespondToModel as exc:
        return exc.message, False
    return out.content, out.success


async def test_read_shows_cells_outputs_and_images(tmp_path: Path) -> None:
    make_notebook(tmp_path / "nb.ipynb")
    text, ok = await call(ReadNotebookHandler(), tmp_path, {"path": "nb.ipynb"})
    assert ok and isinstance(text, str)
    assert "5 cells, nbformat 4.5, language python" in text
    assert "--- cell 1 · id first · code · execution_count 3\nprint('hi')\n1 + 1" in text
    assert "[stream stdout]\nhi\n" in text and "[execute_result]\n2" in text
    assert "--- cell 2 · id md · markdown\n# Title" in text
    assert "--- cell 3 · id raw · raw\nraw text" in text
    assert "[error] ValueError: bad\nValueError: bad" in text and "\x1b" not in text
    assert "image/png: image 5.1," in text and "<Figure>" in text
    assert "chars truncated" in text and "x" * (MAX_OUTPUT_BYTES * 2) not in text
    assert '"cell_type"' not in text  # never the raw JSON


async def test_read_cell_range_and_no_outputs(tmp_path: Path) -> None:
    make_notebook(tmp_path / "nb.ipynb")
    args = {"path": str(tmp_path / "nb.ipynb"), "start_cell": 2, "end_cell": 4}
    text, ok = await call(ReadNotebookHandler(), tmp_path, {**args, "include_outputs": False})
    assert ok and isinstance(text, str)
    assert "cell 1 " not in text and "cell 5 " not in text
    assert "id md" in text and "id raw" in text and "id boom" in text
    assert "[1 outputs not shown]" in text and "[error]" not in text
    bad, ok = await call(ReadNotebookHandler(), tmp_path, {"path": "nb.ipynb", "start_cell": 9})
    assert not ok and bad == "start_cell 9 is past the last cell"


async def test_read_attaches_images_as_view_image_does(tmp_path: Path) -> None:
    make_notebook(tmp_path / "nb.ipynb")
    args = {"path": "nb.ipynb", "start_cell": 5, "include_images": True}
    content, ok = await call(ReadNotebookHandler(), tmp_path, args)
    assert ok and isinstance(content, list)
    image = content[-1]
    assert image["type"] == "input_image" and image["detail"] == "high"
    assert image["image_url"] == "data:image/png;base64," + _png()


async def test_read_not_a_notebook(tmp_path: Path) -> None:
    (tmp_path / "x.ipynb").write_text("{not json")
    text, ok = await call(ReadNotebookHandler(), tmp_path, {"path": "x.ipynb"})
    assert not ok and isinstance(text, str) and "is not a valid notebook" in text


def _edit(path: Path | str, **args: Any) -> dict[str, Any]:
    return {"path": str(path), **args}


async def test_edit_replace_insert_delete_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    make_notebook(path)
    edit = EditNotebookHandler()
    text, ok = await call(edit, tmp_path, _edit(path, cell_id="first", new_source="2 + 2"))
    assert ok, text
    text, ok = await call(
        edit, tmp_path, _edit(path, cell_id="md", new_source="## New", edit_mode="insert",
                              cell_type="markdown"),
    )  # fmt: skip
    assert ok and isinstance(text, str) and text.startswith("Inserted markdown cell ")
    text, ok = await call(edit, tmp_path, _edit(path, cell_id="raw", edit_mode="delete"))
    assert ok, text
    text, ok = await call(
        edit, tmp_path, _edit(path, cell_id="boom", new_source="Now prose", cell_type="markdown")
    )
    assert ok, text
    nb = nbf.read(str(path), as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    assert (nb.nbformat, nb.nbformat_minor) == (4, 5)
    assert nb.metadata["custom"] == {"keep": "me"}
    assert [c.cell_type for c in nb.cells] == ["code", "markdown", "markdown", "markdown", "code"]
    first = nb.cells[0]
    assert (first.source, first.outputs, first.execution_count) == ("2 + 2", [], None)
    assert nb.cells[2].source == "## New"
    assert (nb.cells[3].id, nb.cells[3].source) == ("boom", "Now prose")
    assert not list(tmp_path.glob(".*.tmp"))


async def test_edit_keeps_an_old_notebook_version(tmp_path: Path) -> None:
    path = tmp_path / "old.ipynb"
    make_notebook(path, minor=4)
    edit = EditNotebookHandler()
    args = _edit(path, cell_id="cell-1", edit_mode="insert", cell_type="code", new_source="x")
    text, ok = await call(edit, tmp_path, args)
    assert ok, text
    nb = nbf.read(str(path), as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    assert nb.nbformat_minor == 4 and "id" not in nb.cells[1] and nb.cells[1].source == "x"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"cell_id": "nope", "new_source": "x"}, "no cell has id 'nope'; the cell ids are: first"),
        ({"cell_id": "md", "edit_mode": "move"}, "failed to parse function arguments"),
        ({"edit_mode": "insert", "new_source": "x"}, "cell_type is required to insert a cell"),
        ({"edit_mode": "delete"}, "cell_id is required to delete a cell"),
    ],
)
async def test_edit_bad_input_is_answered_and_changes_nothing(
    tmp_path: Path, args: dict[str, Any], expected: str
) -> None:
    path = tmp_path / "nb.ipynb"
    make_notebook(path)
    before = path.read_bytes()
    text, ok = await call(EditNotebookHandler(), tmp_path, _edit(path, **args))
    assert not ok and isinstance(text, str) and text.startswith(expected)
    assert path.read_bytes() == before


async def test_edit_not_a_notebook(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("plain text\n")
    text, ok = await call(EditNotebookHandler(), tmp_path, _edit(path, cell_id="a"))
    assert not ok and isinstance(text, str) and "is not a valid notebook" in text
    assert path.read_text() == "plain text\n"


async def test_edit_outside_the_workspace_is_refused_under_never(arena: Arena) -> None:
    path = arena.outside / "nb.ipynb"
    make_notebook(path)
    before = path.read_bytes()
    text, ok = await call(
        EditNotebookHandler(), arena.ws, _edit(path, cell_id="md", new_source="pwned"),
        approval_policy=ApprovalPolicy.NEVER, sandbox_mode=SandboxMode.WORKSPACE_WRITE,
    )  # fmt: skip
    assert not ok and isinstance(text, str) and text.startswith("patch rejected")
    assert path.read_bytes() == before


async def test_edit_through_a_symlinked_folder_out_of_the_workspace_is_refused(
    arena: Arena,
) -> None:
    """The path check runs on the real path: ``ws/out_link`` points outside."""
    path = arena.outside / "nb.ipynb"
    make_notebook(path)
    before = path.read_bytes()
    text, ok = await call(
        EditNotebookHandler(), arena.ws, _edit("out_link/nb.ipynb", cell_id="md", new_source="x"),
        approval_policy=ApprovalPolicy.NEVER, sandbox_mode=SandboxMode.WORKSPACE_WRITE,
    )  # fmt: skip
    assert not ok and isinstance(text, str) and text.startswith("patch rejected")
    assert path.read_bytes() == before


async def test_edit_in_read_only_mode_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "nb.ipynb"
    make_notebook(path)
    before = path.read_bytes()
    for policy in (ApprovalPolicy.NEVER, ApprovalPolicy.ON_REQUEST):
        text, ok = await call(
            EditNotebookHandler(), tmp_path, _edit(path, cell_id="md", new_source="x"),
            approval_policy=policy, sandbox_mode=SandboxMode.READ_ONLY,
        )  # fmt: skip
        assert not ok and isinstance(text, str) and "rejected" in text
    assert path.read_bytes() == before


@pytest.mark.parametrize("named", ["absolute", "relative"])
async def test_edit_of_the_kernels_own_notebook_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, named: str
) -> None:
    path = tmp_path / "work" / "Analysis.ipynb"
    path.parent.mkdir()
    make_notebook(path)
    before = path.read_bytes()
    monkeypatch.setenv(SESSION_ENV, str(path) if named == "absolute" else "work/Analysis.ipynb")
    text, ok = await call(EditNotebookHandler(), tmp_path, _edit(path, cell_id="md"))
    assert (text, ok) == (OWN_NOTEBOOK, False) and isinstance(text, str)
    assert text.count(". ") == 0 and text.endswith(".")  # one sentence
    assert path.read_bytes() == before
    other = tmp_path / "other.ipynb"
    make_notebook(other)
    text, ok = await call(EditNotebookHandler(), tmp_path, _edit(other, cell_id="md"))
    assert ok, text


@pytest.mark.slow
def test_exec_model_reads_and_edits_a_notebook(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    path = work / "nb.ipynb"
    make_notebook(path)
    script: list[Any] = [
        [function_call("read_notebook", {"path": "nb.ipynb", "end_cell": 2}, "r1")],
        [function_call("edit_notebook", {"path": "nb.ipynb", "cell_id": "md",
                                         "new_source": "# Better title"}, "e1")],
        [message("Edited.")],
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MAGICS_", "OPENAI_"))}
    env |= {"HOME": str(tmp_path), "OPENAI_API_KEY": "sk-notebook-test-0123456789"}
    env.pop(SESSION_ENV, None)
    with ScriptedResponsesServer(script) as server:
        argv = [sys.executable, "-m", "agent_magics", "exec", "--provider", "responses"]
        argv += ["--base-url", server.base_url, "-m", "m", "-C", str(work)]
        argv += ["-a", "never", "-s", "workspace-write", "-c", 'shell_type="disabled"']
        argv += ["-c", 'experimental_supported_tools=["read_notebook","edit_notebook"]']
        argv += ["-c", f"log_dir={json.dumps(str(tmp_path / 'logs'))}", "fix the title"]
        done = subprocess.run(
            argv, env=env, cwd=work, capture_output=True, text=True, timeout=120,
            stdin=subprocess.DEVNULL, check=False,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Edited.\n"
    names = [t.get("name") or t["type"] for t in server.requests[0]["tools"]]
    assert "read_notebook" in names and "edit_notebook" in names
    read = server.outputs(1)["r1"]
    assert "--- cell 2 · id md · markdown\n# Title" in read and "id raw" not in read
    assert server.outputs(2)["e1"] == f"Replaced cell md (markdown) in {path}"
    nb = nbf.read(str(path), as_version=nbformat.NO_CONVERT)
    nbformat.validate(nb)
    assert nb.cells[1].source == "# Better title"


def test_confined_replace_does_not_follow_a_swapped_folder(arena: Arena) -> None:
    """The write itself walks the folders without following a symlink out of the roots,
    so a folder swapped for a link after the path check cannot move it outside."""
    target = arena.outside / "nb.ipynb"
    make_notebook(target)
    before = target.read_bytes()
    files = NotebookFiles((real(arena.ws),))
    with pytest.raises(PermissionError):
        files.replace(str(arena.ws / "out_link" / "nb.ipynb"), b"{}")
    assert target.read_bytes() == before
    inside = arena.ws / "nb.ipynb"
    make_notebook(inside)
    inside.chmod(0o640)
    files.replace(str(inside), b"new\n")
    assert inside.read_bytes() == b"new\n" and (inside.stat().st_mode & 0o777) == 0o640
