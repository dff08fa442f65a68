"""Text rules Codex inherits from Rust, shared by the patch library and the file tools.

OS errors are shown as Rust's ``Display`` for ``std::io::Error`` shows them: the C
library's text for the error number followed by ``(os error N)``, e.g.
``No such file or directory (os error 2)``. On Linux Rust takes that text from glibc's
``strerror_r``, which is what :func:`os.strerror` returns too.
"""

from __future__ import annotations

import os

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


#: Rust's message when a path handed to the OS contains a NUL byte.
NUL_IN_PATH = "file name contained an unexpected NUL byte"
#: Rust's message when ``read_to_string`` meets bytes that are not UTF-8.
INVALID_UTF8 = "stream did not contain valid UTF-8"


class RustIoError(OSError):
    """An I/O failure that Rust reports without an OS error number (a "simple message")."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def rust_os_error(exc: OSError) -> str:
    """``exc`` as Rust displays an OS error: ``<strerror text> (os error <errno>)``.

    An ``OSError`` that carries no error number (raised by Python code rather than by a
    system call) is shown by its own message, as Rust shows its custom errors.
    """
    code = exc.errno
    if code is None:
        return exc.strerror or str(exc)
    return f"{os.strerror(code)} (os error {code})"


def io_error_text(exc: BaseException) -> str:
    """The Rust display text of any failure raised by a file operation."""
    if isinstance(exc, RustIoError):
        return exc.message
    if isinstance(exc, OSError):
        return rust_os_error(exc)
    if isinstance(exc, ValueError) and "null" in str(exc):
        return NUL_IN_PATH
    return str(exc)
