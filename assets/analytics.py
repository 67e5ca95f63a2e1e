"""Analytics of the fault ledger, one partition per day, each read from the few ledger
partitions it covers (DuckDB SQL over Arrow tables read with file pruning).

* ``replica_daily_health`` -- per (replica, day): sweeps, probes measured and failed, confirmed
  faulty components, sweeps judged replica-wide degraded, and a one-word health
  (``healthy`` / ``degraded`` / ``faulty`` / ``errors``); reads only that day's partitions;
* ``gpu_fault_counts`` -- per (replica, GPU), over the :data:`WINDOW_DAYS` days ending on the
  partition's day: confirmed GPU faults, confirmed faults of its links, sweeps that found
  them, worst slowdown and confidence, the GPU's node, first and last seen (sweep hours);
* ``repeat_offenders`` -- components confirmed in two or more distinct sweep windows over the
  same trailing days;
* ``shared_component_counts`` -- per (replica, node or switch), over the same trailing days:
  confirmed NIC, NVSwitch and switch faults (docs/components.md), sweeps that found them,
  worst slowdown, first and last seen.

Each partition is recomputed when a sweep of its day updates ``fault_ledger``
(:data:`~.automation.AFTER_LEDGER_UPDATES`, and ``faultsense sweep`` after its runs), from that
day's -- or that window's -- ledger partitions only, so its cost does not grow with the ledger:
the fault rows of a window are few (one per confirmed component per sweep), the probe rows of
one day are read for their counts only.

Only ``confirmed`` rows count as faults here; ``suspect``, ``masked`` and ``inconclusive`` stay
in the ledger for inspection.
"""

from datetime import date, timedelta
from typing import Any

import dagster as dg
import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.dataset as ds

from faultsense_pipelines.ledger import FAULT_LEDGER, PROBE_RUNS, LedgerStore
from faultsense_pipelines.resources.ledger import LedgerResource

from .automation import AFTER_LEDGER_UPDATES
from .ledger import fault_ledger
from .partitions import DAILY, current_hour_key
from .report import frame_table

__all__ = [
    "DAILY_HEALTH_SQL",
    "GPU_FAULT_COUNTS_SQL",
    "REPEAT_OFFENDERS_SQL",
    "SHARED_COMPONENT_COUNTS_SQL",
    "WINDOW_DAYS",
    "gpu_fault_counts",
    "repeat_offenders",
    "replica_daily_health",
    "run_sql",
    "shared_component_counts",
    "swept_hours",
    "window_days",
]

#: Days (ending on the partition's day) that ``gpu_fault_counts`` and ``repeat_offenders`` cover.
WINDOW_DAYS = 30

GPU_FAULT_COUNTS_SQL = """
WITH per_gpu AS (
    SELECT replica, gpu, component_kind, fault_id, sweep_id, slowdown, confidence, swept, node
    FROM faults WHERE status = 'confirmed' AND gpu IS NOT NULL
    UNION ALL
    SELECT replica, peer_gpu AS gpu, component_kind, fault_id, sweep_id, slowdown, confidence, swept, node
    FROM faults WHERE status = 'confirmed' AND peer_gpu IS NOT NULL
)
SELECT replica, gpu,
       string_agg(DISTINCT split_part(node, ',', 1), ', ') FILTER (WHERE component_kind = 'gpu') AS node,
       count(*) FILTER (WHERE component_kind = 'gpu') AS gpu_faults,
       count(*) FILTER (WHERE component_kind = 'link') AS link_faults,
       count(DISTINCT sweep_id) AS sweeps,
       round(max(slowdown), 3) AS max_slowdown,
       round(max(confidence), 3) AS max_confidence,
       min(swept) AS first_seen,
       max(swept) AS last_seen
FROM per_gpu
GROUP BY replica, gpu
ORDER BY gpu_faults DESC, link_faults DESC, replica, gpu
"""

DAILY_HEALTH_SQL = """
WITH probes AS (
    SELECT replica, date, sweep_id, phase, probe_index, bool_or(error IS NOT NULL) AS failed
    FROM runs GROUP BY ALL
), sweeps AS (
    SELECT replica, date, count(DISTINCT sweep_id) AS sweeps,
           count(*) FILTER (WHERE NOT failed) AS probes_measured,
           count(*) FILTER (WHERE failed) AS probes_failed
    FROM probes GROUP BY ALL
), found AS (
    SELECT replica, date, count(DISTINCT component) AS faulty_components,
           string_agg(DISTINCT component, ', ' ORDER BY component) AS components
    FROM faults WHERE status = 'confirmed' GROUP BY ALL
), degraded AS (
    SELECT replica, date, count(DISTINCT sweep_id) AS degraded_sweeps
    FROM faults WHERE component_kind = 'replica' AND status = 'suspect' GROUP BY ALL
)
SELECT coalesce(s.replica, f.replica) AS replica, coalesce(s.date, f.date) AS date,
       coalesce(s.sweeps, 0) AS sweeps, coalesce(s.probes_measured, 0) AS probes_measured,
       coalesce(s.probes_failed, 0) AS probes_failed,
       coalesce(f.faulty_components, 0) AS faulty_components, coalesce(f.components, '') AS components,
       coalesce(d.degraded_sweeps, 0) AS degraded_sweeps,
       CASE WHEN coalesce(s.probes_failed, 0) > 0 THEN 'errors'
            WHEN coalesce(f.faulty_components, 0) > 0 THEN 'faulty'
            WHEN coalesce(d.degraded_sweeps, 0) > 0 THEN 'degraded'
            ELSE 'healthy' END AS health
FROM sweeps s FULL OUTER JOIN found f ON s.replica = f.replica AND s.date = f.date
LEFT JOIN degraded d ON d.replica = coalesce(s.replica, f.replica) AND d.date = coalesce(s.date, f.date)
ORDER BY date, replica
"""

REPEAT_OFFENDERS_SQL = """
SELECT replica, component, component_kind,
       string_agg(DISTINCT node, ' ') AS node,
       count(DISTINCT fault_id) AS windows,
       count(DISTINCT date) AS days,
       round(max(slowdown), 3) AS max_slowdown,
       round(max(confidence), 3) AS max_confidence,
       min(swept) AS first_seen,
       max(swept) AS last_seen,
       string_agg(DISTINCT detector, ', ' ORDER BY detector) AS detectors
FROM faults WHERE status = 'confirmed'
GROUP BY replica, component, component_kind
HAVING count(DISTINCT fault_id) >= 2
ORDER BY windows DESC, replica, component
"""


SHARED_COMPONENT_COUNTS_SQL = """
WITH shared AS (
    SELECT replica, component_kind, fault_id, sweep_id, slowdown, confidence, swept,
           CASE WHEN component_kind = 'switch' THEN component
                ELSE regexp_extract(component, '^[a-z]+:([^/]+)', 1) END AS location
    FROM faults WHERE status = 'confirmed' AND component_kind IN ('nic', 'nvswitch', 'switch')
)
SELECT replica, location,
       count(*) FILTER (WHERE component_kind = 'nic') AS nic_faults,
       count(*) FILTER (WHERE component_kind = 'nvswitch') AS nvswitch_faults,
       count(*) FILTER (WHERE component_kind = 'switch') AS switch_faults,
       count(DISTINCT sweep_id) AS sweeps,
       round(max(slowdown), 3) AS max_slowdown,
       round(max(confidence), 3) AS max_confidence,
       min(swept) AS first_seen,
       max(swept) AS last_seen
FROM shared
GROUP BY replica, location
ORDER BY nic_faults + nvswitch_faults + switch_faults DESC, replica, location
"""


def run_sql(sql: str, **tables: pd.DataFrame | pa.Table) -> pd.DataFrame:
    """Run ``sql`` in a fresh in-memory DuckDB with ``tables`` (pandas or Arrow) registered by name."""
    with duckdb.connect() as con:
        for name, df in tables.items():
            con.register(name, df)
        return con.sql(sql).df()


def window_days(day: str, days: int = WINDOW_DAYS) -> list[str]:
    """The ``days`` ISO dates ending on ``day`` (``"2026-11-30"``), oldest first."""
    end = date.fromisoformat(day)
    return [(end - timedelta(days=i)).isoformat() for i in range(days - 1, -1, -1)]


_FAULT_COLUMNS = ["fault_id", "detected_at", "sweep_id", "replica", "detector", "component_kind", "component"]
_FAULT_COLUMNS += ["gpu", "peer_gpu", "slowdown", "status", "confidence", "node", "date", "batch"]
_RUN_COLUMNS = ["replica", "date", "sweep_id", "phase", "probe_index", "error"]


def swept_hours(table: pa.Table) -> pa.Array:
    """The hour each fault row's window starts (``YYYY-MM-DD-HH:00`` UTC): a sweep's hour
    partition (its batch ``faultsense-<replica>-hHH`` on its ``date``), else -- another
    detector's row -- the hour of ``detected_at``. What ``first_seen`` and ``last_seen`` report:
    when the fault was there, not when a backfill happened to write it."""
    out: list[str | None] = []
    for replica, day, batch, at in zip(
        *(table.column(c).to_pylist() for c in ("replica", "date", "batch", "detected_at")), strict=True
    ):
        prefix = f"faultsense-{replica}-h"
        hh = batch[len(prefix) :] if isinstance(batch, str) and batch.startswith(prefix) else ""
        if len(hh) == 2 and hh.isdigit():
            out.append(f"{day}-{hh}:00")
        else:
            out.append(None if at is None else current_hour_key(at))
    return pa.array(out, pa.string())


def _faults(store: LedgerStore, days: list[str], skipped: list[str], *, confirmed_only: bool = False) -> pa.Table:
    """The fault rows of ``days`` with their ``swept`` hour (:func:`swept_hours`); an unreadable
    data file is left out and named in ``skipped``."""
    status = ds.field("status") == "confirmed" if confirmed_only else None
    table = store.read_table(FAULT_LEDGER, files={"date": days}, columns=_FAULT_COLUMNS, filter=status, skipped=skipped)
    return table.append_column("swept", swept_hours(table))


def _output(
    context: dg.AssetExecutionContext, df: pd.DataFrame, store: LedgerStore, days: list[str], skipped: list[str]
) -> dg.Output[pd.DataFrame]:
    """The asset's output; every data file the read skipped is one warning line and listed in
    the metadata (``skipped_files``): one damaged file costs its own rows, not the day's analytics."""
    for line in skipped:
        context.log.warning(f"skipped unreadable ledger file {line}")
    preview = frame_table(df, 20) if not df.empty else dg.MetadataValue.md("_empty_")
    span = days[0] if len(days) == 1 else f"{days[0]} .. {days[-1]}"
    metadata: dict[str, Any] = {
        "rows": len(df),
        "preview": preview,
        "ledger": store.display_uri,
        "days": span,
        "skipped_files": dg.MetadataValue.md("\n".join(f"- {line}" for line in skipped) or "none"),
    }
    return dg.Output(df, metadata=metadata)


_COMMON: dict[str, Any] = {
    "deps": [fault_ledger],
    "partitions_def": DAILY,
    "automation_condition": AFTER_LEDGER_UPDATES,
    "group_name": "analytics",
    "kinds": {"duckdb", "pandas"},
}


@dg.asset(
    **_COMMON,
    description=f"Per replica and GPU, over the {WINDOW_DAYS} days ending on the partition's day: "
    "confirmed GPU faults and faults of its links.",
)
def gpu_fault_counts(context: dg.AssetExecutionContext, ledger: LedgerResource) -> dg.Output[pd.DataFrame]:
    store, days = ledger.store(), window_days(context.partition_key)
    skipped: list[str] = []
    df = run_sql(GPU_FAULT_COUNTS_SQL, faults=_faults(store, days, skipped, confirmed_only=True))
    return _output(context, df, store, days, skipped)


@dg.asset(
    **_COMMON, description="Per replica, for the partition's day: sweeps, probes measured and failed, confirmed faults, health."
)
def replica_daily_health(context: dg.AssetExecutionContext, ledger: LedgerResource) -> dg.Output[pd.DataFrame]:
    store, days = ledger.store(), [context.partition_key]
    skipped: list[str] = []
    runs = store.read_table(PROBE_RUNS, files={"date": days}, columns=_RUN_COLUMNS, skipped=skipped)
    df = run_sql(DAILY_HEALTH_SQL, faults=_faults(store, days, skipped), runs=runs)
    return _output(context, df, store, days, skipped)


@dg.asset(
    **_COMMON,
    description=f"Components confirmed faulty in two or more sweep windows of the {WINDOW_DAYS} days ending on the partition's day.",
)
def repeat_offenders(context: dg.AssetExecutionContext, ledger: LedgerResource) -> dg.Output[pd.DataFrame]:
    store, days = ledger.store(), window_days(context.partition_key)
    skipped: list[str] = []
    df = run_sql(REPEAT_OFFENDERS_SQL, faults=_faults(store, days, skipped, confirmed_only=True))
    return _output(context, df, store, days, skipped)


@dg.asset(
    **_COMMON,
    description=f"Per replica and node (or switch), over the {WINDOW_DAYS} days ending on the partition's day: "
    "confirmed NIC, NVSwitch and switch faults.",
)
def shared_component_counts(context: dg.AssetExecutionContext, ledger: LedgerResource) -> dg.Output[pd.DataFrame]:
    store, days = ledger.store(), window_days(context.partition_key)
    skipped: list[str] = []
    df = run_sql(SHARED_COMPONENT_COUNTS_SQL, faults=_faults(store, days, skipped, confirmed_only=True))
    return _output(context, df, store, days, skipped)
