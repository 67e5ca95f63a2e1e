"""``faultsense ledger convert`` (pre-Delta Parquet ledger -> Delta table) and ``faultsense ledger maintain``."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from typer.testing import CliRunner

from faultsense_pipelines.cli import app
from faultsense_pipelines.ledger import FAULT_LEDGER, PROBE_RUNS, LedgerStore, fault_table, probe_run_table
from tests.ledger.test_ledger import gpu_row, probe_rows


def _legacy(root: Path) -> None:
    """A Parquet ledger as the pre-Delta code wrote it, plus one corrupt and one foreign file."""
    faults = root / "fault_ledger" / "date=2026-11-30"
    runs = root / "probe_runs" / "date=2026-11-30"
    faults.mkdir(parents=True)
    runs.mkdir(parents=True)
    pq.write_table(fault_table([gpu_row(17), gpu_row(5)]), faults / "faultsense-sim-64-h08.parquet")
    pq.write_table(fault_table([gpu_row(3)]), faults / "minder-train-a-0123456789ab.parquet")
    pq.write_table(probe_run_table(probe_rows(3)), runs / "sim-64-h08-phase1.parquet")
    pq.write_table(probe_run_table(probe_rows(2)), runs / "sim-64-h08-phase2.parquet")
    pq.write_table(probe_run_table(probe_rows(1)), runs / "sim-64-h09-failed.parquet")
    (runs / "broken.parquet").write_bytes(b"PAR1 not really")
    pq.write_table(pa.table({"x": [1]}), runs / "foreign.parquet")


def test_convert_copies_a_parquet_ledger_into_the_table_and_names_what_it_skipped(tmp_path: Path) -> None:
    _legacy(tmp_path)
    result = CliRunner().invoke(app, ["ledger", "convert", "--ledger", str(tmp_path)])
    assert result.exit_code == 1, result.output  # two files skipped
    skipped = [line for line in result.stderr.splitlines() if line.startswith("skipped:")]
    assert (
        len(skipped) == 2
        and any("broken.parquet" in s for s in skipped)
        and any("foreign.parquet: not a probe_runs" in s for s in skipped)
    )
    assert "converted 9 rows" in result.stdout
    store = LedgerStore(str(tmp_path))
    faults, runs = store.read_table(FAULT_LEDGER).to_pandas(), store.read_table(PROBE_RUNS).to_pandas()
    assert sorted(faults["batch"]) == ["faultsense-sim-64-h08", "faultsense-sim-64-h08", "minder-train-a-0123456789ab"]
    assert runs.groupby("batch").size().to_dict() == {"faultsense-sim-64-h08": 5, "faultsense-sim-64-h09-failed": 1}
    assert not (tmp_path / "fault_ledger").exists() and (tmp_path / "legacy-parquet" / "fault_ledger").is_dir()


def test_maintain_compacts_applies_retention_and_vacuums(tmp_path: Path) -> None:
    store = LedgerStore(str(tmp_path))
    for day in ("2026-11-01", "2026-11-29", "2026-11-30"):
        for _ in range(3):  # each rewrite leaves the replaced file behind
            store.write_probe_runs(probe_rows(4), day=day, batch="faultsense-sim-64-h08")
    before = len(list((tmp_path / "delta").glob("dataset=*/*/*.parquet")))
    done = store.maintain(retain_days=7, vacuum_hours=0, today=__import__("datetime").date(2026, 11, 30))
    assert done["rows_deleted"] == 4
    assert sorted(set(store.read_probe_runs()["date"])) == ["2026-11-29", "2026-11-30"]
    after = len(list((tmp_path / "delta").glob("dataset=*/*/*.parquet")))  # data files (not the log's checkpoint)
    assert before == 9 and after == 2 and done["files_vacuumed"] >= 7
    result = CliRunner().invoke(app, ["ledger", "maintain", "--ledger", str(tmp_path), "--retain-days", "x"])
    assert result.exit_code == 2 and result.stderr.strip() == "error: --retain-days must be an integer in 0..100000, got 'x'"


def _version_1(table: pa.Table) -> pa.Table:
    """``table`` as schema version 1 wrote it: no ``confidence`` column, ``schema_version`` 1."""
    table = table.drop_columns(["confidence"])
    i = table.schema.get_field_index("schema_version")
    return table.set_column(i, "schema_version", pa.array([1] * table.num_rows, pa.int32()))


def test_a_version_1_parquet_ledger_converts_with_confidence_null(tmp_path: Path) -> None:
    faults = tmp_path / "fault_ledger" / "date=2026-11-30"
    faults.mkdir(parents=True)
    pq.write_table(_version_1(fault_table([gpu_row(17)])), faults / "faultsense-sim-64-h08.parquet")
    result = CliRunner().invoke(app, ["ledger", "convert", "--ledger", str(tmp_path)])
    assert result.exit_code == 0, result.output
    got = LedgerStore(str(tmp_path)).read_faults()
    assert got["component"].tolist() == ["gpu:17"] and got["schema_version"].tolist() == [1]
    assert got["confidence"].isna().all()


def test_a_table_written_before_version_2_reads_confidence_null_and_gains_the_column(tmp_path: Path) -> None:
    from deltalake import write_deltalake

    from faultsense_pipelines.ledger.store import TABLE_SCHEMA, _to_table

    old = _to_table(fault_table([gpu_row(17)]), FAULT_LEDGER, "2026-11-29", "faultsense-sim-64-h08")
    old = old.drop_columns(["confidence"])
    write_deltalake(str(tmp_path / "delta"), old, partition_by=["dataset", "date"])
    store = LedgerStore(str(tmp_path))
    assert "confidence" not in store.table_schema().names
    assert store.read_faults()["confidence"].isna().all()
    new = gpu_row(5, window="2026-11-30-08:00")
    store.write_faults(
        [__import__("dataclasses").replace(new, confidence=0.9995)], day="2026-11-30", batch="faultsense-sim-64-h08"
    )
    got = store.read_faults().sort_values("date")
    assert "confidence" in store.table_schema().names and TABLE_SCHEMA.field("confidence").nullable
    assert got["component"].tolist() == ["gpu:17", "gpu:5"]
    assert got["confidence"].isna().tolist() == [True, False] and got["confidence"].iloc[1] == 0.9995


def test_a_version_2_table_reads_node_null_and_takes_version_3_rows(tmp_path: Path) -> None:
    """A ledger that main wrote before ``node`` (schema version 2): read with ``node`` null, and
    the first version-3 write adds the column (Delta schema evolution), losing no old row."""
    from dataclasses import replace

    from deltalake import write_deltalake

    from faultsense_pipelines.ledger import SCHEMA_VERSION
    from faultsense_pipelines.ledger.store import _to_table

    old = _to_table(fault_table([gpu_row(17)]), FAULT_LEDGER, "2026-11-29", "faultsense-sim-64-h08").drop_columns(["node"])
    i = old.schema.get_field_index("schema_version")
    old = old.set_column(i, "schema_version", pa.array([2], pa.int32()))
    write_deltalake(str(tmp_path / "delta"), old, partition_by=["dataset", "date"])
    store = LedgerStore(str(tmp_path))
    assert "node" not in store.table_schema().names
    assert store.read_faults()["node"].isna().all()
    new = replace(gpu_row(5, window="2026-11-30-08:00"), node="a17")
    store.write_faults([new], day="2026-11-30", batch="faultsense-sim-64-h08")
    got = store.read_faults().sort_values("date")
    assert "node" in store.table_schema().names
    assert got["component"].tolist() == ["gpu:17", "gpu:5"]
    assert got["node"].isna().tolist() == [True, False] and got["node"].iloc[1] == "a17"
    assert got["schema_version"].tolist() == [2, SCHEMA_VERSION] and SCHEMA_VERSION == 3


def _runs(replica: str, n: int = 2) -> list:
    from faultsense_pipelines.ledger import ProbeRunRow

    return [ProbeRunRow(f"run-{replica}", replica, 1, i, (i, i + 1), 10.0 + i, 0, "simulated") for i in range(n)]


def test_maintain_compacts_each_finished_day_once_clustered_by_replica_and_leaves_today_alone(tmp_path: Path) -> None:
    from datetime import date

    store = LedgerStore(str(tmp_path))
    for day in ("2026-11-28", "2026-11-29", "2026-11-30"):
        for hour, replica in enumerate(("sim-c", "sim-a", "sim-b")):  # one commit (one file) per sweep
            store.write_probe_runs(_runs(replica), day=day, batch=f"faultsense-{replica}-h{hour:02d}")
    rows_before = store.read_probe_runs().sort_values(["date", "replica", "probe_index"]).reset_index(drop=True)

    done = store.maintain(vacuum_hours=0, today=date(2026, 11, 30))
    assert (done["partitions_compacted"], done["files_compacted"]) == (2, 6)  # 11-28 and 11-29: three files each
    files = {
        day: sorted((tmp_path / "delta" / "dataset=probe_runs" / f"date={day}").glob("*.parquet"))
        for day in ("2026-11-28", "2026-11-29", "2026-11-30")
    }
    assert [len(files[d]) for d in sorted(files)] == [1, 1, 3]  # today keeps its per-sweep files
    # Z-ordered by replica: the merged file's rows come replica by replica (they were written c, a, b)
    assert pq.read_table(files["2026-11-29"][0]).column("replica").to_pylist() == ["sim-a"] * 2 + ["sim-b"] * 2 + ["sim-c"] * 2
    rows_after = store.read_probe_runs().sort_values(["date", "replica", "probe_index"]).reset_index(drop=True)
    assert rows_after.equals(rows_before)  # the same rows, fewer files

    again = store.maintain(vacuum_hours=0, today=date(2026, 11, 30))
    assert (again["partitions_compacted"], again["files_compacted"]) == (0, 0)  # nothing rewritten twice


def test_maintain_takes_retention_from_the_fleet_files_maintenance_section(tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    store = LedgerStore(str(tmp_path / "ledger"))
    today = datetime.now(UTC).date()
    for back in (0, 2, 9):  # today, 2 and 9 days ago
        store.write_probe_runs(_runs("sim-a"), day=today - timedelta(days=back), batch="faultsense-sim-a-h01")
    fleet = tmp_path / "fleet.yaml"
    replica = "  - {name: sim-a, gpus: 8, probe_size: 4, executor: simulated}\n"
    fleet.write_text(f"ledger: {tmp_path / 'ledger'}\nmaintenance: {{retain_days: 7, vacuum_hours: 0}}\nreplicas:\n{replica}")
    result = CliRunner().invoke(app, ["ledger", "maintain", "--fleet", str(fleet)])
    assert result.exit_code == 0, result.output
    assert "2 rows deleted (retain_days 7)" in result.stdout  # the day 9 days back held sim-a's 2 probe rows
    assert sorted(set(store.read_probe_runs()["date"])) == [(today - timedelta(days=b)).isoformat() for b in (2, 0)]
    fleet.write_text(f"ledger: {tmp_path / 'ledger'}\nmaintenance: {{retain_days: -1}}\nreplicas:\n{replica}")
    bad = CliRunner().invoke(app, ["ledger", "maintain", "--fleet", str(fleet)])
    assert bad.exit_code == 2 and "maintenance.retain_days" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
