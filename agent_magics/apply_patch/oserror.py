"""Render Python I/O errors the way Rust's ``std::io::Error`` displays them.

Codex prints OS errors with Rust's ``Display`` for ``io::Error``: the C library's text
for the error number followed by ``(os error N)``, e.g.
``No such file or directory (os error 2)``. On Linux Rust takes that text from glibc's
``strerror_r``, which is what :func:`os.strerror` returns too.
"""

from __future__ import annotations

import os

__all__ = ["INVALID_UTF8", "NUL_IN_PATH", "RustIoError", "io_error_text", "rust_os_error"]

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
