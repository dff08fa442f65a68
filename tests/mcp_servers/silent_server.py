"""A "server" that starts and never answers: it writes its pid to stderr and sleeps."""

from __future__ import annotations

import os
import sys
import time

if __name__ == "__main__":
    sys.stderr.write(f"pid {os.getpid()}, never answering\n")
    sys.stderr.flush()
    time.sleep(3600)
