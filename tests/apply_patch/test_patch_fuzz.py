"""Fuzzing the patch parser, the verifier and the confined applier: whatever the model
sends, the only exceptions that leave them are the ones answered to the model.

Kept to a few seconds in the suite; ``FUZZ_EXAMPLES=20000`` runs them longer.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_magics.apply_patch import (
    PatchApplyError,
    PatchParseError,
    PatchVerificationError,
    parse_patch,
    verify_patch,
)
from agent_magics.apply_patch.files import ConfinedFiles
from agent_magics.tools.sandbox.roots import real

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

# Any code point, lone surrogates and NUL included.
ANY_CHAR = st.characters(codec=None, categories=None)
PATH_PART = st.one_of(
    st.sampled_from(["", ".", "..", "~", "a", "b", ".git", "a\x00", "\udc80", "x" * 300]),
    st.text(ANY_CHAR, max_size=8),
)
PATH = st.one_of(
    st.lists(PATH_PART, min_size=1, max_size=6).map("/".join),
    st.integers(1, 3000).map(lambda n: "/".join(["d"] * n)),
    st.sampled_from(["/dev/zero", "/dev/null", "/proc/self/mem", "/", "~/", "fifo"]),
)
LINE = st.one_of(
    st.sampled_from(["@@", "@@ x", "*** End of File", "+x", "-x", " x", "-", "+", " "]),
    st.text(ANY_CHAR, max_size=12),
)


@st.composite
def hunks(draw: st.DrawFn) -> str:
    path = draw(PATH)
    kind = draw(st.sampled_from(["Add File", "Delete File", "Update File", "Bogus"]))
    lines = [f"*** {kind}: {path}"]
    if kind == "Update File" and draw(st.booleans()):
        lines.append(f"*** Move to: {draw(PATH)}")
    lines += draw(st.lists(LINE, max_size=6))
    return "\n".join(lines)


PATCH = st.one_of(
    st.lists(hunks(), max_size=4).map(
        lambda hs: "\n".join(["*** Begin Patch", *hs, "*** End Patch"])
    ),
    st.text(ANY_CHAR, max_size=200),
    st.lists(st.one_of(LINE, hunks()), max_size=8).map("\n".join),
)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ws")
    (folder / "a").write_text("x\n")
    (folder / ".git").mkdir()
    os.mkfifo(folder / "fifo")
    return folder


@FUZZ
@given(PATCH)
def test_parser_raises_only_parse_errors(text: str) -> None:
    with contextlib.suppress(PatchParseError):
        parse_patch(text)


@FUZZ
@given(PATCH)
def test_verifier_raises_only_verification_errors(workspace: Path, text: str) -> None:
    with contextlib.suppress(PatchVerificationError):
        verify_patch(text, workspace)


@FUZZ
@given(PATCH)
def test_confined_apply_raises_only_apply_errors(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        (ws / "a").write_text("x\n")
        try:
            verified = verify_patch(text, ws)
        except PatchVerificationError:
            return
        files = ConfinedFiles((real(ws),), (real(ws) / ".git",))
        with contextlib.suppress(PatchApplyError):
            verified.apply(files)
        # Nothing appeared next to the workspace.
        assert [p.name for p in Path(tmp).iterdir()] == ["ws"]
