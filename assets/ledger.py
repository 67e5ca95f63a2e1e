"""``fault_ledger``: the one asset that writes a sweep to the ledger's Delta table, and its checks.

It commits every completed sweep (:func:`~.commit.commit_sweep`, one commit): both phases'
probe rows, the fault rows and the ``sweeps`` row. A sweep whose binary drill-down had no
suspect (:func:`~.sweep.drills_down`) commits its Phase 1 rows and an empty fault batch, or the
one ``replica:<name>`` row of a sweep judged replica-wide degraded, with no ``drilldown`` in its
``sweeps`` row. A failed sweep is recorded by the step that failed (:func:`~.commit.record_failed_attempt`).

The checks judge what the run itself measured and committed, never the day or the ledger
around it, so a check costs the same in the first hour of a ledger and in the last hour of a
day that holds 200 replicas' sweeps, after a year:

* ``fault_ledger_schema`` -- the table has every :data:`FAULT_SCHEMA` column with its type (the
  schema is part of the log the commit loads anyway; no data file is read);
* ``fault_ledger_unique_rows`` -- no ``fault_id`` appears twice among the fault rows of the
  sweep's batch as its commit wrote them: the data files that commit added, named by its own
  log entry (:meth:`~faultsense_pipelines.ledger.LedgerStore.added_files`; the version is the
  ``table_version`` of the partition's latest ``fault_ledger`` materialization), read back
  from storage;
* ``probe_latencies_valid`` (blocking, on ``phase1_probe_run``) -- no NaN, infinite or negative
  latency among the sweep's Phase 1 measurements, and no latency on an error row; a failure
  stops the drill-down (and so the commit) of that run. (The sweep's rows are not in the
  ledger yet: it commits at its end.)
"""

import math
import warnings
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import dagster as dg
import pyarrow as pa

from faultsense_pipelines.ledger import FAULT_LEDGER, FAULT_SCHEMA
from faultsense_pipelines.localize import Localization, Phase1Result, ProbeRecord
from faultsense_pipelines.resources.executors import redact_secrets
from faultsense_pipelines.resources.fleet import FleetResource
from faultsense_pipelines.resources.ledger import LedgerResource

from .commit import commit_sweep, fault_batch, run_started_at
from .partitions import SWEEP_PARTITIONS, SweepKey, sweep_key
from .report import partition_metadata, verdicts_markdown
from .rows import degraded_row, fault_rows, probe_rows, sweep_row
from .sweep import drilldown_method_of, drills_down, phase1_probe_run

__all__ = [
    "build_probe_latencies_check",
    "committed_version",
    "fault_ledger",
    "fault_ledger_schema",
    "fault_ledger_unique_rows",
    "latency_problems",
    "probe_latencies_valid",
    "replica_day_rows",
]


@dg.asset(
    partitions_def=SWEEP_PARTITIONS,
    group_name="ledger",
    kinds={"parquet"},
    description="The sweep's verdicts as fault rows of the ledger's Delta table (dataset=fault_ledger), "
    "committed in one commit with both phases' probe rows and the sweeps row (replaced on re-run); the ledger's one sweep writer.",
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
    method = drilldown_method_of(context.run.run_config)
    drilled = drills_down(loc.phase1, method)
    detected_at = datetime.now(UTC)
    if drilled:
        rows = fault_rows(loc, key=key, sweep_id=context.run.run_id, detected_at=detected_at)
    elif loc.replica_degraded:  # no drill-down: no verdict, but a degraded sweep's one replica row
        rows = [degraded_row(loc.phase1, key=key, sweep_id=context.run.run_id, detected_at=detected_at)]
    else:
        rows = []
    sweep = sweep_row(
        key=key, sweep_id=context.run.run_id, executor=replica.executor, started_at=run_started_at(context),
        finished_at=datetime.now(UTC), probes_phase1=loc.probes_phase1, probes_phase2=loc.probes_phase2,
        drilldown=method if drilled else None, faults=rows,
    )  # fmt: skip
    written, path = commit_sweep(
        store,
        key,
        phase1=probe_rows(loc.phase1.records, **common),
        phase2=probe_rows(loc.phase2_records, **common) if drilled else None,
        faults=rows,
        sweep_id=context.run.run_id,
        sweep=sweep,
    )
    confirmed = [
        {"component": r.component, "node": r.node, "confidence": None if r.confidence is None else round(r.confidence, 3)}
        for r in rows
        if r.status == "confirmed"
    ]
    return dg.MaterializeResult(
        metadata={
            **partition_metadata("fault_ledger", key.hour, key.replica, str(context.partition_key)),
            "rows": len(rows),
            "confirmed": dg.MetadataValue.json(confirmed),
            "faults": dg.MetadataValue.md(verdicts_markdown(phase2_drilldown.verdicts, phase2_drilldown.probes_phase1)),
            "probes_used": phase2_drilldown.probes_phase1 + phase2_drilldown.probes_phase2,
            "path": dg.MetadataValue.path(path),
            # text, not a number: the table's version is the whole ledger's, not this partition's
            # (as a number Dagster's Plots tab would draw every replica's on one axis)
            "table_version": written.rsplit("@v", 1)[1],
            "ledger": store.display_uri,
        }
    )


def replica_day_rows(
    ledger: LedgerResource, key: SweepKey, dataset: str, columns: list[str], skipped: list[str] | None = None
) -> pa.Table:
    """``columns`` of the rows of ``dataset`` for ``key``'s replica in its ``date`` partition.

    Opens only the files of that partition whose log statistics can hold the replica (at most
    the replica's sweeps of the day, plus any other writer's files naming it), so a damaged
    file of another replica is never opened. With ``skipped``, a damaged file among these is
    left out and named there (:meth:`~faultsense_pipelines.ledger.LedgerStore.read_table`).
    """
    files = {"date": key.day, "replica": key.replica}
    return ledger.store().read_table(dataset, files=files, columns=columns, skipped=skipped)


def committed_version(context: dg.AssetCheckExecutionContext) -> int | None:
    """The table version that the latest ``fault_ledger`` materialization of the check's
    partition committed (its ``table_version`` metadata: digits, or an int in materializations
    written before it became text); None when there is none (nothing
    materialized yet, or a materialization from before that metadata existed)."""
    records = context.instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=fault_ledger.key, asset_partitions=[str(context.partition_key)]), limit=1
    ).records
    if not records or records[0].asset_materialization is None:
        return None
    value = records[0].asset_materialization.metadata.get("table_version")
    if value is None:
        return None
    raw = value.value  # text since the Plots tab change; an int in older materializations
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    return int(raw) if isinstance(raw, str) and raw.isdigit() else None


def _unreadable(skipped: list[str]) -> str | None:
    """A check's description when it could not read some data files (it then fails): the first
    one named, in one line; None when it read them all."""
    if not skipped:
        return None
    more = f" (and {len(skipped) - 1} more)" if len(skipped) > 1 else ""
    return f"unreadable ledger file {skipped[0]}{more}"


@dg.asset_check(asset=fault_ledger, description="The ledger table's current version has every fault_ledger column with its type.")
def fault_ledger_schema(context: dg.AssetCheckExecutionContext, ledger: LedgerResource) -> dg.AssetCheckResult:
    snapshot = ledger.store().snapshot()
    version, schema = snapshot if snapshot is not None else (-1, None)
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
            "table_version": version,
            "columns_checked": len(FAULT_SCHEMA),
            "bad_columns": dg.MetadataValue.md("\n".join(f"- {b}" for b in bad) or "none"),
        },
    )


@dg.asset_check(
    asset=fault_ledger,
    description="No fault_id appears twice among the fault rows that the sweep's commit wrote.",
)
def fault_ledger_unique_rows(context: dg.AssetCheckExecutionContext, ledger: LedgerResource) -> dg.AssetCheckResult:
    if not context.has_partition_key:  # run outside a sweep: there is no partition to judge
        return dg.AssetCheckResult(passed=True, metadata={"rows_checked": 0, "judged": "nothing: no sweep partition"})
    skipped: list[str] = []
    key, version = sweep_key(context), committed_version(context)
    if version is None:  # no commit recorded: judge the replica's rows of the day instead
        rows = replica_day_rows(ledger, key, FAULT_LEDGER, ["fault_id"], skipped)
    else:
        batch = {"batch": fault_batch(key)}
        rows = ledger.store().read_table(FAULT_LEDGER, added_in=version, files=batch, columns=["fault_id"], skipped=skipped)
    ids = rows.column("fault_id").to_pylist()
    counts = Counter(ids)
    dup = sorted(i for i, n in counts.items() if n > 1)
    return dg.AssetCheckResult(
        passed=not dup and not skipped,
        description=_unreadable(skipped),
        metadata={
            "rows_checked": len(ids),
            "table_version": -1 if version is None else version,
            "duplicate_rows": sum(counts[i] for i in dup),
            "duplicate_ids": dg.MetadataValue.json(dup[:20]),
            "unreadable_files": dg.MetadataValue.json(skipped),
        },
    )


def latency_problems(records: Sequence[ProbeRecord]) -> tuple[int, int, int]:
    """What ``probe_latencies_valid`` judges in a sweep's probe records: ``(checked, bad,
    errors_with_latency)`` -- latencies of measured probes (ms), those of them that are NaN,
    infinite or negative, and error records that still carry a latency."""
    own = [v for r in records if r.error is None for v in r.latencies_ms]
    bad = sum(1 for v in own if not (isinstance(v, int | float) and math.isfinite(v) and v >= 0))
    return len(own), bad, sum(1 for r in records if r.error is not None and r.latencies_ms)


def _probe_latencies_valid(context: dg.AssetCheckExecutionContext, phase1_probe_run: Phase1Result) -> dg.AssetCheckResult:
    checked, bad, errors_with_latency = latency_problems(phase1_probe_run.records)
    return dg.AssetCheckResult(
        passed=bad == 0 and errors_with_latency == 0,
        metadata={"rows_checked": checked, "bad_latencies": bad, "error_rows_with_latency": errors_with_latency},
    )


def build_probe_latencies_check(phase1: dg.AssetsDefinition) -> dg.AssetChecksDefinition:
    """``probe_latencies_valid`` on ``phase1`` (``phase1_probe_run``, as the definitions
    partition it: its hour dimension starts where the fleet's sweeps start), with that asset's
    own partitions (Dagster refuses a partitioned check whose partitions differ from its
    asset's)."""
    with warnings.catch_warnings():
        # partitioned checks are a Dagster preview: the check loads this run's Phase 1 partition
        warnings.simplefilter("ignore", dg.PreviewWarning)
        return dg.asset_check(
            asset=phase1,
            name="probe_latencies_valid",
            partitions_def=phase1.partitions_def,
            blocking=True,
            description="This sweep's Phase 1 latencies: every measured latency is finite and >= 0; error rows carry none.",
        )(_probe_latencies_valid)


#: The check on the module's ``phase1_probe_run`` (partitions from :data:`SWEEP_PARTITIONS`).
probe_latencies_valid = build_probe_latencies_check(phase1_probe_run)
