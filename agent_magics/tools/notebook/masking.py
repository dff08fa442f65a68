"""The lines of withheld answers, kept out of the text of every other cell's outputs.

Under ``solution_cells = "withhold"`` a graded answer's cell is never shown, but its
lines travel: a teacher's test cell that calls the answer fails with a traceback quoting
them (IPython's shows a few lines around the one that failed), a cell prints
``inspect.getsource(answer)``, run_python calls the answer, ``Out`` keeps a value. So
every output text the model gets under that policy (the notebook context and
``%agent context``, read_notebook, run_python, list_variables, inspect_variable) goes
through :class:`OutputMask` first:

* a traceback frame whose code is a withheld cell's is replaced whole, its header and its
  lines, by :data:`FRAME_MARK`. The header names the code (a file, or IPython's ``Cell
  In[N]``) and ``code_of`` finds it: in a kernel, IPython's caches still hold every
  cell's code. In a saved notebook nothing ties a frame to its cell, so there:
* any line that holds a withheld line is replaced by :data:`LINE_MARK`, a run of such
  lines by one. Lines are compared as a reader sees them: without colour codes and
  control characters (IPython colours each token of a saved traceback), with spacing,
  IPython's line numbers and arrows, and a string's quotes left out, a ``\\n`` escape
  (a string's repr) read as the end of a line, HTML read as its text. Where a budget
  cut a line, its piece goes when it could be part of a withheld line.

A withheld line too short or too plain to tell from anyone's code (``pass``, ``return``,
``)``, a bare keyword or a name of a few letters) is not looked for: where no frame ties
it to its cell such a line can stay. Everything else of the output stays, the error's
type and message and the other cells' frames included: they are what a student needs.
"""

from __future__ import annotations

import html
import keyword
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from agent_magics.text.inert import terminal_safe
from agent_magics.text.visible import hidden

LINE_MARK = "[withheld: lines of a graded answer the teacher keeps from the agent]"
FRAME_MARK = "[withheld: a frame in a graded answer the teacher keeps from the agent]"
MIN_LINE_CHARS = 4
"""Characters (spacing left out) a withheld line needs to be looked for at all."""
MIN_INSIDE_CHARS = 10
"""Characters a withheld line needs to be looked for inside longer lines too."""

CodeOf = Callable[[str], Iterable[str]]
"""The code a traceback frame header names (a file name, or ``In[N]`` for IPython's
``Cell In[N]``), as the kernel that ran it holds it; nothing when it is not known."""

_KEYWORDS = "|".join([*keyword.kwlist, "self", "print"])
_TRIVIAL = re.compile(rf"(?:{_KEYWORDS})(?: (?:None|True|False|self|0|1))?:?\)?")
_GUTTER = re.compile(r"(?:-*> ?)?\d+ ")  # IPython: "      3 code" / "----> 3 code"
_QUOTES = "'\"`"
_TAG = re.compile(r"<[^<>]*>")
_MAYBE_FRAME = re.compile(r"File|Cell|<ipython-input-")  # colour codes may split a header
_HEADERS = (
    re.compile(r'[\s|]*File "(?P<ref>[^"]+)", line \d+'),  # Python (| in exception groups)
    re.compile(r"\s*Cell (?P<ref>In\[\d+\]), line \d+"),  # IPython >= 8, a cell
    re.compile(r"\s*File (?P<ref>\S[^:]*):\d+"),  # IPython >= 8, a file
    re.compile(r"\s*(?P<ref><ipython-input-\d+-[0-9a-f]+>) in "),  # IPython 7
)


def _seen(text: str) -> str:
    """``text`` as a reader sees it, for comparing: no colour codes or control
    characters, nothing that draws nothing, spacing made single spaces."""
    text = terminal_safe(text)
    if not text.isascii():
        unseen = [ord(c) for c in set(text) if not c.isascii() and hidden(c)]
        text = text.translate(dict.fromkeys(unseen)) if unseen else text
    return " ".join(text.split())


def normal_code(code: str) -> str:
    """A cell's code for comparing two copies of it: trailing spaces and blank lines at
    either end left out (IPython's copy ends with a newline, the notebook's does not)."""
    return "\n".join(line.rstrip() for line in code.strip("\n").splitlines()).strip("\n")


def trivial(line: str) -> bool:
    """Whether a withheld line (as :func:`_seen` leaves it) is too plain to look for."""
    return (
        len(line.replace(" ", "")) < MIN_LINE_CHARS
        or not any(c.isalnum() for c in line)
        or _TRIVIAL.fullmatch(line) is not None
    )


@dataclass(frozen=True)
class Withheld:
    """The withheld cells' code: each whole, and their lines worth looking for."""

    sources: frozenset[str] = frozenset()
    lines: frozenset[str] = frozenset()
    inside: tuple[str, ...] = ()

    @classmethod
    def of(cls, sources: Iterable[str]) -> Withheld:
        codes = {normal_code(s) for s in sources} - {""}
        lines = {_seen(line) for code in codes for line in code.splitlines()}
        kept = frozenset(line for line in lines if not trivial(line))
        inside = tuple(sorted(line for line in kept if len(line) >= MIN_INSIDE_CHARS))
        return cls(frozenset(codes), kept, inside)

    def __or__(self, other: Withheld) -> Withheld:
        inside = tuple(sorted(set(self.inside) | set(other.inside)))
        return Withheld(self.sources | other.sources, self.lines | other.lines, inside)

    def __bool__(self) -> bool:
        return bool(self.sources)

    def found_in(self, text: str) -> Withheld:
        """This with only the lines ``text`` may hold (read whole as :func:`_readings`
        reads a line): one quick look at the whole text spares the look at each line."""
        flat = "\n".join(_readings(text))
        words = set(flat.split())  # a line's inner words stand alone wherever it is
        lines = frozenset(
            line for line in self.lines if words.issuperset(line.split(" ")[1:-1]) and line in flat
        )
        return Withheld(self.sources, lines, tuple(n for n in self.inside if n in lines))

    def holds_code(self, codes: Iterable[str]) -> bool:
        return any(normal_code(code) in self.sources for code in codes)

    def holds_line(self, seen: str) -> bool:
        """Whether a line (as :func:`_seen` leaves it) holds a withheld line."""
        if not seen:
            return False
        bare = seen.strip(_QUOTES).strip()
        gutterless = _GUTTER.sub("", seen, count=1)
        if {seen, bare, gutterless} & self.lines:
            return True
        return any(line in seen for line in self.inside)

    def holds_piece(self, seen: str) -> bool:
        """Whether a piece of a line cut off at an end (as :func:`_seen` leaves it) may
        be part of a withheld line."""
        piece = seen.strip(_QUOTES).strip()
        if len(piece) < MIN_LINE_CHARS:
            return False
        return self.holds_line(seen) or any(piece in line for line in self.lines)


def _readings(line: str) -> list[str]:
    """The ways a reader may read one line of output: each part a carriage return
    leaves (a terminal shows the last, a log file all), each part between a string's
    ``\\n`` escapes, with its escaped quotes read as quotes, and HTML as its text."""
    found = []
    for part in line.split("\r"):
        if "<" in part or "&" in part:
            part = f"{part}\\n{html.unescape(_TAG.sub('', part))}"
        for piece in part.replace("\\'", "'").replace('\\"', '"').split("\\n"):
            found.append(_seen(piece))
    return found


def _header(seen_raw: str) -> str | None:
    for pattern in _HEADERS:
        match = pattern.match(seen_raw)
        if match is not None:
            return match["ref"]
    return None


def _margin(line: str) -> str:
    """What a line starts with before its text: spaces, and an exception group's bars."""
    return line[: len(line) - len(line.lstrip(" \t|"))]


def _in_frame(line: str, header: str) -> bool:
    """Whether a line after a frame's ``header`` is still that frame's: indented past
    it (its code, the marks under it) or IPython's numbered lines and arrow."""
    if len(_margin(line)) > len(_margin(header)):
        return _header(line) is None
    return line.startswith("-") and ">" in line[:12]


@dataclass(frozen=True)
class OutputMask:
    """:func:`mask` bound to what is withheld and to the kernel's ``code_of``."""

    withheld: Withheld
    code_of: CodeOf | None = None

    def __call__(self, text: str, cut_before: bool = False, cut_after: bool = False) -> str:
        return mask(text, self.withheld, self.code_of, cut_before, cut_after)


def mask(
    text: str,
    withheld: Withheld,
    code_of: CodeOf | None = None,
    cut_before: bool = False,
    cut_after: bool = False,
) -> str:
    """``text`` with the frames and lines of ``withheld`` replaced by marks (see the
    module's docstring). ``cut_before`` / ``cut_after``: the text's first / last line is
    a piece of a longer line cut off by a budget, kept only when it cannot be part of
    a withheld line."""
    if not withheld or not text:
        return text
    found = withheld.found_in(text)
    frames = code_of is not None and _MAYBE_FRAME.search(text) is not None
    if not (found.lines or frames or cut_before or cut_after):
        return text
    lines = text.split("\n")
    out: list[str] = []
    marked = False
    tied: dict[str, bool] = {}  # each frame's code looked up once

    def heads_an_answers_frame(raw: str) -> bool:
        ref = _header(raw) if frames else None
        if ref is None or code_of is None:
            return False
        if ref not in tied:
            tied[ref] = withheld.holds_code(code_of(ref))
        return tied[ref]

    index = 0
    while index < len(lines):
        line = lines[index]
        raw = terminal_safe(line.replace("\r", "\n").rsplit("\n", 1)[-1])
        if heads_an_answers_frame(raw):
            out.append(_margin(raw) + FRAME_MARK)
            index += 1
            while index < len(lines) and _in_frame(terminal_safe(lines[index]), raw):
                index += 1
            marked = False
            continue
        cut = (index == 0 and cut_before) or (index == len(lines) - 1 and cut_after)
        held = withheld.holds_piece if cut else found.holds_line
        if (cut or found.lines) and any(held(seen) for seen in _readings(line)):
            if not marked:
                out.append(LINE_MARK)
            marked = True
        else:
            out.append(line)
            marked = False
        index += 1
    return "\n".join(out)
