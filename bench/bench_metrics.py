"""`faultsense metrics` on a fleet of 200 replicas: a scrape's CPU and the process's memory, by ledger age.

For each ledger age (days of hourly sweeps of every replica, the last day half swept) the
benchmark generates a ledger, then measures in a fresh process (``--reps`` of them):

* ``cold``: the first scrape (loading the table's log, reading the window);
* ``changed``: a scrape after one more sweep committed (a real ``commit_sweep`` with its
  ``sweeps`` row): what every scrape after a sweep costs;
* ``unchanged``: a scrape with nothing committed since (the cached state);
* peak RSS (``VmHWM``) of the process after all of them.

Generated ledger, per replica and hour: one ``sweeps`` row, 8 ``probe_runs`` rows (never read
by the exporter, but their files are in the table's log), and fault rows: replicas 0-9 have a
GPU confirmed in every sweep, replicas 10-19 one every other hour (episodes), the others none.
History days are one commit each (the state ``ledger_maintenance`` leaves: few files per day);
today is written in 50 commits (the small files between two day compactions). The scrape is
``prometheus_client.generate_latest`` over :class:`~faultsense_pipelines.metrics.FleetCollector`
(what ``/metrics`` answers), CPU = user + system of the whole process, every thread.

Targets (issue #30): a scrape within 1 s of CPU at 200 replicas; memory that does not grow with
the ledger's age -- reported as ratios to the youngest ledger of the same window, not asserted.

    .venv/bin/python -m bench.bench_metrics [--replicas 200] [--ages 1,7,30,90] [--reps 3] [--workdir DIR]

Prints a table and writes ``bench/results/metrics.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from bench._ledger_common import cpu_s, peak_rss_mb, write_text

TODAY = date(2026, 11, 30)
TODAY_HOURS = 12  # today is swept up to 11:00; "now" is 12:30
PROBES_PER_SWEEP = 8
TODAY_COMMITS = 50


def _day_table(day: date, replicas: int, hours: range):
    """Every sweep of ``day`` for ``hours`` as one Arrow table of the ledger's ``TABLE_SCHEMA``."""
    import numpy as np
    import pyarrow as pa

    from faultsense_pipelines.ledger import FAULT_LEDGER, PROBE_RUNS, SWEEPS, make_fault_id
    from faultsense_pipelines.ledger.store import TABLE_SCHEMA

    iso = day.isoformat()
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    sweeps = [(f"r{r:03d}", h) for h in hours for r in range(replicas)]
    n = len(sweeps)
    names = [r for r, _ in sweeps]
    batch = [f"faultsense-{r}-h{h:02d}" for r, h in sweeps]
    sweep_id = [f"gen-{iso}-{r}-{h:02d}" for r, h in sweeps]
    hour_at = [start + timedelta(hours=h) for _, h in sweeps]
    faulty = [(i, r, h) for i, (r, h) in enumerate(sweeps) if int(r[1:]) < 10 or (int(r[1:]) < 20 and h % 2 == 0)]

    def column(name: str, values: list, rows: int):
        f = TABLE_SCHEMA.field(name)
        return pa.array(values, f.type) if values is not None else pa.nulls(rows, f.type)

    def table(rows: int, values: dict) -> pa.Table:
        return pa.Table.from_arrays([column(f.name, values.get(f.name), rows) for f in TABLE_SCHEMA], schema=TABLE_SCHEMA)

    sweep_rows = table(
        n,
        {
            "dataset": [SWEEPS] * n, "date": [iso] * n, "batch": batch, "sweep_id": sweep_id, "replica": names,
            "swept_hour": hour_at, "status": ["healthy"] * n,
            "started_at": [t + timedelta(minutes=5) for t in hour_at], "finished_at": [t + timedelta(minutes=6) for t in hour_at],
            "executor": ["simulated"] * n, "drilldown": ["sequential"] * n, "probes_phase1": [PROBES_PER_SWEEP] * n,
            "probes_phase2": [0] * n, "failed_probes": [0] * n, "confirmed": [0] * n, "inconclusive": [0] * n,
            "schema_version": [3] * n,
        },
    )  # fmt: skip
    status = np.array(["healthy"] * n, dtype=object)
    confirmed = np.zeros(n, dtype=np.int32)
    for i, _, _ in faulty:
        status[i], confirmed[i] = "faulty", 1
    sweep_rows = sweep_rows.set_column(sweep_rows.schema.get_field_index("status"), "status", pa.array(status, pa.string()))
    sweep_rows = sweep_rows.set_column(
        sweep_rows.schema.get_field_index("confirmed"), "confirmed", pa.array(confirmed, pa.int32())
    )
    m = len(faulty)
    fault_rows = table(
        m,
        {
            "dataset": [FAULT_LEDGER] * m, "date": [iso] * m, "batch": [batch[i] for i, _, _ in faulty],
            "fault_id": [make_fault_id("faultsense", r, f"{iso}-{h:02d}:00", "gpu:3") for _, r, h in faulty],
            "detected_at": [hour_at[i] + timedelta(minutes=6) for i, _, _ in faulty],
            "sweep_id": [sweep_id[i] for i, _, _ in faulty], "replica": [r for _, r, _ in faulty],
            "detector": ["faultsense"] * m, "component_kind": ["gpu"] * m, "component": ["gpu:3"] * m, "gpu": [3] * m,
            "slowdown": [1.8] * m, "status": ["confirmed"] * m, "phase": [2] * m, "probes_used": [20] * m,
            "confidence": [0.999] * m, "schema_version": [3] * m,
        },
    )  # fmt: skip
    k = n * PROBES_PER_SWEEP
    rep = lambda values: list(np.repeat(np.array(values, dtype=object), PROBES_PER_SWEEP))  # noqa: E731
    probe_rows = table(
        k,
        {
            "dataset": [PROBE_RUNS] * k, "date": [iso] * k, "batch": rep(batch), "sweep_id": rep(sweep_id),
            "replica": rep(names), "phase": [1] * k, "probe_index": list(range(PROBES_PER_SWEEP)) * n,
            "gpus": [[0, 1, 2, 3]] * k, "latency_ms": [20.0] * k, "repeat": [0] * k, "executor": ["simulated"] * k,
        },
    )  # fmt: skip
    return pa.concat_tables([sweep_rows, fault_rows, probe_rows]), sorted(set(batch))


def generate(ledger: str, replicas: int, days: int) -> dict:
    """A ledger of ``days`` days (the last one, TODAY, half swept) of ``replicas`` replicas."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from faultsense_pipelines.ledger import LedgerStore

    store = LedgerStore(ledger, compact_every=0)
    t0 = time.monotonic()
    for back in range(days - 1, 0, -1):
        day = TODAY - timedelta(days=back)
        data, batches = _day_table(day, replicas, range(24))
        store.commit_tables(day, batches, data, operation="bench-history")
    data, batches = _day_table(TODAY, replicas, range(TODAY_HOURS))
    step = -(-len(batches) // TODAY_COMMITS)  # whole sweeps per commit: a commit replaces its batches
    for lo in range(0, len(batches), step):
        chunk = batches[lo : lo + step]
        part = data.filter(pc.is_in(data.column("batch"), pa.array(chunk)))
        store.commit_tables(TODAY, chunk, part, operation="bench-today")
    from deltalake import DeltaTable

    actions = DeltaTable(f"{ledger}/delta").get_add_actions(flatten=True)
    return {
        "generate_s": time.monotonic() - t0,
        "files": actions.num_rows,
        "mb": sum(actions.column("size_bytes").to_pylist()) / 1e6,
        "version": store.version(),
    }


def measure(ledger: str, replicas: int) -> dict:
    """In this (fresh) process: the cold, changed and unchanged scrapes, then peak RSS."""
    from prometheus_client import CollectorRegistry, generate_latest

    from faultsense_pipelines.assets.commit import commit_sweep
    from faultsense_pipelines.assets.partitions import SweepKey
    from faultsense_pipelines.ledger import SWEEPS, LedgerStore, ProbeRunRow, SweepRow
    from faultsense_pipelines.metrics import FleetCollector

    now = datetime(TODAY.year, TODAY.month, TODAY.day, TODAY_HOURS, 30, tzinfo=UTC)
    collector = FleetCollector(LedgerStore(ledger), intervals={f"r{r:03d}": 3600.0 for r in range(replicas)}, now=lambda: now)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    writer = LedgerStore(ledger, compact_every=0)

    def scrape() -> tuple[float, int]:
        t0 = cpu_s()
        text = generate_latest(registry)
        return cpu_s() - t0, len(text)

    first_day = (TODAY - timedelta(days=collector.window_days - 1)).isoformat()
    window_rows = LedgerStore(ledger).read_table(SWEEPS, since=first_day, columns=["batch"]).num_rows
    cold, size = scrape()
    changed, unchanged = [], []
    for i in range(3):
        key = SweepKey(f"{TODAY.isoformat()}-{TODAY_HOURS:02d}:00", f"r{i:03d}")
        row = SweepRow(sweep_id=f"bench-{i}", replica=key.replica, swept_hour=key.start, status="healthy",
                       started_at=now, finished_at=now, executor="simulated", probes_phase1=1)  # fmt: skip
        probe = [ProbeRunRow(row.sweep_id, key.replica, 1, 0, (0, 1), 20.0, 0, "simulated")]
        commit_sweep(writer, key, phase1=probe, phase2=None, faults=[], sweep_id=row.sweep_id, sweep=row)
        changed.append(scrape()[0])
        unchanged.append(scrape()[0])
    collector.close()
    return {
        "cold_cpu_s": cold, "changed_cpu_s": statistics.median(changed), "unchanged_cpu_s": statistics.median(unchanged),
        "peak_rss_mb": peak_rss_mb(), "reads": collector.reads, "errors": collector.scrape_errors, "scrape_bytes": size,
        "window_rows": window_rows,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=200)
    parser.add_argument("--ages", default="1,7,30,90", help="ledger ages in days, comma-separated")
    parser.add_argument("--reps", type=int, default=3, help="fresh processes per age")
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    ages = [int(a) for a in args.ages.split(",")]
    work = Path(args.workdir or tempfile.mkdtemp(prefix="bench-metrics-"))
    rows = []
    for age in ages:
        ledger = work / f"ledger-{age}d"
        if not (ledger / "delta").exists():
            info = generate(str(ledger), args.replicas, age)
        else:
            from deltalake import DeltaTable

            actions = DeltaTable(f"{ledger}/delta").get_add_actions(flatten=True)
            info = {"generate_s": 0.0, "files": actions.num_rows, "mb": sum(actions.column("size_bytes").to_pylist()) / 1e6}
        runs = []
        for _ in range(args.reps):
            # each run adds 3 sweeps to hour 12; a copy keeps every run on the same ledger
            scratch = work / f"run-{age}d"
            subprocess.run(["rm", "-rf", str(scratch)], check=True)
            subprocess.run(["cp", "-r", str(ledger), str(scratch)], check=True)
            out = subprocess.run(
                [sys.executable, "-m", "bench.bench_metrics", "--child", str(scratch), str(args.replicas)],
                capture_output=True, text=True, check=True,
            )  # fmt: skip
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        row = {
            "age": age,
            **info,
            **{k: statistics.median(r[k] for r in runs) for k in ("cold_cpu_s", "changed_cpu_s", "unchanged_cpu_s")},
        }
        row |= {"peak_rss_mb": max(r["peak_rss_mb"] for r in runs), "ok": all(r["errors"] == 0 and r["reads"] == 4 for r in runs)}
        row["changed_all"] = [round(r["changed_cpu_s"], 3) for r in runs]
        row["window_rows"] = runs[0]["window_rows"]
        rows.append(row)
        print(
            f"age {age:3d} d: {row['files']} files {row['mb']:.1f} MB, {row['window_rows']} sweep rows in the window; scrape CPU cold {row['cold_cpu_s']:.3f} s, "
            f"changed {row['changed_cpu_s']:.3f} s {row['changed_all']}, unchanged {row['unchanged_cpu_s']:.4f} s; "
            f"peak RSS {row['peak_rss_mb']:.0f} MB; ok={row['ok']}",
            flush=True,
        )
    write_text("metrics.md", report(rows, args))


def report(rows: list[dict], args: argparse.Namespace) -> list[str]:
    base = next((r for r in rows if r["age"] >= 7), rows[0])  # the first ledger whose window is full
    load = os.getloadavg()[0]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip() or "?"
    lines = [
        f"# `faultsense metrics` at {args.replicas} replicas: scrape CPU and memory by ledger age (bench/bench_metrics.py)",
        "",
        f"Generated ledgers: {args.replicas} replicas swept hourly; the last day ({TODAY}) swept up to 11:00 and written in "
        f"{TODAY_COMMITS} commits, earlier days one commit each (the compacted state). Per sweep: one `sweeps` row, "
        f"{PROBES_PER_SWEEP} `probe_runs` rows; replicas 0-9 confirm a GPU in every sweep, 10-19 every other hour. "
        f"The exporter's window is 7 days. {args.reps} fresh processes per age; median CPU (user + system, every thread) of "
        "a scrape (`generate_latest` over the collector, what `/metrics` answers): `cold` the first scrape (loads the table, "
        "reads the window), `changed` after one more sweep's commit (median of 3 per process), `unchanged` with nothing "
        "committed since; peak RSS (`VmHWM`) of the process after all of them (Python, Arrow, deltalake, prometheus_client). "
        f"Shared 2-core machine, load average {load:.1f} at the end. Measured on {commit}, {date.today()}.",
        "",
        "| ledger age (days) | files | MB | sweep rows in the window | scrape CPU s, cold | changed | (per process) | unchanged | peak RSS MB | changed / 7-day | RSS / 7-day | ok |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['age']} | {r['files']} | {r['mb']:.1f} | {r['window_rows']} | {r['cold_cpu_s']:.3f} | {r['changed_cpu_s']:.3f} | "
            f"{', '.join(str(v) for v in r['changed_all'])} | {r['unchanged_cpu_s']:.4f} | {r['peak_rss_mb']:.0f} | "
            f"{r['changed_cpu_s'] / base['changed_cpu_s']:.2f} | {r['peak_rss_mb'] / base['peak_rss_mb']:.2f} | "
            f"{'yes' if r['ok'] else 'NO'} |"
        )
    worst = max(r["changed_cpu_s"] for r in rows)
    oldest = rows[-1]
    lines += [
        "",
        f"Worst scrape after a change: {worst:.3f} s CPU (target: within 1 s). Oldest ledger ({oldest['age']} days) over "
        f"the {base['age']}-day one: scrape CPU {oldest['changed_cpu_s'] / base['changed_cpu_s']:.2f}, peak RSS "
        f"{oldest['peak_rss_mb'] / base['peak_rss_mb']:.2f} (target: memory does not grow with the ledger's age).",
        "",
        f"Reproduce: `nice .venv/bin/python -m bench.bench_metrics --replicas {args.replicas} --ages {args.ages} --reps {args.reps}`.",
        "",
    ]
    return lines


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(measure(sys.argv[2], int(sys.argv[3]))))
    else:
        main()
