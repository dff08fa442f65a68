"""Text that is inert on a terminal: what we print never drives the terminal itself.

Text from the model, from tools and from MCP servers may hold escape sequences: OSC 52
writes the clipboard, OSC 8 hides a link under other text, CSI moves the cursor and
erases what was printed before, a lone carriage return overwrites a line. Before such
text is printed, :func:`terminal_safe` removes

* whole escape sequences: CSI (``ESC [`` or U+009B), the string sequences OSC, DCS,
  SOS, PM and APC up to their terminator (BEL or ST), and the short ``ESC x`` forms;
* every other C0 and C1 control character, DEL, and an escape sequence that never ends
  (its ``ESC`` goes, the rest stays as plain text);

and keeps printable text, newlines and tabs (``\\r\\n`` becomes ``\\n``). Nothing marks
what was removed: a colour code in a tool's output is noise, not news.

Colours this program emits itself are added after the text is made safe, so they stay.
"""

from __future__ import annotations

import re

# A control sequence: introducer, parameter bytes, intermediate bytes, final byte.
_CSI = r"(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]"
# OSC, DCS, SOS, PM, APC (7-bit and 8-bit introducers), ended by BEL or ST.
_STRING = r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)"
# ESC, intermediate bytes, one final byte (charset selection, keypad modes, RIS, ...).
_SHORT = r"\x1b[\x20-\x2f]*[\x30-\x7e]"
_SEQUENCE = re.compile(f"{_CSI}|{_STRING}|{_SHORT}")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_safe(text: str) -> str:
    """``text`` without escape sequences or control characters, newlines and tabs kept."""
    if _CONTROL.search(text) is None:
        return text
    text = _SEQUENCE.sub("", text.replace("\r\n", "\n"))
    return _CONTROL.sub("", text)
