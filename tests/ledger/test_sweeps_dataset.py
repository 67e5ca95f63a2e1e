"""The ``sweeps`` dataset (schema version 3): one row per sweep attempt, in the sweep's own commit;
a version-2 ledger still reads and takes new commits (real Delta tables, default tier)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable, write_deltalake

from faultsense_pipelines.assets.commit import commit_sweep, record_failed_attempt
from faultsense_pipelines.assets.partitions import SweepKey
from faultsense_pipelines.ledger import (
    FAULT_LEDGER,
    SWEEPS,
    TABLE_SCHEMA,
    FaultRow,
    LedgerStore,
    ProbeRunRow,
    SweepRow,
    fault_table,
)
from faultsense_pipelines.ledger.schema import ADDED_IN_VERSION_2, ADDED_IN_VERSION_3
from faultsense_pipelines.ledger.store import _to_table

START = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)


def sweep_row(hour: int = 8, status: str = "healthy", sweep_id: str = "run-1", **extra) -> SweepRow:
    start = START.replace(hour=hour)
    base = dict(
        sweep_id=sweep_id, replica="sim-16", swept_hour=start, status=status, started_at=start + timedelta(minutes=5),
        finished_at=start + timedelta(minutes=6), executor="simulated", probes_phase1=20,
    )  # fmt: skip
    return SweepRow(**(base | extra))


def gpu_fault(sweep_id: str = "run-1") -> FaultRow:
    return FaultRow(
        fault_id="f" * 20, detected_at=START, sweep_id=sweep_id, replica="sim-16", detector="faultsense",
        component_kind="gpu", component="gpu:9", status="confirmed", gpu=9, phase=2,
    )  # fmt: skip


def probes(n: int, error: str | None = None, sweep_id: str = "run-1") -> list[ProbeRunRow]:
    return [
        ProbeRunRow(sweep_id, "sim-16", 1, i, (i, i + 1), None if error else 10.0, None if error else 0, "simulated", error)
        for i in range(n)
    ]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"status": "broken"}, "status must be one of"),
        ({"swept_hour": datetime(2026, 11, 30, 8)}, "swept_hour must be a timezone-aware"),
        ({"finished_at": START}, "finished_at"),
        ({"probes_phase1": -1}, "probes_phase1"),
        ({"replica": "Bad Name"}, "replica"),
        ({"sweep_id": ""}, "sweep_id"),
    ],
)
def test_a_bad_sweep_row_is_refused_naming_the_field(change: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        sweep_row(**change)


def test_the_partition_holds_one_sweep_row_its_latest_attempt_replaces_it_never_adds(tmp_path: Path) -> None:
    store = LedgerStore(str(tmp_path / "ledger"))
    key = SweepKey("2026-11-30-08:00", "sim-16")

    def sweeps() -> list[tuple[str, str, str]]:
        t = store.read_table(SWEEPS, columns=["batch", "status", "sweep_id"])
        return sorted(zip(*(t.column(c).to_pylist() for c in ("batch", "status", "sweep_id"))))

    record_failed_attempt(store, key, probes(3, "unreachable"), sweep_row(status="failed", sweep_id="run-1", failed_probes=3))
    assert sweeps() == [("faultsense-sim-16-h08-failed", "failed", "run-1")]
    commit_sweep(store, key, phase1=probes(3, sweep_id="run-2"), phase2=None, faults=[gpu_fault("run-2")],
                 sweep_id="run-2", sweep=sweep_row(status="faulty", sweep_id="run-2", confirmed=1))  # fmt: skip
    assert sweeps() == [("faultsense-sim-16-h08", "faulty", "run-2")]  # the failed attempt's row went with its probes
    commit_sweep(store, key, phase1=probes(3, sweep_id="run-3"), phase2=None, faults=[], sweep_id="run-3",
                 sweep=sweep_row(status="healthy", sweep_id="run-3"))  # fmt: skip
    assert sweeps() == [("faultsense-sim-16-h08", "healthy", "run-3")]  # re-run: replaced, not added
    commit_sweep(store, SweepKey("2026-11-30-09:00", "sim-16"), phase1=probes(3, sweep_id="run-4"), phase2=None,
                 faults=[], sweep_id="run-4", sweep=sweep_row(hour=9, sweep_id="run-4"))  # fmt: skip
    assert [s[0] for s in sweeps()] == ["faultsense-sim-16-h08", "faultsense-sim-16-h09"]
    # the sweep row's values come back as written (timestamps in UTC)
    row = store.read_table(SWEEPS, files={"batch": "faultsense-sim-16-h09"}).to_pylist()[0]
    assert row["swept_hour"] == START.replace(hour=9) and row["probes_phase1"] == 20 and row["schema_version"] == 3


def test_a_version_2_ledger_reads_no_sweeps_then_takes_a_sweep_commit_keeping_its_rows(tmp_path: Path) -> None:
    # a table as main wrote it before version 3: no sweeps columns at all
    uri = tmp_path / "ledger" / "delta"
    v2 = pa.schema([f for f in TABLE_SCHEMA if f.name not in ADDED_IN_VERSION_3])
    assert "confidence" not in ADDED_IN_VERSION_3 and set(ADDED_IN_VERSION_2) <= set(v2.names)
    old = _to_table(fault_table([gpu_fault("old-run")]), FAULT_LEDGER, "2026-11-29", "faultsense-sim-16-h23")
    DeltaTable.create(str(uri), schema=v2, partition_by=["dataset", "date"])
    write_deltalake(str(uri), old.select(v2.names).cast(v2), mode="append", partition_by=["dataset", "date"])
    store = LedgerStore(str(tmp_path / "ledger"))
    assert set(ADDED_IN_VERSION_3).isdisjoint(store.table_schema().names)

    empty = store.read_table(SWEEPS)
    assert empty.num_rows == 0 and "swept_hour" in empty.column_names

    commit_sweep(store, SweepKey("2026-11-30-08:00", "sim-16"), phase1=probes(2), phase2=None, faults=[], sweep_id="run-1",
                 sweep=sweep_row())  # fmt: skip
    assert set(ADDED_IN_VERSION_3) <= set(store.table_schema().names)  # the table gained the columns
    assert store.read_table(SWEEPS, columns=["status"]).column("status").to_pylist() == ["healthy"]
    faults = store.read_faults()
    assert faults["sweep_id"].tolist() == ["old-run"] and faults["schema_version"].tolist() == [3]
