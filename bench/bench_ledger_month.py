"""The 200-replica month: one replica's hourly sweep (with its asset checks) in the first hour
of a ledger's first day and in the last hour of its 30th day.

The points are those of :mod:`bench.bench_ledger_scale`, the measurement that of
:mod:`bench._ledger_common`: a real
``faultsense_sweep`` run of ``sim-64`` (Phase 1, drill-down, ``fault_ledger``, three asset
checks) and the day's analytics, in fresh processes, median CPU seconds (user + system) and
the largest peak RSS. The difference is how the month is generated, so that 200 replicas fit
in a session. ``ledger_scale_bench`` makes one ledger commit per generated sweep, about 25 a
minute on the shared machine, so 200 replicas' 4,600 sweeps of a day did not finish. Here:

* *today* (2026-11-30), hours 00-22, 200 replicas. The first sweep goes through the ledger's
  own writer (:meth:`LedgerStore.commit_tables`, which creates the table). Each of the other
  sweeps gets its own Parquet file per dataset (``fault_ledger``, ``probe_runs``): the rows of
  one real ``sim-64`` sweep, relabelled with its replica, batch and sweep id. The files are
  named as Delta writers name them and carry per-file statistics (row count, min/max and null
  counts of the string and numeric columns; timestamp columns have none). They are added to
  the Delta log with ``DeltaTable.create_write_transaction``, in one commit per hour. Today's
  partitions then hold one file per sweep and dataset, as the hourly sweeps leave them, in
  23 log entries instead of 4,600.
* *history* (2026-11-01 .. 11-29): each day in one :meth:`LedgerStore.commit_tables`, i.e. the
  state the daily compaction leaves (one file per day and dataset), as in ``ledger_scale_bench``.

The first-hour and last-day points alternate, one fresh process each (the first hour on a new,
empty ledger every time), so that each pair of runs sees about the same load on a shared
machine; the table gives the per-pair ratios beside the pooled medians.

A real sweep writes up to three files (Phase 1 probes, Phase 2 probes, faults); a generated
one writes two (probes, faults).

Run: ``nice -n 19 .venv/bin/python -m bench.bench_ledger_month --replicas 200 --reps 3``. It
prints a table and writes bench/results/ledger_month.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
import uuid
from datetime import date, timedelta
from pathlib import Path

from bench._ledger_common import FLEET, MEASURED, TODAY, copies, cpu_s, joined, point, results_table, template_sweep, write_text
from faultsense_pipelines.ledger import COMPACT_EVERY

PARTITION_COLUMNS = ("dataset", "date")


def _stats(table) -> str:
    """Delta per-file statistics JSON of ``table``: numRecords, and min/max/null counts of its
    string, integer and floating-point columns."""
    import pyarrow as pa
    import pyarrow.compute as pc

    low, high, nulls = {}, {}, {}
    for name in table.column_names:
        column = table.column(name)
        kind = column.type
        if not (pa.types.is_string(kind) or pa.types.is_integer(kind) or pa.types.is_floating(kind)):
            continue
        nulls[name] = column.null_count
        if column.null_count < len(column):
            span = pc.min_max(column)
            low[name], high[name] = span["min"].as_py(), span["max"].as_py()
    return json.dumps({"numRecords": table.num_rows, "minValues": low, "maxValues": high, "nullCount": nulls})


def _add_sweep_files(table_dir: str, data) -> list:
    """One Parquet file per dataset of ``data`` (one sweep's rows), written under the table's
    partition folders; returns their Delta add actions."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    from deltalake.transaction import AddAction

    actions = []
    for dataset in sorted(set(data.column("dataset").to_pylist())):
        rows = data.filter(pc.equal(data.column("dataset"), dataset))
        day = rows.column("date")[0].as_py()
        rows = rows.drop_columns(list(PARTITION_COLUMNS))
        relative = f"dataset={dataset}/date={day}/part-00000-{uuid.uuid4()}-c000.snappy.parquet"
        path = f"{table_dir}/{relative}"
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(rows, path, compression="snappy")
        actions.append(
            AddAction(
                path=relative,
                size=os.path.getsize(path),
                partition_values={"dataset": dataset, "date": day},
                modification_time=int(time.time() * 1000),
                data_change=True,
                stats=_stats(rows),
            )
        )
    return actions


def generate_today(ledger: str, template, names: list[str], hours: int = 23) -> dict:
    """Today's sweeps (every replica, hours ``0..hours-1``, in that order): one file per sweep
    and dataset, one Delta commit per :data:`COMPACT_EVERY` sweeps, and after each such commit
    but the last the day's compaction that a sweep's commit runs every ``COMPACT_EVERY``
    versions (:meth:`LedgerStore.compact_day`), so the day holds what it holds in production
    just before a compaction is due: merged files plus ``COMPACT_EVERY`` sweeps' small files.

    Returns ``sweeps``, ``compactions`` and the CPU seconds of each compaction (``compact_cpu_s``).
    """
    from deltalake import CommitProperties, DeltaTable

    from faultsense_pipelines.ledger import COMPACT_EVERY, LedgerStore

    order = [(name, hour) for hour in range(hours) for name in names]
    first, batches = copies(template, TODAY, order[:1])
    store = LedgerStore(ledger, compact_every=0)
    store.commit_tables(TODAY, batches, first, operation="generated")  # creates the table
    table_dir = f"{ledger}/delta"
    table = DeltaTable(table_dir)
    cpu: list[float] = []
    for start in range(1, len(order), COMPACT_EVERY):
        actions = []
        for name, hour in order[start : start + COMPACT_EVERY]:
            data, _ = copies(template, TODAY, [(name, hour)])
            actions += _add_sweep_files(table_dir, data)
        table.create_write_transaction(
            actions,
            mode="append",
            schema=table.schema(),
            partition_by=list(PARTITION_COLUMNS),
            commit_properties=CommitProperties(custom_metadata={"faultsense.operation": "generated"}),
        )
        table.update_incremental()
        if start + COMPACT_EVERY < len(order):  # the last chunk stays small files: the worst moment
            t = cpu_s()
            store.compact_day(TODAY)
            cpu.append(cpu_s() - t)
    return {"sweeps": len(order), "compactions": len(cpu), "compact_cpu_s": cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=200)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--workdir", help="generate here and keep it (default: a temporary folder, removed)")
    parser.add_argument(
        "--measure-only",
        action="store_true",
        help="measure the pairs again on the month a previous run generated in --workdir (its generated.json)",
    )
    args = parser.parse_args()
    if args.measure_only and not args.workdir:
        parser.error("--measure-only needs --workdir")
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="ledger-month-") as temporary:
        tmp = args.workdir or temporary
        Path(tmp).mkdir(parents=True, exist_ok=True)
        fleet, ledger, scratch = f"{tmp}/fleet.yaml", f"{tmp}/ledger", f"{tmp}/scratch"
        if args.measure_only:
            generated = json.loads(Path(tmp, "generated.json").read_text())
        else:
            generated = generate(args, tmp, fleet, ledger, scratch)
            Path(tmp, "generated.json").write_text(json.dumps(generated))
        # The two compared points alternate, one run each, so that both see the same load.
        first, last, pairs = [], [], []
        for rep in range(args.reps):
            first.append(point("first hour", fleet, f"{tmp}/empty-{time.time_ns()}", scratch, f"{TODAY}-00:00", 1))
            last.append(point(f"last hour, day {args.days}", fleet, ledger, scratch, f"{TODAY}-23:00", 1))
            pairs.append({"ratio": last[-1]["sweep_cpu_s"] / first[-1]["sweep_cpu_s"], "load": os.getloadavg()[0]})
            print(f"pair {rep + 1}: day {args.days} / first hour {pairs[-1]['ratio']:.2f}", flush=True)
        generated["pairs"] = pairs
        rows = [joined(first), generated["day1"], joined(last)]
    write_results(rows, args, generated, time.time() - started)


def generate(args: argparse.Namespace, tmp: str, fleet: str, ledger: str, scratch: str) -> dict:
    """The month in ``tmp``: today's sweeps (:func:`generate_today`), the last hour of day 1
    measured (``reps`` runs), then the history days. Returns what the results describe:
    sweeps, compactions and their CPU seconds (mean, max), wall seconds, the day-1 row."""
    from faultsense_pipelines.ledger import LedgerStore

    Path(fleet).write_text(FLEET.format(ledger=ledger))
    template = template_sweep(fleet, f"{tmp}/template")
    names = [MEASURED] + [f"fleet-{i:03d}" for i in range(1, args.replicas)]
    print(f"template sweep: {template.num_rows} rows; {args.replicas} replicas x {args.days} days", flush=True)
    t = time.time()
    today = generate_today(ledger, template, names)
    cpu = today["compact_cpu_s"]
    generated = {
        "template_rows": template.num_rows,
        "today_sweeps": today["sweeps"],
        "compactions": today["compactions"],
        "compact_mean_s": sum(cpu) / len(cpu) if cpu else 0.0,
        "compact_max_s": max(cpu, default=0.0),
        "today_s": time.time() - t,
    }
    print(f"today: {today['sweeps']} sweeps, {today['compactions']} compactions in {generated['today_s']:.0f} s", flush=True)
    generated["day1"] = point("last hour, day 1", fleet, ledger, scratch, f"{TODAY}-23:00", args.reps)
    store = LedgerStore(ledger)
    t = time.time()
    for back in range(1, args.days):  # history: one commit per (compacted) day
        day = (date.fromisoformat(TODAY) - timedelta(days=back)).isoformat()
        data, batches = copies(template, day, [(n, h) for n in names for h in range(24)])
        store.commit_tables(day, batches, data, operation="generated")
    generated["history_s"] = time.time() - t
    print(f"history: {args.days - 1} days in {generated['history_s']:.0f} s", flush=True)
    return generated


def write_results(rows: list[dict], args: argparse.Namespace, generated: dict, seconds: float) -> None:
    mean = generated["compact_mean_s"]
    lines = [
        "# The 200-replica month: one replica's sweep and checks, first hour vs day 30 (bench/bench_ledger_month.py)",
        "",
        f"Generated ledger: {args.replicas} replicas swept hourly, {args.days} days. Today: {generated['today_sweeps']} "
        f"sweeps, one file per sweep and dataset, added in one Delta commit per {COMPACT_EVERY} sweeps, each but the "
        f"last followed by the day's compaction (`LedgerStore.compact_day`, what every {COMPACT_EVERY}th commit runs): "
        f"{generated['compactions']} compactions, {mean:.2f} s CPU each on average (max {generated['compact_max_s']:.2f} s), "
        f"i.e. {mean / COMPACT_EVERY:.3f} s per sweep amortized ({generated['today_s']:.0f} s wall in all). "
        f"History: one commit per day, the compacted state ({generated['history_s']:.0f} s). Each generated sweep "
        f"is {generated['template_rows']} rows (a real `sim-64` sweep: 64 GPUs, k = 8, one slow GPU, 3 repeats). The measured "
        "sweep is a real `faultsense_sweep` run of `sim-64` (Phase 1, drill-down, `fault_ledger`, three asset "
        f"checks), then the day's analytics partition. {args.reps} fresh processes per point; median CPU (user + "
        "system); largest peak RSS of the process (`VmHWM`); 'runs that compacted': measured sweeps whose commit was a "
        f"{COMPACT_EVERY}th version and so also compacted the day. Shared 2-core machine (load "
        f"{os.getloadavg()[0]:.1f} at the end); {'pairs measured again on the kept month, ' if args.measure_only else ''}"
        f"this run {seconds / 60:.1f} min.",
        "",
        *results_table(rows, args.days),
        f"The first-hour and day-{args.days} runs alternate (first hour on a new, empty ledger each time), so "
        "each pair ran under about the same load:",
        "",
        f"| pair | day {args.days} / first hour sweep CPU | load average (1 min) after the pair |",
        "|---|---|---|",
        *(f"| {i + 1} | {p['ratio']:.2f} | {p['load']:.1f} |" for i, p in enumerate(generated["pairs"])),
        "",
        f"Median of the per-pair ratios: {statistics.median(p['ratio'] for p in generated['pairs']):.2f}.",
        "",
    ]
    write_text("ledger_month.md", lines)


if __name__ == "__main__":
    main()
