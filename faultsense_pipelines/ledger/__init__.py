"""The fault ledger: one Delta Lake table holding the datasets every detector writes and analytics read.

Layout under the ledger URI (see ``docs/ledger.md``)::

    delta/_delta_log/...                                the commits
    delta/dataset=fault_ledger/date=YYYY-MM-DD/*.parquet one row per fault, FAULT_SCHEMA columns
    delta/dataset=probe_runs/date=YYYY-MM-DD/*.parquet   one row per probe repeat, PROBE_RUN_SCHEMA columns
    delta/dataset=actions/date=YYYY-MM-DD/*.parquet      one row per action decision, ACTION_SCHEMA columns
    delta/dataset=sweeps/date=YYYY-MM-DD/*.parquet       one row per sweep attempt, SWEEP_SCHEMA columns

A sweep's probe, fault and sweep rows change together, in one commit (:meth:`LedgerStore.commit`).

Public API for other detectors (stable): build :class:`FaultRow` objects and hand them to
:func:`append_faults` (or :meth:`LedgerStore.write_faults`)::

    from datetime import UTC, datetime
    from faultsense_pipelines.ledger import FaultRow, append_faults, make_fault_id

    window = "2026-11-30T08:00"
    row = FaultRow(
        fault_id=make_fault_id("minder", "train-a", window, "machine:node-07"),
        detected_at=datetime.now(UTC), sweep_id="minder-scan-42", replica="train-a",
        detector="minder", component_kind="machine", component="machine:node-07",
        status="confirmed",
    )
    append_faults(".faultsense/ledger", [row], batch="minder-train-a-2026-11-30T08")

Re-writing the same batch of the same day replaces its rows.
"""

from .rows import ActionRow, FaultRow, ProbeRunRow, SweepRow, action_table, fault_table, probe_run_table, sweep_table
from .schema import (
    ACTION_DECISIONS,
    ACTION_SCHEMA,
    ACTIONS,
    COMPONENT_KINDS,
    FAULT_LEDGER,
    FAULT_SCHEMA,
    PROBE_RUN_SCHEMA,
    PROBE_RUNS,
    SCHEMA_VERSION,
    STATUSES,
    SWEEP_SCHEMA,
    SWEEP_STATUSES,
    SWEEPS,
    gpu_component,
    link_component,
    make_action_key,
    make_fault_id,
    replica_component,
)
from .store import (
    COMPACT_EVERY,
    COMPACT_TARGET_BYTES,
    TABLE_DIR,
    TABLE_SCHEMA,
    LedgerError,
    LedgerStore,
    WriteResult,
    append_faults,
    append_passive_faults,
    as_day,
)

__all__ = [
    "ACTIONS",
    "ACTION_DECISIONS",
    "ACTION_SCHEMA",
    "COMPACT_EVERY",
    "COMPACT_TARGET_BYTES",
    "COMPONENT_KINDS",
    "FAULT_LEDGER",
    "FAULT_SCHEMA",
    "PROBE_RUNS",
    "PROBE_RUN_SCHEMA",
    "SCHEMA_VERSION",
    "STATUSES",
    "SWEEPS",
    "SWEEP_SCHEMA",
    "SWEEP_STATUSES",
    "TABLE_DIR",
    "TABLE_SCHEMA",
    "ActionRow",
    "FaultRow",
    "LedgerError",
    "LedgerStore",
    "ProbeRunRow",
    "SweepRow",
    "WriteResult",
    "action_table",
    "append_faults",
    "append_passive_faults",
    "as_day",
    "fault_table",
    "gpu_component",
    "link_component",
    "make_action_key",
    "make_fault_id",
    "probe_run_table",
    "replica_component",
    "sweep_table",
]
