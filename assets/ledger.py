"""``fault_ledger``: the sweep's localized faults as rows of the Parquet fault ledger, and its checks.

Checks (each reads the ledger table's current version, scoped to the run's ``date`` partition):

* ``fault_ledger_schema`` -- the table has every :data:`FAULT_SCHEMA` column with its type;
* ``fault_ledger_unique_rows`` -- no ``fault_id`` appears twice (re-runs replace, never add);
* ``probe_latencies_valid`` (blocking, on ``phase1_probe_run``) -- no NaN, infinite or negative
  latency in the sweep's Phase 1 or the day's ``probe_runs``, and no latency on an error row;
  a failure stops the drill-down (and so the commit) of that run.
"""

import math
import warnings
from datetime import UTC, datetime
from typing import Any

import dagster as dg

from faultsense_pipelines.ledger import FAULT_SCHEMA
from faultsense_pipelines.localize import Localization, Phase1Result
from faultsense_pipelines.resources.executors import redact_secrets
from faultsense_pipelines.resources.fleet import FleetResource
from faultsense_pipelines.resources.ledger import LedgerResource

from .commit import commit_sweep
from .partitions import SWEEP_PARTITIONS, sweep_key
from .report import verdicts_markdown
from .rows import fault_rows, probe_rows
from .sweep import phase1_probe_run

__all__ = ["fault_ledger", "fault_ledger_schema", "fault_ledger_unique_rows", "probe_latencies_valid"]


@dg.asset(
    partitions_def=SWEEP_PARTITIONS,
    group_name="ledger",
    kinds={"parquet"},
    description="The sweep's verdicts as fault rows of the ledger's Delta table (dataset=fault_ledger), "
    "committed in one commit with both phases' probe rows (replaced on re-run).",
)
def fault_ledger(
    context: dg.AssetExecutionContext, phase2_drilldown: Localization, fleet: FleetResource, ledger: LedgerResource
) -> dg.MaterializeResult:
    key = sweep_key(context)
    store = ledger.store()
    loc = phase2_drilldown
    replica = fleet.replica(key.replica)
    common: dict[str, Any] = {
        "sweep_id": context.run.run_id,
        "replica": replica.name,
        "executor": replica.executor.value,  # Dagster metadata takes plain strings, not enums
        "scrub": lambda text: redact_secrets(text, replica),
    }
    rows = fault_rows(loc, key=key, sweep_id=context.run.run_id, detected_at=datetime.now(UTC))
    _, path = commit_sweep(
        store,
        key,
        phase1=probe_rows(loc.phase1.records, **common),
        phase2=probe_rows(loc.phase2_records, **common),
        faults=rows,
        sweep_id=context.run.run_id,
    )
    confirmed = [r.component for r in rows if r.status == "confirmed"]
    return dg.MaterializeResult(
        metadata={
            "rows": len(rows),
            "confirmed": dg.MetadataValue.json(confirmed),
            "faults": dg.MetadataValue.md(verdicts_markdown(phase2_drilldown.verdicts, phase2_drilldown.probes_phase1)),
            "probes_used": phase2_drilldown.probes_phase1 + phase2_drilldown.probes_phase2,
            "path": dg.MetadataValue.path(path),
            "ledger": store.display_uri,
        }
    )


def _day(context: dg.AssetCheckExecutionContext) -> str | None:
    return sweep_key(context).day if context.has_partition_key else None


@dg.asset_check(asset=fault_ledger, description="The ledger table's current version has every fault_ledger column with its type.")
def fault_ledger_schema(context: dg.AssetCheckExecutionContext, ledger: LedgerResource) -> dg.AssetCheckResult:
    store = ledger.store()
    schema = store.table_schema()
    version = store.version()
    bad = []
    if schema is not None:
        for f in FAULT_SCHEMA:
            if f.name not in schema.names:
                bad.append(f"{f.name}: missing")
            elif not schema.field(f.name).type.equals(f.type):
                bad.append(f"{f.name}: {schema.field(f.name).type} (expected {f.type})")
    return dg.AssetCheckResult(
        passed=not bad,
        metadata={
            "table_version": -1 if version is None else version,
            "columns_checked": len(FAULT_SCHEMA),
            "bad_columns": dg.MetadataValue.md("\n".join(f"- {b}" for b in bad) or "none"),
        },
    )


@dg.asset_check(asset=fault_ledger, description="No fault_id appears twice in the day's fault ledger.")
def fault_ledger_unique_rows(context: dg.AssetCheckExecutionContext, ledger: LedgerResource) -> dg.AssetCheckResult:
    day = _day(context)
    df = ledger.store().read_faults(since=day)
    if day is not None:
        df = df[df["date"] == day]
    dup = df[df["fault_id"].duplicated(keep=False)]
    return dg.AssetCheckResult(
        passed=dup.empty,
        metadata={
            "rows_checked": len(df),
            "duplicate_rows": len(dup),
            "duplicate_ids": dg.MetadataValue.json(sorted(set(dup["fault_id"]))[:20]),
        },
    )


def _probe_latencies_valid(
    context: dg.AssetCheckExecutionContext, phase1_probe_run: Phase1Result, ledger: LedgerResource
) -> dg.AssetCheckResult:
    # this sweep's own rows are not in the ledger yet when a drill-down follows (a sweep commits at its end)
    own = [v for r in phase1_probe_run.records for v in r.latencies_ms]
    own_bad = sum(1 for v in own if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0))
    day = _day(context)
    df = ledger.store().read_probe_runs(since=day)
    if day is not None:
        df = df[df["date"] == day]
    measured = df[df["error"].isna()]
    lat = measured["latency_ms"].astype(float)
    bad = int((lat.isna() | ~lat.map(math.isfinite) | (lat < 0)).sum())
    errors_with_latency = int(df[df["error"].notna()]["latency_ms"].notna().sum())
    return dg.AssetCheckResult(
        passed=bad + own_bad == 0 and errors_with_latency == 0,
        metadata={
            "rows_checked": len(df) + len(own),
            "bad_latencies": bad + own_bad,
            "error_rows_with_latency": errors_with_latency,
        },
    )


with warnings.catch_warnings():
    # partitioned checks are a Dagster preview: the check loads this run's Phase 1 partition
    warnings.simplefilter("ignore", dg.PreviewWarning)
    probe_latencies_valid = dg.asset_check(
        asset=phase1_probe_run,
        name="probe_latencies_valid",
        partitions_def=SWEEP_PARTITIONS,
        blocking=True,
        description="This sweep's Phase 1 latencies and the day's probe_runs: every measured latency is finite and >= 0; error rows carry none.",
    )(_probe_latencies_valid)
