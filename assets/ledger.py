"""``fault_ledger``: the sweep's localized faults as rows of the Parquet fault ledger, and its checks.

Checks (each scoped to the run's ``date=`` partition of the ledger):

* ``fault_ledger_schema`` -- every fault file has exactly :data:`FAULT_SCHEMA`'s columns and types;
* ``fault_ledger_unique_rows`` -- no ``fault_id`` appears twice (re-runs replace, never add);
* ``probe_latencies_valid`` (blocking, on ``phase1_probe_run``) -- no NaN, infinite or negative
  latency, and no latency on an error row; a failure stops the drill-down of that run.
"""


import math
from datetime import UTC, datetime

import dagster as dg

from faultsense_pipelines.ledger import FAULT_LEDGER, FAULT_SCHEMA, LedgerStore
from faultsense_pipelines.localize import Localization
from resources.ledger import LedgerResource

from .partitions import SWEEP_PARTITIONS, sweep_key
from .report import verdicts_markdown
from .rows import fault_rows
from .sweep import fault_batch, phase1_probe_run

__all__ = ["fault_ledger", "fault_ledger_schema", "fault_ledger_unique_rows", "probe_latencies_valid"]


@dg.asset(
    partitions_def=SWEEP_PARTITIONS,
    group_name="ledger",
    kinds={"parquet"},
    description="The sweep's verdicts as fault rows under <ledger>/fault_ledger/date=YYYY-MM-DD/ (one file per partition, replaced on re-run).",
)
def fault_ledger(context: dg.AssetExecutionContext, phase2_drilldown: Localization, ledger: LedgerResource) -> dg.MaterializeResult:
    key = sweep_key(context)
    store = ledger.store()
    rows = fault_rows(phase2_drilldown, key=key, sweep_id=context.run.run_id, detected_at=datetime.now(UTC))
    written = store.write_faults(rows, day=key.day, batch=fault_batch(key))
    confirmed = [r.component for r in rows if r.status == "confirmed"]
    return dg.MaterializeResult(
        metadata={
            "rows": written.rows,
            "confirmed": dg.MetadataValue.json(confirmed),
            "faults": dg.MetadataValue.md(verdicts_markdown(phase2_drilldown.verdicts, phase2_drilldown.probes_phase1)),
            "probes_used": phase2_drilldown.probes_phase1 + phase2_drilldown.probes_phase2,
            "path": dg.MetadataValue.path(written.path),
            "ledger": store.display_uri,
        }
    )


def _day(context: dg.AssetCheckExecutionContext) -> str | None:
    return sweep_key(context).day if context.has_partition_key else None


def _files_of_day(store: LedgerStore, dataset: str, day: str | None) -> list[str]:
    return [f for f in store.files(dataset) if day is None or f"/date={day}/" in f]


@dg.asset_check(asset=fault_ledger, description="Every fault_ledger file of the day has the ledger's columns and types.")
def fault_ledger_schema(context: dg.AssetCheckExecutionContext, ledger: LedgerResource) -> dg.AssetCheckResult:
    store = ledger.store()
    files = _files_of_day(store, FAULT_LEDGER, _day(context))
    expected = FAULT_SCHEMA.remove_metadata()
    bad = [f for f in files if not store.read_schema(f).remove_metadata().equals(expected)]
    return dg.AssetCheckResult(
        passed=not bad,
        metadata={"files_checked": len(files), "bad_files": dg.MetadataValue.md("\n".join(f"- {f}" for f in bad) or "none")},
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
        metadata={"rows_checked": len(df), "duplicate_rows": len(dup), "duplicate_ids": dg.MetadataValue.json(sorted(set(dup["fault_id"]))[:20])},
    )


@dg.asset_check(
    asset=phase1_probe_run,
    blocking=True,
    description="probe_runs of the day: every measured latency is finite and >= 0; error rows carry none.",
)
def probe_latencies_valid(context: dg.AssetCheckExecutionContext, ledger: LedgerResource) -> dg.AssetCheckResult:
    day = _day(context)
    df = ledger.store().read_probe_runs(since=day)
    if day is not None:
        df = df[df["date"] == day]
    measured = df[df["error"].isna()]
    lat = measured["latency_ms"].astype(float)
    bad = int((lat.isna() | ~lat.map(math.isfinite) | (lat < 0)).sum())
    errors_with_latency = int(df[df["error"].notna()]["latency_ms"].notna().sum())
    return dg.AssetCheckResult(
        passed=bad == 0 and errors_with_latency == 0,
        metadata={"rows_checked": len(df), "bad_latencies": bad, "error_rows_with_latency": errors_with_latency},
    )
