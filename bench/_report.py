"""How results are judged and printed: a table row or one JSON line per benchmark."""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Result:
    value: float
    unit: str
    ratio: float | None = None
    baseline: float | None = None  # in ``unit``; shown in the table only
    note: str = ""


def spread(values: list[float], scale: float = 1.0) -> str:
    """``min/median/max`` of ``values`` times ``scale``."""
    low, mid, high = min(values), statistics.median(values), max(values)
    return "/".join(_fmt(x * scale) for x in (low, mid, high))


def check_target(target: str) -> str:
    """``target`` if it is empty (a reference row) or ``<= N`` / ``>= N`` with an optional
    unit; anything else (prose) is a mistake in the benchmark and raises ValueError."""
    parts = target.split()
    if parts:
        ok = len(parts) in (2, 3) and parts[0] in ("<=", ">=")
        try:
            float(parts[1] if ok else "x")
        except ValueError:
            ok = False
        if not ok:
            raise ValueError(
                f"a target is '<= N', '>= N' (a ratio), '<= N unit', or empty: {target!r}"
            )
    return target


def meets(target: str, value: float, ratio: float | None) -> bool | None:
    """Whether ``target`` holds: with a unit it bounds the value, without one the ratio."""
    parts = check_target(target).split()
    if not parts:
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
    name: str,
    target: str,
    result: Result | None,
    secs: float,
    as_json: bool,
    error: str = "",
    skipped: str = "",
) -> None:
    """Print one benchmark's outcome as a table row or a JSON line. Without a result it
    crashed (``error``) or was skipped (``skipped`` says why)."""
    ok = meets(target, result.value, result.ratio) if result else None
    if as_json:
        line: dict[str, Any] = {
            "name": name,
            "value": round(result.value, 4) if result else None,
            "unit": result.unit if result else None,
            "ratio": round(result.ratio, 4) if result and result.ratio is not None else None,
            "target": target,
            "met": ok,
            "note": result.note if result else skipped,
        }
        if error:
            line["error"] = error
        print(json.dumps(line), flush=True)
        return
    if result is None:
        status, why = ("CRASHED", error) if error else ("skipped", skipped)
        print(
            _row([name, "-", "", "-", "-", target, status, f"{secs:.1f}"]) + f"  {why}", flush=True
        )
        return
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
