"""Text rules Codex inherits from Rust, shared by the patch library and the file tools."""

from __future__ import annotations

#: Unicode ``White_Space``: what Rust's ``str::trim`` removes (Python's ``str.strip``
#: would also remove U+001C..U+001F).
RUST_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    + "".join(chr(code) for code in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000"
)

#: The largest value a Rust ``u64`` argument accepts.
U64_MAX = 2**64 - 1


def cut_at_char_boundary(text: str, max_bytes: int) -> str:
    """The longest prefix of ``text`` that fits in ``max_bytes`` UTF-8 bytes."""
    if len(text) * 4 <= max_bytes:
        return text
    data = text.encode("utf-8", "surrogatepass")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", "ignore")
