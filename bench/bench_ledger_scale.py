"""One replica's hourly sweep (with its asset checks) and the day's analytics, on a fresh ledger
and on a month-old one: does per-sweep work stay independent of the ledger's size?

A generated ledger of ``--replicas`` replicas swept hourly, written through the ledger's own
writer (:meth:`LedgerStore.commit_tables`) in a temporary folder:

* *today* (2026-11-30), hours 00-22: one commit per replica-hour sweep, as the hourly schedule
  writes them (one small file per dataset and sweep);
* *history* (2026-11-01 .. 11-29): each day in one commit, i.e. the state the daily
  compaction job leaves (one file per day and dataset).

Every generated sweep copies the rows of one real simulated sweep (``sim-64``: 64 GPUs, k = 8,
one GPU slowed 1.5x, 3 repeats) under its own replica name, batch and sweep id. The measured
sweep is a real run of the ``faultsense_sweep`` Dagster job for ``sim-64`` (Phase 1, drill-down,
``fault_ledger``, all three asset checks) in a fresh process, after one warm-up sweep on a
scratch ledger (imports, cover planning), followed by the day's analytics partition (the
measurement of :mod:`bench._ledger_common`). Points:

* ``first hour``: empty ledger, 2026-11-30-00:00;
* ``last hour, day 1``: today's 23 hours of sweeps and no history, 2026-11-30-23:00;
* ``last hour, day 30``: the same plus 29 days of history, 2026-11-30-23:00.

Per point, ``--reps`` fresh processes; the table gives the median CPU seconds (user + system)
of the sweep run and of the analytics run, and the largest peak RSS of the process.

Run: ``.venv/bin/python -m bench.bench_ledger_scale --replicas 200``; prints a table and
writes bench/results/ledger_scale.md.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

from bench._ledger_common import FLEET, MEASURED, TODAY, copies, point, results_table, template_sweep, write_text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=200)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--workdir", help="generate here and keep it (default: a temporary folder, removed)")
    args = parser.parse_args()
    from faultsense_pipelines.ledger import LedgerStore

    started = time.time()
    with tempfile.TemporaryDirectory(prefix="ledger-scale-") as temporary:
        tmp = args.workdir or temporary
        Path(tmp).mkdir(parents=True, exist_ok=True)
        fleet, ledger, scratch = f"{tmp}/fleet.yaml", f"{tmp}/ledger", f"{tmp}/scratch"
        Path(fleet).write_text(FLEET.format(ledger=ledger))
        template = template_sweep(fleet, f"{tmp}/template")
        names = [MEASURED] + [f"fleet-{i:03d}" for i in range(1, args.replicas)]
        print(f"template sweep: {template.num_rows} rows; {args.replicas} replicas x {args.days} days", flush=True)
        rows = [point("first hour", fleet, f"{tmp}/empty", scratch, f"{TODAY}-00:00", args.reps)]

        store = LedgerStore(ledger)
        t = time.time()
        for hour in range(23):  # today: one commit per sweep
            for name in names:
                data, batches = copies(template, TODAY, [(name, hour)])
                store.commit_tables(TODAY, batches, data, operation="generated")
        print(f"today: {23 * len(names)} sweep commits in {time.time() - t:.0f} s", flush=True)
        rows.append(point("last hour, day 1", fleet, ledger, scratch, f"{TODAY}-23:00", args.reps))

        t = time.time()
        for back in range(1, args.days):  # history: one commit per (compacted) day
            day = (date.fromisoformat(TODAY) - timedelta(days=back)).isoformat()
            data, batches = copies(template, day, [(n, h) for n in names for h in range(24)])
            store.commit_tables(day, batches, data, operation="generated")
        print(f"history: {args.days - 1} days in {time.time() - t:.0f} s", flush=True)
        rows.append(point(f"last hour, day {args.days}", fleet, ledger, scratch, f"{TODAY}-23:00", args.reps))
    write_results(rows, args, template.num_rows, time.time() - started)


def write_results(rows: list[dict], args: argparse.Namespace, template_rows: int, seconds: float) -> None:
    lines = [
        "# One replica's sweep and checks on a fresh vs a month-old ledger (bench/bench_ledger_scale.py)",
        "",
        f"Generated ledger: {args.replicas} replicas swept hourly, {args.days} days (today 23 sweep commits per "
        f"replica, history one commit per day: the compacted state); each generated sweep {template_rows} rows "
        "(a real `sim-64` sweep: 64 GPUs, k = 8, one slow GPU, 3 repeats). The measured sweep is a real "
        "`faultsense_sweep` run of `sim-64` (Phase 1, drill-down, `fault_ledger`, three asset checks), then the "
        f"day's analytics partition; {args.reps} fresh processes per point, median CPU (user + system), largest "
        f"peak RSS of the process. Shared 2-core machine (load {os.getloadavg()[0]:.1f} at the end); "
        f"whole run {seconds / 60:.1f} min.",
        "",
        *results_table(rows, args.days),
    ]
    write_text("ledger_scale.md", lines)


if __name__ == "__main__":
    main()
