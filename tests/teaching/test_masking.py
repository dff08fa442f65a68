"""The mask of withheld answers' lines (:mod:`agent_magics.tools.notebook.masking`) as
exact strings, on the forms a saved output takes: IPython's coloured tracebacks, its
numbered lines, a string's repr, HTML, a line a carriage return wrote over, a budget's
cut (the notebook context's clipped outputs)."""

from __future__ import annotations

import pytest

from agent_magics.jupyter.kernel.cell_log import clip
from agent_magics.jupyter.kernel.withheld_cells import masked_clip
from agent_magics.tools.notebook.masking import FRAME_MARK, LINE_MARK, OutputMask, Withheld, mask

ANSWER = (
    "def answer(x):\n"
    "    if x < 0:\n"
    "        return 0\n"
    "    else:\n"
    "        pass\n"
    '    scale = len("kumquat")\n'
    "    return scale / (x - 2)\n"
    ")\n"
)
WITHHELD = Withheld.of([ANSWER])
TEST = "assert answer(2) == 9"


@pytest.mark.parametrize(
    "line",
    [
        pytest.param("    return scale / (x - 2)", id="as-written"),
        pytest.param("return   scale /  (x - 2)", id="other-spacing"),
        pytest.param("----> 7     return scale / (x - 2)", id="ipython-arrow"),
        pytest.param('      6     scale = len("kumquat")', id="ipython-number"),
        pytest.param(
            "\x1b[38;5;28;01mreturn\x1b[39;00m scale \x1b[38;5;241m/\x1b[39m (x "
            "\x1b[38;5;241m-\x1b[39m \x1b[38;5;241m2\x1b[39m)",
            id="ansi-colours-inside",
        ),
        pytest.param("'def answer(x):\\n    if x < 0:\\n'", id="repr"),
        pytest.param("progress 10%\rreturn scale / (x - 2)", id="carriage-return"),
        pytest.param("log: return scale / (x - 2) at step 3", id="inside-a-longer-line"),
        pytest.param("return scale\u200b / (x - 2)", id="zero-width-space"),
        pytest.param(
            '<span class="k">return</span> <span class="n">scale</span> / (x - 2)', id="html"
        ),
        pytest.param("<td>scale = len(&quot;kumquat&quot;)</td>", id="html-escaped"),
    ],
)
def test_a_line_holding_a_withheld_line_is_masked(line: str) -> None:
    assert mask(f"before\n{line}\nafter", WITHHELD) == f"before\n{LINE_MARK}\nafter"


@pytest.mark.parametrize(
    "line", ["pass", "return 0", "else:", ")", "    return", TEST, "x < 0 is false"]
)
def test_plain_lines_and_the_tests_own_are_kept(line: str) -> None:
    """A withheld line as plain as anyone's code is not looked for ("return 0" is
    withheld as a line, yet too short to tell from another cell's)."""
    assert mask(line, WITHHELD) == line


def test_a_run_of_masked_lines_is_one_mark_and_the_error_stays() -> None:
    saved = (
        "Cell In[2], line 7, in answer(x)\n"
        "      1 def answer(x):\n"
        "      2     if x < 0:\n"
        "----> 7     return scale / (x - 2)\n"
        "\n"
        "ZeroDivisionError: division by zero"
    )
    assert mask(saved, WITHHELD) == (
        f"Cell In[2], line 7, in answer(x)\n{LINE_MARK}\n\nZeroDivisionError: division by zero"
    )


def frames(ref: str) -> list[str]:
    """A kernel's caches: ``In[2]`` and one file hold the answer, ``In[3]`` the test."""
    return {"In[2]": [ANSWER], "/tmp/ipykernel_1/22.py": [ANSWER + "\n"], "In[3]": [TEST]}.get(
        ref, []
    )


def test_frames_of_the_answers_code_are_masked_whole() -> None:
    """Python's traceback and IPython's: the answer's frame goes, header and lines (a
    line too plain to look for included), the test's frame and the error stay."""
    python = (
        "Traceback (most recent call last):\n"
        '  File "/tmp/ipykernel_1/33.py", line 1, in <module>\n'
        f"    {TEST}\n"
        "           ^^^^^^^^^\n"
        '  File "/tmp/ipykernel_1/22.py", line 3, in answer\n'
        "    return 0\n"
        "           ~~~~~~^~~~~~~~~\n"
        "ZeroDivisionError: division by zero"
    )
    assert mask(python, WITHHELD, frames) == (
        "Traceback (most recent call last):\n"
        '  File "/tmp/ipykernel_1/33.py", line 1, in <module>\n'
        f"    {TEST}\n"
        "           ^^^^^^^^^\n"
        f"  {FRAME_MARK}\n"
        "ZeroDivisionError: division by zero"
    )
    ipython = (
        "\x1b[31mZeroDivisionError\x1b[39m    Traceback (most recent call last)\n"
        "\x1b[36mCell\x1b[39m\x1b[36m \x1b[39m\x1b[32mIn[3]\x1b[39m, line 1\n"
        f"----> 1 {TEST}\n"
        "\n"
        "\x1b[36mCell\x1b[39m\x1b[36m \x1b[39m\x1b[32mIn[2]\x1b[39m, line 3, in answer(x)\n"
        "      2     if x < 0:\n"
        "----> 3         return 0\n"
        "\n"
        "ZeroDivisionError: division by zero"
    )
    assert mask(ipython, WITHHELD, frames) == (
        "\x1b[31mZeroDivisionError\x1b[39m    Traceback (most recent call last)\n"
        "\x1b[36mCell\x1b[39m\x1b[36m \x1b[39m\x1b[32mIn[3]\x1b[39m, line 1\n"
        f"----> 1 {TEST}\n"
        "\n"
        f"{FRAME_MARK}\n"
        "\n"
        "ZeroDivisionError: division by zero"
    )


def test_the_pieces_a_budget_cut_off_are_kept_only_when_they_cannot_be_the_answers() -> None:
    assert mask("ok\n    return scale / (x", WITHHELD, cut_after=True) == f"ok\n{LINE_MARK}"
    assert mask("e / (x - 2)\nok", WITHHELD, cut_before=True) == f"{LINE_MARK}\nok"
    assert mask("ok\nsomething else", WITHHELD, cut_after=True) == "ok\nsomething else"


def test_nothing_withheld_changes_nothing() -> None:
    text = "    return scale / (x - 2)"
    assert mask(text, Withheld()) == text
    assert mask(text, Withheld.of(["", "\n"])) == text
    assert not Withheld.of([""])


def test_a_clipped_cell_output_loses_the_pieces_of_the_answers_lines_at_its_cut() -> None:
    """The notebook context keeps a head and a tail of each output: the pieces of a
    withheld line the budget cut in two go, and the count of what was cut stays."""
    text = "ok\nreturn scale / (x - 2)\n" + "z" * 50 + "\nreturn scale / (x - 2)"
    kept = masked_clip(clip(text, 12, 12), OutputMask(WITHHELD))
    assert (kept.head, kept.tail, kept.cut) == (f"ok\n{LINE_MARK}", LINE_MARK, len(text) - 24)
    whole = masked_clip(clip("ok\n  return scale / (x - 2)", 100, 100), OutputMask(WITHHELD))
    assert whole.text() == f"ok\n{LINE_MARK}"


def test_a_frame_inside_an_exception_group_is_masked_too() -> None:
    group = (
        "  + Exception Group Traceback (most recent call last):\n"
        '  |   File "/tmp/ipykernel_1/22.py", line 3, in answer\n'
        "  |     return 0\n"
        "  | ExceptionGroup: checks (1 sub-exception)"
    )
    assert mask(group, WITHHELD, frames) == (
        "  + Exception Group Traceback (most recent call last):\n"
        f"  |   {FRAME_MARK}\n"
        "  | ExceptionGroup: checks (1 sub-exception)"
    )
