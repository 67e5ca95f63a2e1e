"""What the ledger benchmarks share: the measured replica, the generated sweeps, and the
measuring child process.

:mod:`bench.bench_ledger_scale` and :mod:`bench.bench_ledger_month` differ only in how they
generate the ledger. Both measure the same points here: a real run of the
``faultsense_sweep`` Dagster job for ``sim-64`` (Phase 1, drill-down, ``fault_ledger``, all
three asset checks) in a fresh process, after one warm-up sweep on a scratch ledger (imports,
cover planning), followed by the day's analytics partition. Per point, ``reps`` fresh
processes; a row gives the median CPU seconds (user + system, ``resource.getrusage``) of the
sweep run and of the analytics run, and the largest peak RSS (``VmHWM``, :func:`peak_rss_mb`; whole process:
Python, Dagster, Arrow).

The child: ``python -m bench._ledger_common FLEET LEDGER SCRATCH HOUR`` prints one JSON line
(:func:`measure`).
"""

from __future__ import annotations

import json
import resource
import statistics
import subprocess
import sys
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


def cpu_s() -> float:
    """CPU seconds (user + system) this process has used so far."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def peak_rss_mb() -> float:
    """This process's peak resident set size, MiB: ``VmHWM`` of ``/proc/self/status``, the
    high-water mark of its own address space. ``ru_maxrss`` is not used where /proc exists:
    Linux keeps it across ``execve``, and a child that ``subprocess`` starts with ``vfork``
    shares its parent's address space until then, so a child of a large parent reports the
    parent's peak."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _sweep(defs, instance, hour: str):
    import dagster as dg

    from faultsense_pipelines.definitions import SWEEP_JOB

    quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    key = dg.MultiPartitionKey({"hour": hour, "replica": MEASURED})
    return defs.resolve_job_def(SWEEP_JOB).execute_in_process(instance=instance, partition_key=key, run_config=quiet)


def measure(fleet: str, ledger: str, scratch: str, hour: str) -> dict:
    """In this (fresh) process: warm up on ``scratch``, then one measured sweep of ``sim-64`` for
    ``hour`` and the day's analytics on ``ledger``.

    Returns ``sweep_cpu_s``, ``analytics_cpu_s`` (CPU seconds), ``peak_rss_mb`` (MiB, whole
    process), ``ok`` (both runs succeeded and all three checks passed) and ``compacted`` (day
    compactions the sweep's commit ran). Raises AssertionError if the warm-up sweep fails.
    """
    import dagster as dg

    from faultsense_pipelines.definitions import ANALYTICS_JOB, build_definitions

    quiet = {"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}
    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("replica", [MEASURED])
        warm = build_definitions(fleet, scratch)
        assert _sweep(warm, instance, hour).success
        defs = build_definitions(fleet, ledger)
        before = _version(ledger)
        t0 = cpu_s()
        result = _sweep(defs, instance, hour)
        t1 = cpu_s()
        compacted = _compactions_since(ledger, before)
        analytics = defs.resolve_job_def(ANALYTICS_JOB).execute_in_process(
            instance=instance, partition_key=hour[:10], run_config=quiet
        )
        t2 = cpu_s()
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    return {
        "sweep_cpu_s": t1 - t0,
        "analytics_cpu_s": t2 - t1,
        "peak_rss_mb": peak_rss_mb(),
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


def template_sweep(fleet: str, scratch: str):
    """The rows (``TABLE_SCHEMA``, a pyarrow Table) of one real sweep of ``sim-64``, run on a
    scratch ledger at ``scratch``. Raises AssertionError if that sweep fails."""
    import dagster as dg
    from deltalake import DeltaTable

    from faultsense_pipelines.definitions import build_definitions

    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("replica", [MEASURED])
        assert _sweep(build_definitions(fleet, scratch), instance, f"{TODAY}-05:00").success
    from faultsense_pipelines.ledger.store import TABLE_SCHEMA

    return DeltaTable(f"{scratch}/delta").to_pyarrow_table().select(TABLE_SCHEMA.names).cast(TABLE_SCHEMA)


def copies(template, day: str, sweeps: list[tuple[str, int]]):
    """``template`` once per (replica, hour) sweep of ``sweeps``, relabelled: replica, batch,
    sweep id, date and fault id (one per copy).

    Returns (the concatenated pyarrow Table, ``len(sweeps) * template.num_rows`` rows; the
    sorted batch names)."""
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


def point(name: str, fleet: str, ledger: str, scratch: str, hour: str, reps: int) -> dict:
    """One measured point: ``reps`` fresh child processes (:func:`measure`) for ``hour`` on
    ``ledger``; prints a line and returns the row of :func:`results_table` (CPU seconds, peak
    RSS MiB, ledger files and MB). Raises CalledProcessError if a child fails."""
    runs = []
    for _ in range(reps):
        out = subprocess.run(
            [sys.executable, "-m", "bench._ledger_common", fleet, ledger, scratch, hour],
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


def joined(rows: list[dict]) -> dict:
    """One row of :func:`results_table` from several :func:`point` rows of the same point
    measured at different moments: medians over every run, the largest peak RSS, the last
    row's ledger size."""
    runs = [v for r in rows for v in r["sweep_cpu_all"]]
    return {
        **rows[-1],
        "sweep_cpu_s": statistics.median(runs),
        "analytics_cpu_s": statistics.median(r["analytics_cpu_s"] for r in rows),
        "peak_rss_mb": max(r["peak_rss_mb"] for r in rows),
        "all_ok": all(r["all_ok"] for r in rows),
        "sweep_cpu_all": runs,
        "compacted_runs": sum(r.get("compacted_runs", 0) for r in rows),
    }


def results_table(rows: list[dict], days: int) -> list[str]:
    """The markdown table of measured points (rows of :func:`point`) and the target line: the
    last row's sweep CPU over the first's, and the last row's peak RSS."""
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


if __name__ == "__main__":
    print(json.dumps(measure(*sys.argv[1:5])))
