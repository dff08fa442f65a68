#!/usr/bin/env python3
"""Record cases with per-conversation scripts (``agents``) from the real Codex CLI.

    CODEX_BIN=/path/to/codex python3 tests/conformance/record_agents.py \
        tests/conformance/extra-0.171/multi_agent/cases/x.json [...] [-j 2]

Each result goes to ``../goldens/<name>.json`` next to the case's folder.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def record(path: str) -> str:
    case = json.load(open(path))
    res = harness.run_case(case, verbose=True)
    version = subprocess.run([harness.find_codex_bin(), "--version"],
                             capture_output=True, text=True).stdout.strip()
    res = {"codex_version": version, **res}
    out_dir = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(path))), "goldens")
    os.makedirs(out_dir, exist_ok=True)
    out = os.path.join(out_dir, os.path.basename(path))
    with open(out, "w") as f:
        f.write(json.dumps(res, indent=1, ensure_ascii=False) + "\n")
    return f"{out}: exit {res['codex_exit_code']}, {res['n_requests']} requests, {res['elapsed_s']}s"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="+")
    ap.add_argument("-j", type=int, default=1)
    a = ap.parse_args(argv)
    with concurrent.futures.ThreadPoolExecutor(a.j) as pool:
        for line in pool.map(record, a.cases):
            print(line, flush=True)


if __name__ == "__main__":
    main()
