"""The 200-replica month: one replica's hourly sweep (with its asset checks) in the first hour
of a ledger's first day and in the last hour of its 30th day.

The points and the measurement are those of :mod:`bench.ledger_scale_bench`: a real
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

A real sweep writes up to three files (Phase 1 probes, Phase 2 probes, faults); a generated
one writes two (probes, faults).

Run: ``nice -n 10 .venv/bin/python -m bench.ledger_month_bench --replicas 200 --reps 2``. It
prints a table and writes bench/results/ledger_month.md.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import uuid
from datetime import date, timedelta
from pathlib import Path

from bench.ledger_scale_bench import FLEET, MEASURED, TODAY, _copies, _point, _template

RESULTS = Path(__file__).parent / "results"
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


def generate_today(ledger: str, template, names: list[str], hours: int = 23) -> int:
    """Today's sweeps (every replica, hours ``0..hours-1``): one file per sweep and dataset,
    one Delta commit per hour. Returns the number of sweeps."""
    from deltalake import CommitProperties, DeltaTable

    from faultsense_pipelines.ledger import LedgerStore

    first, batches = _copies(template, TODAY, [(names[0], 0)])
    LedgerStore(ledger).commit_tables(TODAY, batches, first, operation="generated")  # creates the table
    table_dir = f"{ledger}/delta"
    table = DeltaTable(table_dir)
    sweeps = 1
    for hour in range(hours):
        actions = []
        for name in names[1:] if hour == 0 else names:
            data, _ = _copies(template, TODAY, [(name, hour)])
            actions += _add_sweep_files(table_dir, data)
            sweeps += 1
        table.create_write_transaction(
            actions,
            mode="append",
            schema=table.schema(),
            partition_by=list(PARTITION_COLUMNS),
            commit_properties=CommitProperties(custom_metadata={"faultsense.operation": "generated"}),
        )
        table.update_incremental()
    return sweeps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=200)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--workdir", help="generate here and keep it (default: a temporary folder, removed)")
    args = parser.parse_args()
    from faultsense_pipelines.ledger import LedgerStore

    started = time.time()
    with tempfile.TemporaryDirectory(prefix="ledger-month-") as temporary:
        tmp = args.workdir or temporary
        Path(tmp).mkdir(parents=True, exist_ok=True)
        fleet, ledger, scratch = f"{tmp}/fleet.yaml", f"{tmp}/ledger", f"{tmp}/scratch"
        Path(fleet).write_text(FLEET.format(ledger=ledger))
        template = _template(fleet, f"{tmp}/template")
        names = [MEASURED] + [f"fleet-{i:03d}" for i in range(1, args.replicas)]
        print(f"template sweep: {template.num_rows} rows; {args.replicas} replicas x {args.days} days", flush=True)
        rows = [_point("first hour", fleet, f"{tmp}/empty", scratch, f"{TODAY}-00:00", args.reps)]

        t = time.time()
        sweeps = generate_today(ledger, template, names)
        generated = {"today_sweeps": sweeps, "today_s": time.time() - t}
        print(f"today: {sweeps} sweeps in {generated['today_s']:.0f} s", flush=True)
        rows.append(_point("last hour, day 1", fleet, ledger, scratch, f"{TODAY}-23:00", args.reps))

        store = LedgerStore(ledger)
        t = time.time()
        for back in range(1, args.days):  # history: one commit per (compacted) day
            day = (date.fromisoformat(TODAY) - timedelta(days=back)).isoformat()
            data, batches = _copies(template, day, [(n, h) for n in names for h in range(24)])
            store.commit_tables(day, batches, data, operation="generated")
        generated["history_s"] = time.time() - t
        print(f"history: {args.days - 1} days in {generated['history_s']:.0f} s", flush=True)
        rows.append(_point(f"last hour, day {args.days}", fleet, ledger, scratch, f"{TODAY}-23:00", args.reps))
    write_results(rows, args, template.num_rows, generated, time.time() - started)


def write_results(rows: list[dict], args: argparse.Namespace, template_rows: int, generated: dict, seconds: float) -> None:
    first, last = rows[0], rows[-1]
    ratio = last["sweep_cpu_s"] / first["sweep_cpu_s"]
    lines = [
        "# The 200-replica month: one replica's sweep and checks, first hour vs day 30 (bench/ledger_month_bench.py)",
        "",
        f"Generated ledger: {args.replicas} replicas swept hourly, {args.days} days. Today: {generated['today_sweeps']} "
        f"sweeps, one file per sweep and dataset, added in one Delta commit per hour "
        f"({generated['today_s']:.0f} s). History: one commit per day, the compacted state "
        f"({generated['history_s']:.0f} s). Each generated sweep is {template_rows} rows (a real `sim-64` "
        "sweep: 64 GPUs, k = 8, one slow GPU, 3 repeats). The measured sweep is a real `faultsense_sweep` "
        "run of `sim-64` (Phase 1, drill-down, `fault_ledger`, three asset checks), then the day's "
        f"analytics partition. {args.reps} fresh processes per point; median CPU (user + system); "
        f"largest peak RSS of the process. Shared 2-core machine (load {os.getloadavg()[0]:.1f} at the end); "
        f"whole run {seconds / 60:.1f} min.",
        "",
        "| point | hour | ledger files | ledger MB | sweep + checks CPU s | (each run) | analytics CPU s | peak RSS MB | all checks passed |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['point']} | {r['hour']} | {r['ledger_files']} | {r['ledger_mb']:.1f} | {r['sweep_cpu_s']:.3f} | "
            f"{', '.join(str(v) for v in r['sweep_cpu_all'])} | {r['analytics_cpu_s']:.3f} | {r['peak_rss_mb']:.0f} | "
            f"{'yes' if r['all_ok'] else 'NO'} |"
        )
    lines += [
        "",
        f"Sweep + checks CPU, last hour of day {args.days} / first hour: {ratio:.2f} (target: within 20%, i.e. "
        f"<= 1.20); peak RSS {last['peak_rss_mb']:.0f} MB (target <= 1024 MB).",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "ledger_month.md"
    out.write_text(text)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
