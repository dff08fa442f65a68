"""Find a run of lines in a file, from strict to lenient (Codex's ``seek_sequence``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .parser import rust_trim, rust_trim_end

__all__ = ["normalise_punctuation", "seek_sequence"]

_PUNCTUATION = str.maketrans(
    {
        **dict.fromkeys(["\u2010", "\u2011", "\u2012", "\u2013", "\u2014", "\u2015"], "-"),
        "\u2212": "-",
        **dict.fromkeys(["\u2018", "\u2019", "\u201a", "\u201b"], "'"),
        **dict.fromkeys(["\u201c", "\u201d", "\u201e", "\u201f"], '"'),
        **dict.fromkeys(
            ["\u00a0", *(chr(code) for code in range(0x2002, 0x200B)), "\u202f", "\u205f"],
            " ",
        ),
        "\u3000": " ",
    }
)


def normalise_punctuation(line: str) -> str:
    """``line`` trimmed, with typographic dashes, quotes and spaces mapped to ASCII."""
    return rust_trim(line).translate(_PUNCTUATION)


def _same(line: str) -> str:
    return line


_PASSES: tuple[Callable[[str], str], ...] = (
    _same,
    rust_trim_end,
    rust_trim,
    normalise_punctuation,
)


def seek_sequence(
    lines: Sequence[str], pattern: Sequence[str], start: int, eof: bool
) -> int | None:
    """Index of the first occurrence of ``pattern`` in ``lines`` at or after ``start``.

    Four passes over the candidate positions, each more lenient: exact, ignoring
    trailing white space, ignoring white space at both ends, and finally also mapping
    Unicode punctuation to ASCII. With ``eof`` only the last possible position is tried.
    An empty pattern matches at ``start``; a pattern longer than ``lines`` never matches.
    """
    if not pattern:
        return start
    if len(pattern) > len(lines):
        return None
    last = len(lines) - len(pattern)
    candidates = range(last if eof else start, last + 1)
    for key in _PASSES:
        wanted = [key(line) for line in pattern]
        for index in candidates:
            if all(key(lines[index + offset]) == want for offset, want in enumerate(wanted)):
                return index
    return None
