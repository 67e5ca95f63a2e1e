"""Analytics over the whole fault ledger (DuckDB SQL over the ledger read as pandas).

* ``gpu_fault_counts`` -- per (replica, GPU): confirmed GPU faults, confirmed faults of its
  links, sweeps that found them, worst slowdown, first and last seen;
* ``replica_daily_health`` -- per (replica, day): sweeps, probes measured and failed, confirmed
  faulty components, sweeps judged replica-wide degraded, and a one-word health
  (``healthy`` / ``degraded`` / ``faulty`` / ``errors``);
* ``repeat_offenders`` -- components confirmed in two or more distinct sweep windows.

Only ``confirmed`` rows count as faults here; ``suspect``, ``masked`` and ``inconclusive`` stay
in the ledger for inspection.
"""

from typing import Any

import dagster as dg
import duckdb
import pandas as pd

from faultsense_pipelines.resources.ledger import LedgerResource

from .ledger import fault_ledger
from .report import frame_markdown

__all__ = [
    "DAILY_HEALTH_SQL",
    "GPU_FAULT_COUNTS_SQL",
    "REPEAT_OFFENDERS_SQL",
    "gpu_fault_counts",
    "repeat_offenders",
    "replica_daily_health",
]

GPU_FAULT_COUNTS_SQL = """
WITH per_gpu AS (
    SELECT replica, gpu, component_kind, fault_id, sweep_id, slowdown, detected_at
    FROM faults WHERE status = 'confirmed' AND gpu IS NOT NULL
    UNION ALL
    SELECT replica, peer_gpu AS gpu, component_kind, fault_id, sweep_id, slowdown, detected_at
    FROM faults WHERE status = 'confirmed' AND peer_gpu IS NOT NULL
)
SELECT replica, gpu,
       count(*) FILTER (WHERE component_kind = 'gpu') AS gpu_faults,
       count(*) FILTER (WHERE component_kind = 'link') AS link_faults,
       count(DISTINCT sweep_id) AS sweeps,
       max(slowdown) AS max_slowdown,
       min(detected_at) AS first_seen,
       max(detected_at) AS last_seen
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
       count(DISTINCT fault_id) AS windows,
       count(DISTINCT date) AS days,
       max(slowdown) AS max_slowdown,
       min(detected_at) AS first_seen,
       max(detected_at) AS last_seen,
       string_agg(DISTINCT detector, ', ' ORDER BY detector) AS detectors
FROM faults WHERE status = 'confirmed'
GROUP BY replica, component, component_kind
HAVING count(DISTINCT fault_id) >= 2
ORDER BY windows DESC, replica, component
"""


def run_sql(sql: str, **tables: pd.DataFrame) -> pd.DataFrame:
    """Run ``sql`` in a fresh in-memory DuckDB with ``tables`` registered by name."""
    with duckdb.connect() as con:
        for name, df in tables.items():
            con.register(name, df)
        return con.sql(sql).df()


def _output(df: pd.DataFrame, store_uri: str) -> dg.Output[pd.DataFrame]:
    preview = frame_markdown(df.head(20)) if not df.empty else "_empty_"
    return dg.Output(df, metadata={"rows": len(df), "preview": dg.MetadataValue.md(preview), "ledger": store_uri})


_COMMON: dict[str, Any] = {"deps": [fault_ledger], "group_name": "analytics", "kinds": {"duckdb", "pandas"}}


@dg.asset(**_COMMON, description="Per replica and GPU: confirmed GPU faults and faults of its links.")
def gpu_fault_counts(ledger: LedgerResource) -> dg.Output[pd.DataFrame]:
    store = ledger.store()
    return _output(run_sql(GPU_FAULT_COUNTS_SQL, faults=store.read_faults()), store.display_uri)


@dg.asset(**_COMMON, description="Per replica and day: sweeps, probes measured and failed, confirmed faults, health.")
def replica_daily_health(ledger: LedgerResource) -> dg.Output[pd.DataFrame]:
    store = ledger.store()
    df = run_sql(DAILY_HEALTH_SQL, faults=store.read_faults(), runs=store.read_probe_runs())
    return _output(df, store.display_uri)


@dg.asset(**_COMMON, description="Components confirmed faulty in two or more sweep windows.")
def repeat_offenders(ledger: LedgerResource) -> dg.Output[pd.DataFrame]:
    store = ledger.store()
    return _output(run_sql(REPEAT_OFFENDERS_SQL, faults=store.read_faults()), store.display_uri)
