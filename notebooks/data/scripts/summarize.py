"""Monthly summary of the station readings: mean temperature and total rain.

    python3 scripts/summarize.py

Reads every readings/*.csv file (one row per station and day) and prints one line
per station and month.
"""

import csv
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def monthly(rows):
    """Mean temperature and total rain per (station, month)."""
    temps = defaultdict(float)
    rain = defaultdict(float)
    for row in rows:
        key = (row["station"], row["date"][:7])
        temps[key] += float(row["temp_c"])
        rain[key] += float(row["rain_mm"])
    return {key: (temps[key] / 30, rain[key]) for key in temps}


def main():
    rows = []
    for path in sorted((ROOT / "readings").glob("*.csv")):
        with path.open(newline="") as f:
            rows.extend(csv.DictReader(f))
    print("station  month    mean °C  rain mm")
    for (station, month), (mean, rain) in sorted(monthly(rows).items()):
        print(f"{station:<8} {month}  {mean:7.1f}  {rain:7.1f}")


if __name__ == "__main__":
    main()
