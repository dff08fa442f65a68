"""What a person approves is what runs: commands, patches and code shown with every
character that could hide part of them written out.

A command, a patch or code is shown to a person before it runs (the approval question,
the cards) and kept after (the transcripts, the exports). Some characters make such a
text read as something else: an escape sequence the terminal acts on (``ESC [ ; r``
erased ``rm -f`` from ``echo hello\\x1b[;rm -f precious.txt``), a carriage return that
draws over a line, bidi controls that reorder a line so a call reads as a string
(Trojan Source), zero-width characters, and other characters that draw nothing.
Removing them would show a text other than the one that runs, so :func:`visible`
writes each of them as an escape and changes nothing else:

* C0 and C1 control characters and DEL as ``\\x1b`` (Python's spelling); newline and tab
  stay, they are the layout of code; a carriage return is written ``\\x0d`` wherever it
  is, so no line is ever drawn over;
* format characters (Unicode category Cf: bidi controls, zero-width characters, the
  soft hyphen, the byte order mark, tag characters), line and paragraph separators,
  surrogates, unassigned code points, and the other characters Unicode says draw nothing
  (its default-ignorable code points: variation selectors, Hangul fillers, the
  combining grapheme joiner, ...) as ``<U+202E>``.

The form can be read back exactly: a backslash that would read as ``\\xHH`` is written
``\\x5c`` and a ``<`` that would read as ``<U+XXXX>`` is written ``<U+003C>``, so a
literal ``<U+202E>`` in a shell command (a redirection) never passes for a hidden
character. The result holds no control character but newline and tab: it is safe on a
terminal, in HTML (once escaped) and in markdown as it is.
"""

from __future__ import annotations

import re
import unicodedata

_DRAWS_NOTHING = (
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160),  # Hangul choseong and jungseong fillers
    (0x17B4, 0x17B5),  # Khmer inherent vowels
    (0x180B, 0x180F),  # Mongolian free variation selectors (U+180E is Cf)
    (0x3164, 0x3164),  # Hangul filler
    (0xFE00, 0xFE0F),  # variation selectors
    (0xFFA0, 0xFFA0),  # halfwidth Hangul filler
    (0xE0000, 0xE0FFF),  # tags and variation selectors supplement
)
"""Unicode's default-ignorable code points that are not format characters."""
_SHOWN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Cn"})
_INTRODUCER = re.compile(
    r"\\(?=x[0-9A-Fa-f]{2})"  # a backslash that would read as ``\xHH``
    r"|<(?=[Uu]\+[0-9A-Fa-f]{4,6}>)"  # a ``<`` that would read as ``<U+XXXX>``
)


def hidden(char: str) -> bool:
    """Whether ``char`` (one character) is one :func:`visible` writes as an escape
    because it draws nothing or acts instead of drawing."""
    if char in "\t\n":
        return False
    code = ord(char)
    if unicodedata.category(char) in _SHOWN_CATEGORIES:
        return True
    return any(low <= code <= high for low, high in _DRAWS_NOTHING)


CACHED_CHARACTERS = 20_000
"""Distinct characters whose written form is kept (about 2 MB at most): text of every
code point cannot make the cache grow without end."""


class _Shown(dict[int, str]):
    """Code point -> how :func:`visible` writes it, filled in as characters are met:
    ``str.translate`` then looks each one up at C speed (a megabyte of CJK text in
    under 0.1 s, 25 times faster than asking :func:`hidden` about every character)."""

    def __missing__(self, code: int) -> str:
        char = shown = chr(code)
        if hidden(char):
            shown = f"\\x{code:02x}" if code < 0xA0 else f"<U+{code:04X}>"
        if len(self) < CACHED_CHARACTERS:
            self[code] = shown
        return shown


_SHOWN = _Shown()


def _introducer(match: re.Match[str]) -> str:
    return "\\x5c" if match.group() == "\\" else "<U+003C>"


def visible(text: str) -> str:
    """``text`` with every hidden character written as an escape (``\\x1b``,
    ``<U+202E>``), everything else as it is; see the module's docstring."""
    # Introducers first: the escapes written next hold none that could be read twice.
    return _INTRODUCER.sub(_introducer, text).translate(_SHOWN)
