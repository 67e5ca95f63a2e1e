"""A year of hourly sweeps in the ledger, before and after compaction: the README's DuckDB
query's time and memory, and the ledger's size.

Generated through the ledger's own writer (:meth:`LedgerStore.append_batches`, many sweep batches per commit) in a temporary
folder: ``--replicas`` replicas (default 200) swept every hour for ``--days`` days (default 365),
every sweep with one confirmed fault row (an upper bound: most sweeps find nothing), each day
written in ``--commits-per-day`` commits (default 4), i.e. that many small files per day before
compaction. A real ledger holds one file per sweep (4,800 a day at 200 replicas) until the
daily ``ledger_maintenance`` job compacts the day; generating 1.75 million commits is beyond
this machine, so the "before" point has fewer, larger files than a real uncompacted year.
Probe rows are not generated: the query never opens a ``probe_runs`` file (the ``dataset``
partition is pruned from the Delta log before any file is read).

Then :meth:`LedgerStore.maintain` (compaction, Z-order by replica, vacuum) runs once. Each
query runs in a fresh process (``--reps`` times): the README's snippet -- open the table,
the file-pruned dataset of the fault rows, DuckDB's ``GROUP BY`` over it -- timed (wall and
CPU) with the process's peak RSS.

Run: ``.venv/bin/python -m bench.bench_ledger_year``; prints a table and writes
bench/results/ledger_year.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
LAST_DAY = date(2026, 11, 30)

QUERY = """
import json, resource, sys, time
t0, c0 = time.perf_counter(), time.process_time()
import duckdb
from deltalake import DeltaTable

t1, c1 = time.perf_counter(), time.process_time()
table = DeltaTable(sys.argv[1])
faults = table.to_pyarrow_dataset(file_pruning_predicate=[("dataset", "=", "fault_ledger")])
rows = duckdb.sql(\"\"\"SELECT replica, component, count(*) AS sweeps FROM faults
                      WHERE status = 'confirmed' GROUP BY ALL ORDER BY sweeps DESC\"\"\").fetchall()
print(json.dumps({"wall_s": time.perf_counter() - t0, "cpu_s": time.process_time() - c0, "groups": len(rows),
                  "query_wall_s": time.perf_counter() - t1, "query_cpu_s": time.process_time() - c1,
                  "top": rows[0][2], "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _sweeps(day: str, replicas: list[str], hours: range) -> dict[str, list]:
    """One confirmed ``gpu:<i>`` fault row per (replica, hour) of ``hours``, by sweep batch."""
    from faultsense_pipelines.ledger import FaultRow, make_fault_id

    start = datetime.fromisoformat(day).replace(tzinfo=UTC)
    return {
        f"faultsense-{r}-h{h:02d}": [
            FaultRow(
                fault_id=make_fault_id("faultsense", r, f"{day}T{h:02d}", f"gpu:{i % 8}"),
                detected_at=start + timedelta(hours=h, minutes=10), sweep_id=f"gen-{day}-{h:02d}", replica=r,
                detector="faultsense", component_kind="gpu", component=f"gpu:{i % 8}", gpu=i % 8, slowdown=1.5,
                status="confirmed", phase=2, probes_used=90,
            )
        ]
        for h in hours
        for i, r in enumerate(replicas)
    }  # fmt: skip


def _files(ledger: str) -> tuple[int, float]:
    data = [p for p in Path(ledger, "delta").glob("dataset=*/*/*.parquet")]
    return len(data), sum(p.stat().st_size for p in data) / 1e6


def _query(ledger: str, reps: int) -> dict:
    runs = []
    for _ in range(reps):
        out = subprocess.run([sys.executable, "-c", QUERY, f"{ledger}/delta"], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    files, mb = _files(ledger)
    return {
        "files": files,
        "mb": mb,
        "wall_s": statistics.median(r["wall_s"] for r in runs),
        "cpu_s": statistics.median(r["cpu_s"] for r in runs),
        "query_wall_s": statistics.median(r["query_wall_s"] for r in runs),
        "query_cpu_s": statistics.median(r["query_cpu_s"] for r in runs),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "groups": runs[0]["groups"],
        "top": runs[0]["top"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=200)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--commits-per-day", type=int, default=4)
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    from faultsense_pipelines.ledger import LedgerStore

    started = time.time()
    replicas = [f"fleet-{i:03d}" for i in range(args.replicas)]
    chunk = 24 // args.commits_per_day
    with tempfile.TemporaryDirectory(prefix="ledger-year-") as tmp:
        store = LedgerStore(f"{tmp}/ledger")
        t = time.time()
        for back in range(args.days - 1, -1, -1):
            day = (LAST_DAY - timedelta(days=back)).isoformat()
            for first in range(0, 24, chunk):
                sweeps = _sweeps(day, replicas, range(first, first + chunk))
                store.append_batches(day, faults=sweeps)
        generate_s = time.time() - t
        print(f"generated {args.days} days x {args.commits_per_day} commits in {generate_s:.0f} s", flush=True)
        before = _query(store.uri, args.reps)
        print("before", before, flush=True)
        t, c0 = time.time(), resource.getrusage(resource.RUSAGE_SELF)
        done = store.maintain(vacuum_hours=0, today=LAST_DAY + timedelta(days=1))
        c1 = resource.getrusage(resource.RUSAGE_SELF)
        maintain = {"wall_s": time.time() - t, "cpu_s": c1.ru_utime + c1.ru_stime - c0.ru_utime - c0.ru_stime, **done}
        print("maintain", maintain, flush=True)
        after = _query(store.uri, args.reps)
        print("after", after, flush=True)
    write_results(args, before, maintain, after, time.time() - started)


def write_results(args: argparse.Namespace, before: dict, maintain: dict, after: dict, seconds: float) -> None:
    rows = args.replicas * 24 * args.days
    lines = [
        "# A year of sweeps in the ledger, before and after compaction (bench/bench_ledger_year.py)",
        "",
        f"Generated: {args.replicas} replicas x 24 sweeps x {args.days} days = {rows:,} fault rows (one confirmed "
        f"row per sweep, an upper bound), each day in {args.commits_per_day} commits. A real ledger has one file "
        f"per sweep ({args.replicas * 24:,} a day) before the daily compaction; this one has "
        f"{args.commits_per_day} a day, so the 'before' row understates the real uncompacted cost. Probe rows "
        "are not generated (the query prunes the probe_runs partition unopened). Query: the README's snippet "
        f"in a fresh process, median of {args.reps}; peak RSS is the whole process (Python, DuckDB, Arrow). "
        f"Shared 2-core machine (load {os.getloadavg()[0]:.1f} at the end); whole run {seconds / 60:.1f} min.",
        "",
        "| state | data files | ledger MB | script wall s | script CPU s | query wall s (after imports) | query CPU s | peak RSS MB | groups |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in (("before compaction", before), ("after compaction", after)):
        lines.append(
            f"| {name} | {r['files']:,} | {r['mb']:.1f} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | {r['query_wall_s']:.2f} | "
            f"{r['query_cpu_s']:.2f} | {r['peak_rss_mb']:.0f} | {r['groups']} |"
        )
    lines += [
        "",
        f"Compaction (`LedgerStore.maintain`, Z-order by replica, vacuum 0 h): {maintain['partitions_compacted']} days, "
        f"{maintain['files_compacted']:,} files merged, {maintain['files_vacuumed']:,} vacuumed, "
        f"{maintain['wall_s']:.0f} s wall, {maintain['cpu_s']:.0f} s CPU. Target: the query under 5 s and 1 GB.",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "ledger_year.md").write_text(text)
    print(f"wrote {RESULTS / 'ledger_year.md'}")


if __name__ == "__main__":
    main()
