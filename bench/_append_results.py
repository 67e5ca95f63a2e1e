"""Append one run's rows to a benchmark's ``results/<name>.csv`` and its summary to ``<name>.md``."""

from __future__ import annotations

import csv
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def append_results(name: str, rows: list[dict], summary: str, md_header: str) -> None:
    """Append ``rows`` (dicts with the same keys) to ``results/<name>.csv`` (header written
    when the file is new) and ``summary`` to ``results/<name>.md`` (started with
    ``md_header`` when new); print ``summary``."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.csv"
    new_file = not path.exists()
    with path.open("a", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        if new_file:
            w.writeheader()
        w.writerows(rows)
    print(summary)
    md = RESULTS / f"{name}.md"
    if not md.exists():
        md.write_text(md_header)
    with md.open("a") as f:
        f.write(summary)
