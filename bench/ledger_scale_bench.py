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
scratch ledger (imports, cover planning), followed by the day's analytics partition. Points:

* ``first hour``: empty ledger, 2026-11-30-00:00;
* ``last hour, day 1``: today's 23 hours of sweeps and no history, 2026-11-30-23:00;
* ``last hour, day 30``: the same plus 29 days of history, 2026-11-30-23:00.

Per point, ``--reps`` fresh processes; the table gives the median CPU seconds (user + system,
``resource.getrusage``) of the sweep run and of the analytics run, and the largest peak RSS
(``ru_maxrss``, whole process: Python, Dagster, Arrow).

Run: ``.venv/bin/python -m bench.ledger_scale_bench --replicas 200``; prints a table and
writes bench/results/ledger_scale.md.
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
from datetime import date, timedelta
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
TODAY = "2026-11-30"
MEASURED = "sim-64"

FLEET = """
ledger: {ledger}
replicas:
  - name: sim-64
    gpus: 64
    probe_size: 8
    executor: simulated
    simulated: {{faults: [{{gpu: 17, slowdown: 1.5}}], noise_sigma: 0.02, seed: 1}}
"""


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _sweep(defs, instance, hour: str):
    import dagster as dg

    from faultsense_pipelines.definitions import SWEEP_JOB

    quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    key = dg.MultiPartitionKey({"hour": hour, "replica": MEASURED})
    return defs.resolve_job_def(SWEEP_JOB).execute_in_process(instance=instance, partition_key=key, run_config=quiet)


def measure(fleet: str, ledger: str, scratch: str, hour: str) -> dict:
    """In this (fresh) process: warm up on ``scratch``, then one measured sweep and analytics on ``ledger``."""
    import dagster as dg

    from faultsense_pipelines.definitions import ANALYTICS_JOB, build_definitions

    quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("replica", [MEASURED])
        warm = build_definitions(fleet, scratch)
        assert _sweep(warm, instance, hour).success
        defs = build_definitions(fleet, ledger)
        before = _version(ledger)
        t0 = _cpu()
        result = _sweep(defs, instance, hour)
        t1 = _cpu()
        compacted = _compactions_since(ledger, before)
        analytics = defs.resolve_job_def(ANALYTICS_JOB).execute_in_process(
            instance=instance, partition_key=hour[:10], run_config=quiet
        )
        t2 = _cpu()
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    return {
        "sweep_cpu_s": t1 - t0,
        "analytics_cpu_s": t2 - t1,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "ok": result.success and analytics.success and all(checks.values()) and len(checks) == 3,
        "compacted": compacted,
    }


def _version(ledger: str) -> int:
    """The ledger table's version (-1 without a table)."""
    from faultsense_pipelines.ledger import LedgerStore

    version = LedgerStore(ledger).version()
    return -1 if version is None else version


def _compactions_since(ledger: str, version: int) -> int:
    """Day compactions (``OPTIMIZE`` commits) in the table's log after ``version``: whether the
    measured sweep's commit was one that also compacted the day (every ``COMPACT_EVERY``-th)."""
    from deltalake import DeltaTable

    if not Path(ledger, "delta").exists():
        return 0
    return sum(
        1 for h in DeltaTable(f"{ledger}/delta").history(10) if h.get("version", -1) > version and h["operation"] == "OPTIMIZE"
    )


def _template(fleet: str, scratch: str):
    """The rows (TABLE_SCHEMA) of one real sweep of ``sim-64``, from a scratch ledger."""
    import dagster as dg
    from deltalake import DeltaTable

    from faultsense_pipelines.definitions import build_definitions

    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("replica", [MEASURED])
        assert _sweep(build_definitions(fleet, scratch), instance, f"{TODAY}-05:00").success
    from faultsense_pipelines.ledger.store import TABLE_SCHEMA

    return DeltaTable(f"{scratch}/delta").to_pyarrow_table().select(TABLE_SCHEMA.names).cast(TABLE_SCHEMA)


def _copies(template, day: str, sweeps: list[tuple[str, int]]):
    """``template`` once per (replica, hour) sweep, relabelled: replica, batch, sweep id, date."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from faultsense_pipelines.ledger.store import TABLE_SCHEMA

    field = TABLE_SCHEMA.field
    n = template.num_rows
    data = pa.concat_tables([template] * len(sweeps))
    labels = {
        "replica": [r for r, _ in sweeps],
        "batch": [f"faultsense-{r}-h{h:02d}" for r, h in sweeps],
        "sweep_id": [f"gen-{day}-{r}-{h:02d}" for r, h in sweeps],
    }
    # a fault_id hashes the sweep's window: each copy gets its own (the original id, suffixed)
    fault_id = pc.binary_join_element_wise(
        data.column("fault_id"), pa.array(np.repeat([f"{r}-{day}-{h:02d}" for r, h in sweeps], n), pa.string()), "-"
    )
    data = data.set_column(data.schema.get_field_index("fault_id"), field("fault_id"), fault_id)
    for name, values in labels.items():
        data = data.set_column(data.schema.get_field_index(name), field(name), pa.array(np.repeat(values, n), pa.string()))
    data = data.set_column(data.schema.get_field_index("date"), field("date"), pa.array([day] * data.num_rows, pa.string()))
    return data, sorted(set(labels["batch"]))


def _ledger_files(ledger: str) -> tuple[int, int]:
    from deltalake import DeltaTable

    table = DeltaTable(f"{ledger}/delta")
    sizes = table.get_add_actions(flatten=True).column("size_bytes").to_pylist()
    return len(sizes), sum(sizes)


def _point(name: str, fleet: str, ledger: str, scratch: str, hour: str, reps: int) -> dict:
    runs = []
    for _ in range(reps):
        out = subprocess.run(
            [sys.executable, "-m", "bench.ledger_scale_bench", "--child", fleet, ledger, scratch, hour],
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    files, size = _ledger_files(ledger) if Path(ledger, "delta").exists() else (0, 0)
    row = {
        "point": name,
        "hour": hour,
        "sweep_cpu_s": statistics.median(r["sweep_cpu_s"] for r in runs),
        "analytics_cpu_s": statistics.median(r["analytics_cpu_s"] for r in runs),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in runs),
        "all_ok": all(r["ok"] for r in runs),
        "ledger_files": files,
        "ledger_mb": size / 1e6,
        "sweep_cpu_all": [round(r["sweep_cpu_s"], 3) for r in runs],
        "compacted_runs": sum(1 for r in runs if r.get("compacted")),
    }
    print(
        f"{name:20s} sweep {row['sweep_cpu_s']:.3f} s CPU {row['sweep_cpu_all']}, analytics {row['analytics_cpu_s']:.3f} s, "
        f"peak RSS {row['peak_rss_mb']:.0f} MB, ledger {files} files {row['ledger_mb']:.1f} MB, ok={row['all_ok']}",
        flush=True,
    )
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicas", type=int, default=200)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--workdir", help="generate here and keep it (default: a temporary folder, removed)")
    parser.add_argument("--child", nargs=4, metavar=("FLEET", "LEDGER", "SCRATCH", "HOUR"))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(measure(*args.child)))
        return
    from faultsense_pipelines.ledger import LedgerStore

    started = time.time()
    with tempfile.TemporaryDirectory(prefix="ledger-scale-") as temporary:
        tmp = args.workdir or temporary
        Path(tmp).mkdir(parents=True, exist_ok=True)
        fleet, ledger, scratch = f"{tmp}/fleet.yaml", f"{tmp}/ledger", f"{tmp}/scratch"
        Path(fleet).write_text(FLEET.format(ledger=ledger))
        template = _template(fleet, f"{tmp}/template")
        names = [MEASURED] + [f"fleet-{i:03d}" for i in range(1, args.replicas)]
        print(f"template sweep: {template.num_rows} rows; {args.replicas} replicas x {args.days} days", flush=True)
        rows = [_point("first hour", fleet, f"{tmp}/empty", scratch, f"{TODAY}-00:00", args.reps)]

        store = LedgerStore(ledger)
        t = time.time()
        for hour in range(23):  # today: one commit per sweep
            for name in names:
                data, batches = _copies(template, TODAY, [(name, hour)])
                store.commit_tables(TODAY, batches, data, operation="generated")
        print(f"today: {23 * len(names)} sweep commits in {time.time() - t:.0f} s", flush=True)
        rows.append(_point("last hour, day 1", fleet, ledger, scratch, f"{TODAY}-23:00", args.reps))

        t = time.time()
        for back in range(1, args.days):  # history: one commit per (compacted) day
            day = (date.fromisoformat(TODAY) - timedelta(days=back)).isoformat()
            data, batches = _copies(template, day, [(n, h) for n in names for h in range(24)])
            store.commit_tables(day, batches, data, operation="generated")
        print(f"history: {args.days - 1} days in {time.time() - t:.0f} s", flush=True)
        rows.append(_point(f"last hour, day {args.days}", fleet, ledger, scratch, f"{TODAY}-23:00", args.reps))
    write_results(rows, args, template.num_rows, time.time() - started)


def results_table(rows: list[dict], days: int) -> list[str]:
    """The markdown table of measured points and the target line (shared with
    :mod:`bench.ledger_month_bench`)."""
    first, last = rows[0], rows[-1]
    ratio = last["sweep_cpu_s"] / first["sweep_cpu_s"]
    lines = [
        "| point | hour | ledger files | ledger MB | sweep + checks CPU s | (each run) | runs that compacted | analytics CPU s | peak RSS MB | all checks passed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['point']} | {r['hour']} | {r['ledger_files']} | {r['ledger_mb']:.1f} | {r['sweep_cpu_s']:.3f} | "
            f"{', '.join(str(v) for v in r['sweep_cpu_all'])} | {r.get('compacted_runs', 0)} | {r['analytics_cpu_s']:.3f} | "
            f"{r['peak_rss_mb']:.0f} | {'yes' if r['all_ok'] else 'NO'} |"
        )
    lines += [
        "",
        f"Sweep + checks CPU, last hour of day {days} / first hour: {ratio:.2f} (target: within 20%, i.e. "
        f"<= 1.20); peak RSS {last['peak_rss_mb']:.0f} MB (target <= 1024 MB).",
        "",
    ]
    return lines


def write_text(name: str, lines: list[str]) -> None:
    """Print ``lines`` and write them to ``bench/results/<name>``."""
    text = "\n".join(lines)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / name
    out.write_text(text)
    print(f"wrote {out}")


def write_results(rows: list[dict], args: argparse.Namespace, template_rows: int, seconds: float) -> None:
    lines = [
        "# One replica's sweep and checks on a fresh vs a month-old ledger (bench/ledger_scale_bench.py)",
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
