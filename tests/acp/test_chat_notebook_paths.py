"""A chat's kernel imports nothing of ours from the repository, and the chat's commands
cannot change what the kernel runs: the holes a review found in the bridge.

The project lies outside ``/tmp`` (under the checkout's ignored ``build/``), as a
cloned repository does: under ``/tmp`` every folder counts as writable anyway, and the
holes would not show. Its root holds a planted ``agent_magics/`` that marks a file when
imported, and a namespace ``agent_magics`` (folders without ``__init__.py``) whose
``jupyter/kernel/bridge.py`` marks another.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from agent_magics.acp.chat_notebook import ChatNotebook
from agent_magics.errors import UserError
from agent_magics.testing import function_call
from tests.helpers.chat_notebook import bare_kernelspec, chat_turn, kernelspec_of, write_notebook
from tests.helpers.jupyter_server import ProjectServer, ServerKernel
from tests.helpers.teaching import site_python_in

pytestmark = pytest.mark.slow

TOKEN = "chat-notebook-paths-token-86420"
CHECKOUT = Path(__file__).resolve().parents[2]
MARK = "import pathlib\npathlib.Path({marker!r}).touch()\n"


@dataclass
class Project:
    server: ProjectServer
    root: Path


@pytest.fixture(name="project", scope="module")
def project_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    pytest.importorskip("jupyter_server_ydoc", reason="pip install -e '.[browser]'")
    tmp = tmp_path_factory.mktemp("chat-paths")
    root = CHECKOUT / "build" / f"chat-paths-{uuid.uuid4().hex[:8]}"
    (root / "agent_magics").mkdir(parents=True)
    (root / "agent_magics" / "__init__.py").write_text(MARK.format(marker=str(root / "RAN")))
    kernel = root / "ns" / "agent_magics" / "jupyter" / "kernel"
    kernel.mkdir(parents=True)
    (kernel / "bridge.py").write_text(MARK.format(marker=str(root / "NS_RAN")))
    (root / "notebooks").mkdir()
    for name in ("paths", "bare", "own_env"):
        write_notebook(root / "notebooks" / f"{name}.ipynb")
    specs = tmp / "data" / "kernels"
    bare_kernelspec(specs / "no-agent-magics")
    kernelspec_of(site_python_in(root), specs / "project-env")  # root/env: in the folder
    saved = dict(os.environ)
    os.environ["JUPYTER_PATH"] = str(tmp / "data")
    os.environ["JUPYTER_RUNTIME_DIR"] = str(tmp / "runtime")
    try:
        server = ProjectServer(tmp, root, TOKEN)
        try:
            yield Project(server, root)
        finally:
            server.close()
    finally:
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(root, ignore_errors=True)


def _kernel(project: Project, notebook: str, kernel: str = "python3") -> ServerKernel:
    return ServerKernel(project.server.start_kernel(notebook, kernel=kernel), project.root)


def _chat(project: Project) -> ChatNotebook:
    chat = ChatNotebook.find(project.root, server_pid=project.server.process.pid)
    assert chat is not None
    return chat


async def test_a_folder_the_notebook_put_on_its_path_is_not_imported(project: Project) -> None:
    """The notebook's first cell, as many have: ``sys.path.insert(0, "..")`` (the
    repository's root, which holds the planted ``agent_magics``)."""
    kernel = _kernel(project, "notebooks/paths.ipynb")
    try:
        kernel.run("import sys; sys.path.insert(0, '..')")
        chat = _chat(project)
        said = await chat.attach(Path("notebooks/paths.ipynb"))
        assert said == "run_python now runs in notebooks/paths.ipynb's kernel."
        await chat.aclose()
        # and what the package imports later (nbformat at the first notebook call,
        # pydantic...) is held to the same folders by its import guard
        places = kernel.value(
            "list(__import__('agent_magics.import_guard').import_guard.writable_places())"
        )
        assert os.path.realpath(project.root) in places
    finally:
        kernel.close()
    assert not (project.root / "RAN").exists()


async def test_a_namespace_agent_magics_of_the_repository_is_refused(project: Project) -> None:
    """A kernel without agent_magics, whose notebook imported the repository's folders
    as a namespace package: attaching refuses, and its bridge never runs."""
    kernel = _kernel(project, "notebooks/bare.ipynb", "no-agent-magics")
    try:
        kernel.run(
            f"import sys; sys.path.insert(0, {str(project.root / 'ns')!r}); import agent_magics"
        )
        with pytest.raises(UserError, match="agent_magics"):
            await _chat(project).attach(Path("notebooks/bare.ipynb"))
    finally:
        kernel.close()
    assert not (project.root / "NS_RAN").exists()


async def test_an_environment_in_the_folder_is_kept_before_any_notebook_is_attached(
    project: Project,
) -> None:
    """A kernel of the server may run from ``env`` before the chat names its notebook:
    from the chat's start, no command writes there. (Before the attach-time test below:
    the protection is for the life of the process.)"""
    chat = _chat(project)
    planted = project.root / "env" / "early.pth"
    calls = [function_call("exec_command", {"cmd": f"touch {planted}"}, "c1")]
    shell = {"shell_type": "auto", "allow_login_shell": False}
    said, _ = await chat_turn(project.root, chat, calls, "never", **shell)
    assert not planted.exists(), said


async def test_the_kernels_own_environment_is_out_of_the_chats_commands_reach(
    project: Project,
) -> None:
    """The kernel runs from ``env`` inside the folder (a project's venv); the agent
    from another environment. After attaching, a command in the sandbox can write the
    folder but not the kernel's environment, where a ``.pth`` file would run at its
    next start, nor the attached notebook (its metadata holds the teacher's policy)."""
    kernel = _kernel(project, "notebooks/own_env.ipynb", "project-env")
    chat = _chat(project)
    try:
        await chat.attach(Path("notebooks/own_env.ipynb"))
        site = kernel.value("__import__('sysconfig').get_paths()['purelib']")
        assert site.startswith(str(project.root / "env"))
        planted = Path(site) / "planted.pth"
        calls = [
            function_call("exec_command", {"cmd": f"touch {planted}"}, "c1"),
            function_call("exec_command", {"cmd": "touch notebooks/ok.txt"}, "c2"),
            function_call("exec_command", {"cmd": "echo x >> notebooks/own_env.ipynb"}, "c3"),
        ]
        before = (project.root / "notebooks" / "own_env.ipynb").read_bytes()
        shell = {"shell_type": "auto", "allow_login_shell": False}
        said, _ = await chat_turn(project.root, chat, calls, "never", **shell)
    finally:
        await chat.aclose()
        kernel.close()
    assert (project.root / "notebooks" / "ok.txt").exists(), said
    assert not planted.exists(), said
    assert (project.root / "notebooks" / "own_env.ipynb").read_bytes() == before  # kept
