"""Known-safe where the command runs: a program, repository or shell startup file the
model may have written (inside a writable root) is never known-safe.

Codex judges a program by its file name alone (``executable_name_lookup_key`` in
``is_dangerous_command.rs`` takes ``Path::file_name``), so ``./ls`` counts as ``ls``
there; tests whose names end in ``codex_shares_this`` pin such a case.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from agent_magics.tools.command_safety.paths import shell_startup_is_trusted
from agent_magics.tools.command_safety.rules import is_known_safe_command
from agent_magics.tools.sandbox.roots import real


def _program(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\ntouch pwned\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A workspace holding a fake ``ls``; HOME lies outside it."""
    root = real(tmp_path / "ws")
    root.mkdir()
    _program(root / "ls")
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return root


def safe(argv: list[str], ws: Path, cwd: Path | None = None) -> bool:
    return is_known_safe_command(argv, cwd=cwd or ws, writable_roots=[ws])


PROGRAMS = [
    pytest.param(["./ls"], False, id="dot-slash-in-workspace-codex-shares-this"),
    pytest.param(["{ws}/ls", "-la"], False, id="absolute-in-workspace-codex-shares-this"),
    pytest.param(["sub/../ls"], False, id="dot-dot-in-workspace"),
    pytest.param(["bash", "-lc", "./ls -la"], False, id="in-a-script-codex-shares-this"),
    pytest.param(["bash", "-lc", "echo hi && ./ls"], False, id="second-command"),
    pytest.param(
        ["bash", "-lc", "cd /usr/bin && ./ls"], False, id="after-cd-the-folder-is-unknown"
    ),
    pytest.param(["ls", "-la"], True, id="bare-name-found-outside"),
    pytest.param(["/bin/ls"], True, id="system-path"),
    pytest.param(["bash", "-lc", "/bin/ls && ls"], True, id="system-path-in-script"),
]


@pytest.mark.parametrize(("argv", "expected"), PROGRAMS)
def test_program_location(ws: Path, argv: list[str], expected: bool) -> None:
    assert safe([a.replace("{ws}", str(ws)) for a in argv], ws) is expected


def test_without_a_folder_a_relative_program_is_not_safe() -> None:
    assert is_known_safe_command(["./ls"]) is False
    assert is_known_safe_command(["/bin/ls"]) is True


def test_symlink_inside_a_root_is_judged_as_spelled(ws: Path) -> None:
    """``link/ls`` with ``link -> /bin``: the model can re-point the link later."""
    (ws / "link").symlink_to("/bin")
    assert safe(["link/ls"], ws) is False
    assert safe([str(ws / "link" / "ls")], ws) is False


def test_program_on_a_writable_path_entry(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bare name that PATH finds inside the workspace (say a project's .venv/bin)."""
    _program(ws / ".venv" / "bin" / "cat")
    monkeypatch.setenv("PATH", f"{ws / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}")
    assert safe(["cat", "x"], ws) is False
    assert safe(["ls"], ws) is True  # not in that folder: found further on


def test_relative_path_entry_points_into_the_workspace(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", f".{os.pathsep}{os.environ['PATH']}")
    assert safe(["ls"], ws) is False


GIT = ["git", "status"]


def test_git_in_a_repository_the_model_made_codex_shares_this(ws: Path) -> None:
    """``sub/.git/config`` may set ``core.fsmonitor``, which ``git status`` runs."""
    (ws / "sub" / ".git").mkdir(parents=True)
    assert safe(GIT, ws, cwd=ws / "sub") is False
    assert safe(["bash", "-lc", "git log -1"], ws, cwd=ws / "sub") is False


def test_git_in_the_protected_repository_of_the_workspace(ws: Path) -> None:
    (ws / ".git").mkdir()
    (ws / "sub").mkdir()
    assert safe(GIT, ws) is True
    assert safe(GIT, ws, cwd=ws / "sub") is True


def test_git_in_a_bare_looking_folder(ws: Path) -> None:
    bare = ws / "bare"
    for name in ("objects", "refs"):
        (bare / name).mkdir(parents=True)
    (bare / "HEAD").write_text("ref: refs/heads/main\n")
    assert safe(["git", "log"], ws, cwd=bare) is False


def test_git_with_a_writable_global_config(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(ws))
    assert safe(GIT, ws) is False


def test_git_outside_any_repository(ws: Path) -> None:
    assert safe(GIT, ws) is True


def test_shell_with_writable_startup_files(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A login shell runs ``~/.bash_profile`` first; in a writable home the model (or the
    repository) wrote it, so commands then run in a shell that reads no start-up file,
    and ``ls`` in it is known-safe again (Binder: the repository is the home)."""
    monkeypatch.setenv("HOME", str(ws))
    (ws / ".bashrc").write_text("touch ran\n")
    assert shell_startup_is_trusted([ws]) is False
    assert shell_startup_is_trusted([ws / "elsewhere"]) is True
    assert safe(["bash", "-lc", "ls"], ws) is True
    assert safe(["/bin/ls"], ws) is True


def test_git_status_really_runs_a_model_written_fsmonitor(ws: Path) -> None:
    """Why a repository the model made is not trusted: ``git status`` runs the program
    its ``core.fsmonitor`` names (checked here with real git)."""
    git = shutil.which("git")
    if git is None:
        pytest.skip("needs git")
    repo = ws / "sub"
    repo.mkdir()
    subprocess.run([git, "init", "-q", str(repo)], check=True)
    _program(ws / "hook")
    (ws / "hook").write_text(f"#!/bin/sh\ntouch {ws / 'ran'}\n")
    subprocess.run([git, "-C", str(repo), "config", "core.fsmonitor", str(ws / "hook")], check=True)
    assert safe(GIT, ws, cwd=repo) is False
    subprocess.run([git, "status"], cwd=repo, capture_output=True, check=False)
    assert (ws / "ran").exists()


def test_relative_path_entry_after_cd(ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After ``cd`` the folder a relative PATH entry means is unknown."""
    monkeypatch.setenv("PATH", f".{os.pathsep}{os.environ['PATH']}")
    assert safe(["bash", "-lc", "cd /usr && ls"], ws, cwd=ws / "nowhere") is False
