"""How results are judged and printed: a table row or one JSON line per benchmark."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Result:
    value: float
    unit: str
    ratio: float | None = None
    baseline: float | None = None  # in ``unit``; shown in the table only
    note: str = ""


def meets(target: str, value: float, ratio: float | None) -> bool | None:
    """Whether ``target`` holds: with a unit it bounds the value, without one the ratio."""
    parts = target.split()
    if len(parts) < 2 or parts[0] not in ("<=", ">="):
        return None  # a reference row without a target
    op, bound, *unit = parts
    subject = value if unit else ratio
    if subject is None:
        return None
    return subject <= float(bound) if op == "<=" else subject >= float(bound)


def _fmt(x: float | None, digits: int = 3) -> str:
    if x is None:
        return "-"
    return f"{x:.{digits}g}" if abs(x) < 10 else f"{x:.1f}"


COLUMNS = (
    ("benchmark", 26),
    ("value", 10),
    ("unit", 4),
    ("baseline", 10),
    ("ratio", 7),
    ("target", 10),
    ("status", 7),
    ("secs", 6),
)


def _row(cells: list[str]) -> str:
    return "  ".join(c.ljust(w) for c, (_, w) in zip(cells, COLUMNS, strict=True)).rstrip()


def report(
    name: str, target: str, result: Result | None, secs: float, as_json: bool, error: str = ""
) -> None:
    """Print one benchmark's outcome as a table row or a JSON line."""
    if as_json:
        line: dict[str, Any] = {
            "name": name,
            "value": round(result.value, 4) if result else None,
            "unit": result.unit if result else None,
            "ratio": round(result.ratio, 4) if result and result.ratio is not None else None,
            "target": target,
        }
        if error:
            line["error"] = error
        print(json.dumps(line), flush=True)
        return
    if result is None:
        print(
            _row([name, "-", "", "-", "-", target, "CRASHED", f"{secs:.1f}"]) + f"  {error}",
            flush=True,
        )
        return
    ok = meets(target, result.value, result.ratio)
    status = "?" if ok is None else ("ok" if ok else "MISSED")
    cells = [
        name,
        _fmt(result.value),
        result.unit,
        _fmt(result.baseline),
        _fmt(result.ratio),
        target,
        status,
        f"{secs:.1f}",
    ]
    print(_row(cells) + (f"  ({result.note})" if result.note else ""), flush=True)


def header() -> None:
    print(_row([name for name, _ in COLUMNS]), flush=True)
    print(_row(["-" * w for _, w in COLUMNS]), flush=True)
