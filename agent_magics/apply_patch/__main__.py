"""``python -m agent_magics.apply_patch 'PATCH'``: Codex's standalone ``apply_patch``.

One argument is the patch; with none the patch is read from stdin. Same stdout, stderr
and exit status as the Rust program.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from agent_magics.text.rust import INVALID_UTF8

from .apply import apply_patch_to_disk

USAGE = "Usage: apply_patch 'PATCH'\n       echo 'PATCH' | apply-patch"


def _emit(stdout: str, stderr: str) -> None:
    if stdout:
        sys.stdout.buffer.write(stdout.encode("utf-8"))
        sys.stdout.buffer.flush()
    if stderr:
        sys.stderr.buffer.write(stderr.encode("utf-8"))
        sys.stderr.buffer.flush()


def run(argv: Sequence[str]) -> int:
    """Run the program with ``argv`` (without the program name); return the exit code."""
    if argv:
        try:
            # Undo Python's argv decoding to check the bytes the program was given.
            patch = os.fsencode(argv[0]).decode("utf-8")
        except UnicodeDecodeError:
            _emit("", "Error: apply_patch requires a UTF-8 PATCH argument.\n")
            return 1
    else:
        try:
            patch = sys.stdin.buffer.read().decode("utf-8")
        except UnicodeDecodeError:
            _emit("", f"Error: Failed to read PATCH from stdin.\n{INVALID_UTF8}\n")
            return 1
        except OSError as exc:
            _emit("", f"Error: Failed to read PATCH from stdin.\n{exc}\n")
            return 1
        if not patch:
            _emit("", USAGE + "\n")
            return 2
    if len(argv) > 1:
        _emit("", "Error: apply_patch accepts exactly one argument.\n")
        return 2
    result = apply_patch_to_disk(patch, os.getcwd())
    _emit(result.stdout, result.stderr)
    return result.exit_code


def main() -> None:
    """Entry point: exit with the program's status."""
    sys.exit(run(sys.argv[1:]))


if __name__ == "__main__":
    main()
