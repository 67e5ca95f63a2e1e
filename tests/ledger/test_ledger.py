"""The Parquet fault ledger: layout, schema, idempotent atomic writes, readers (pandas, DuckDB)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from faultsense_pipelines.ledger import (
    FAULT_LEDGER,
    FAULT_SCHEMA,
    PROBE_RUN_SCHEMA,
    PROBE_RUNS,
    SCHEMA_VERSION,
    FaultRow,
    LedgerStore,
    ProbeRunRow,
    append_faults,
    append_passive_faults,
    gpu_component,
    link_component,
    make_fault_id,
)
from faultsense_pipelines.ledger.store import LedgerError

WHEN = datetime(2026, 11, 30, 8, 17, tzinfo=UTC)


def gpu_row(gpu: int, replica: str = "sim-64", window: str = "2026-11-30-08:00") -> FaultRow:
    component = gpu_component(gpu)
    return FaultRow(
        fault_id=make_fault_id("faultsense", replica, window, component),
        detected_at=WHEN,
        sweep_id="run-1",
        replica=replica,
        detector="faultsense",
        component_kind="gpu",
        component=component,
        status="confirmed",
        slowdown=1.5,
        gpu=gpu,
        phase=2,
        probes_used=80,
    )


def probe_rows(n: int) -> list[ProbeRunRow]:
    return [ProbeRunRow("run-1", "sim-64", 1, i, (i, i + 1), 10.0 + i, 0, "simulated") for i in range(n)]


def test_components_and_fault_ids_follow_the_documented_form() -> None:
    assert gpu_component(17) == "gpu:17"
    assert link_component(40, 3) == "link:3-40"
    a = make_fault_id("faultsense", "sim-64", "2026-11-30-08:00", "gpu:17")
    assert a == make_fault_id("faultsense", "sim-64", "2026-11-30-08:00", "gpu:17")
    assert len(a) == 20 and int(a, 16) >= 0
    others = {
        make_fault_id(*k)
        for k in [("minder", "sim-64", "2026-11-30-08:00", "gpu:17"), ("faultsense", "sim-64", "2026-11-30-09:00", "gpu:17")]
    }
    assert a not in others and len(others) == 2


def test_the_ledger_is_one_delta_table_with_the_documented_columns(tmp_path: Path) -> None:
    store = LedgerStore(str(tmp_path))
    written = store.write_faults([gpu_row(17)], day="2026-11-30", batch="faultsense-sim-64-h08")
    assert written.path == f"{tmp_path}/delta" and written.rows == 1
    assert (tmp_path / "delta" / "_delta_log").is_dir()
    store.write_probe_runs(probe_rows(3), day="2026-11-30", batch="faultsense-sim-64-h08")
    assert store.version() == written.version + 1
    faults = store.read_table(FAULT_LEDGER)
    assert faults.schema.names == [
        "fault_id",
        "detected_at",
        "sweep_id",
        "replica",
        "detector",
        "component_kind",
        "component",
        "gpu",
        "peer_gpu",
        "slowdown",
        "status",
        "phase",
        "probes_used",
        "confidence",
        "node",
        "schema_version",
        "date",
        "batch",
    ]
    for f in FAULT_SCHEMA:
        assert faults.schema.field(f.name).type.equals(f.type), f.name
    runs = store.read_table(PROBE_RUNS)
    assert runs.schema.names[:9] == [
        "sweep_id",
        "replica",
        "phase",
        "probe_index",
        "gpus",
        "latency_ms",
        "repeat",
        "executor",
        "error",
    ]
    for f in PROBE_RUN_SCHEMA:
        assert runs.schema.field(f.name).type.equals(f.type), f.name
    assert faults.column("schema_version").to_pylist() == [SCHEMA_VERSION]
    assert all("/dataset=probe_runs/date=2026-11-30/" in p for p in store.files(PROBE_RUNS))


def test_pandas_pyarrow_and_duckdb_read_the_table_without_our_code(tmp_path: Path) -> None:
    from deltalake import DeltaTable

    store = LedgerStore(str(tmp_path))
    store.write_faults([gpu_row(17), gpu_row(5)], day="2026-11-30", batch="b1")
    store.write_faults([gpu_row(9, window="2026-11-29-23:00")], day="2026-11-29", batch="b2")
    store.write_probe_runs(probe_rows(4), day="2026-11-30", batch="r1")
    store.write_faults([gpu_row(17)], day="2026-11-30", batch="b1")  # replaces b1: a stale file stays on disk

    table = DeltaTable(str(tmp_path / "delta"))
    by_pandas = table.to_pandas(filters=[("dataset", "=", "fault_ledger")])
    assert sorted(by_pandas["gpu"].tolist()) == [9, 17]
    assert sorted(by_pandas["date"].astype(str).unique()) == ["2026-11-29", "2026-11-30"]

    ledger = table.to_pyarrow_dataset()  # noqa: F841 - read by DuckDB below
    by_duckdb = duckdb.sql(
        "SELECT date, count(*) AS n FROM ledger WHERE dataset = 'fault_ledger' GROUP BY date ORDER BY date"
    ).fetchall()
    assert [(str(d), n) for d, n in by_duckdb] == [("2026-11-29", 1), ("2026-11-30", 1)]
    latencies = duckdb.sql("SELECT sum(latency_ms), max(len(gpus)) FROM ledger WHERE dataset = 'probe_runs'").fetchall()[0]
    assert latencies == (10.0 + 11.0 + 12.0 + 13.0, 2)

    mine = store.read_faults(since="2026-11-30")
    assert mine["gpu"].tolist() == [17] and str(mine["gpu"].dtype) == "Int32"


def test_rewriting_a_batch_replaces_its_rows_and_an_empty_batch_clears_them(tmp_path: Path) -> None:
    store = LedgerStore(str(tmp_path))
    for _ in range(3):
        store.write_faults([gpu_row(17), gpu_row(5)], day="2026-11-30", batch="faultsense-sim-64-h08")
    assert len(store.read_faults()) == 2
    store.write_faults([gpu_row(1, window="2026-11-30-09:00")], day="2026-11-30", batch="faultsense-sim-64-h09")
    assert len(store.read_faults()) == 3
    store.write_faults([], day="2026-11-30", batch="faultsense-sim-64-h08")
    assert store.read_faults()["gpu"].tolist() == [1]
    assert store.version() == 5  # create (version 0), then one commit per write


def test_passive_detectors_append_machine_and_fabric_rows_without_gpu_ids(tmp_path: Path) -> None:
    window = "2026-11-30T08:00"
    rows = [
        FaultRow(
            make_fault_id("minder", "train-a", window, "machine:node-07"),
            WHEN,
            "scan-1",
            "train-a",
            "minder",
            "machine",
            "machine:node-07",
            "confirmed",
        ),
        FaultRow(
            make_fault_id("flowpulse", "fabric-1", window, "fabric_link:leaf3-spine1"),
            WHEN,
            "scan-2",
            "fabric-1",
            "flowpulse",
            "fabric_link",
            "fabric_link:leaf3-spine1",
            "suspect",
            slowdown=None,
        ),
    ]
    append_faults(str(tmp_path), rows[:1], batch="minder-train-a-2026-11-30T08")
    append_faults(str(tmp_path), rows[:1], batch="minder-train-a-2026-11-30T08")
    append_faults(str(tmp_path), rows[1:], batch="flowpulse-fabric-1-2026-11-30T08")
    df = LedgerStore(str(tmp_path)).read_faults()
    assert df["detector"].tolist() == ["minder", "flowpulse"] or sorted(df["detector"]) == ["flowpulse", "minder"]
    assert df["gpu"].isna().all() and df["peer_gpu"].isna().all()
    assert (df["date"] == "2026-11-30").all()
    assert LedgerStore(str(tmp_path)).read_faults(detector="minder")["component"].tolist() == ["machine:node-07"]


def test_a_passive_rescan_of_the_same_window_replaces_its_rows_and_a_clean_rescan_clears_them(tmp_path: Path) -> None:
    uri, window = str(tmp_path), "2026-11-30T08:00/2026-11-30T08:15"
    scan = dict(
        detector="minder",
        source="train-a",
        component_kind="machine",
        window=window,
        batch_key=f"metrics.parquet|{window}",
        sweep_id="scan-1",
        day=WHEN.date(),
    )
    found = [("machine:node-07", WHEN), ("machine:node-11", WHEN)]
    first = append_passive_faults(uri, found, **scan)
    again = append_passive_faults(uri, found, **scan)
    df = LedgerStore(uri).read_faults()
    assert first.batch == again.batch and len(df) == 2
    assert sorted(df["fault_id"]) == sorted(make_fault_id("minder", "train-a", window, c) for c, _ in found)
    assert set(df["status"]) == {"confirmed"} and set(df["replica"]) == {"train-a"}
    other = append_passive_faults(uri, found[:1], **{**scan, "window": "next", "batch_key": "metrics.parquet|next"})
    assert other.batch != first.batch and len(LedgerStore(uri).read_faults()) == 3
    append_passive_faults(uri, [], **scan)
    assert LedgerStore(uri).read_faults()["fault_id"].tolist() == [make_fault_id("minder", "train-a", "next", "machine:node-07")]


def test_a_passive_scan_records_the_components_it_could_not_pin_down_as_suspects(tmp_path: Path) -> None:
    found = [("fabric_link:leaf01/up02-spine02", WHEN), ("fabric_link:leaf02/up02-spine02", WHEN)]
    append_passive_faults(
        str(tmp_path),
        found,
        detector="flowpulse",
        source="fabric-1",
        component_kind="fabric_link",
        window="w",
        batch_key="w",
        sweep_id="scan-1",
        day=WHEN.date(),
        suspects={"fabric_link:leaf02/up02-spine02"},
    )
    df = LedgerStore(str(tmp_path)).read_faults().set_index("component")
    assert df.loc["fabric_link:leaf01/up02-spine02", "status"] == "confirmed"
    assert df.loc["fabric_link:leaf02/up02-spine02", "status"] == "suspect"


@pytest.mark.parametrize("batch", ["../outside", "a/b", ".hidden", "", "x" * 201])
def test_batch_names_cannot_leave_the_ledger_folder(tmp_path: Path, batch: str) -> None:
    with pytest.raises(ValueError, match="batch must be"):
        LedgerStore(str(tmp_path)).write_faults([], day="2026-11-30", batch=batch)
    assert not any(p for p in tmp_path.parent.rglob("outside*"))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("replica", "../etc", "replica must be"),
        ("component_kind", "rack", "component_kind must be one of"),
        ("status", "broken", "status must be one of"),
        ("slowdown", float("nan"), "slowdown must be finite"),
        ("gpu", -1, "gpu must be an integer >= 0"),
        ("detected_at", datetime(2026, 11, 30), "detected_at must be a timezone-aware datetime"),
        ("node", "a17,a18,a19", "node must be node names joined by ','"),  # one node, or a link's two
        ("node", "a 17", "node must be node names joined by ','"),
        ("node", "", "node must be node names joined by ','"),
    ],
)
def test_invalid_fault_rows_are_refused_naming_the_field(field: str, value: object, message: str) -> None:
    fields = {**gpu_row(1).__dict__, field: value}
    with pytest.raises(ValueError, match=message):
        FaultRow(**fields)


def test_probe_rows_refuse_nan_or_negative_latencies_and_latencies_on_error_rows() -> None:
    for bad in (float("nan"), -1.0, None):
        with pytest.raises(ValueError, match="latency_ms must be finite"):
            ProbeRunRow("r", "a", 1, 0, (0, 1), bad, 0, "local")
    with pytest.raises(ValueError, match="error row carries no latency"):
        ProbeRunRow("r", "a", 1, 0, (0, 1), 3.0, 0, "local", error="timeout")


@pytest.mark.parametrize("uri", ["memory://faultsense-test-ledger", " /tmp/ledger", "/tmp/ledger\n"])
def test_a_uri_the_delta_table_cannot_use_is_refused_in_one_line(uri: str) -> None:
    with pytest.raises(ValueError, match=r"not supported by the ledger.s Delta table|surrounding whitespace"):
        LedgerStore(uri)


def test_ledger_show_of_a_missing_path_or_a_file_says_there_is_no_ledger(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from faultsense_pipelines.cli import app

    missing, a_file = tmp_path / "nonexistent", tmp_path / "lf"
    a_file.write_text("")
    for where, extra in ((missing, ""), (a_file, " (it is a file, not a directory)")):
        shown = CliRunner().invoke(app, ["ledger", "show", "--ledger", str(where)])
        assert shown.exit_code == 2, shown.output
        assert shown.output.strip().splitlines() == [f"error: no ledger at {where}{extra}"]


def test_ledger_show_of_an_existing_empty_ledger_is_an_empty_table(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from faultsense_pipelines.cli import app

    shown = CliRunner().invoke(app, ["ledger", "show", "--ledger", str(tmp_path), "--since", "2026-11-01"])
    assert shown.exit_code == 0, shown.output
    assert "(0 of 0 rows)" in " ".join(shown.output.split())


def test_reads_by_day_or_replica_never_open_the_files_they_prune(tmp_path: Path) -> None:
    # three sweeps, one file each; then the files of the old day and of replica sim-b are destroyed:
    # a read that opened them would fail
    store = LedgerStore(str(tmp_path))
    store.write_faults([gpu_row(1)], day="2026-11-29", batch="faultsense-sim-64-h08")
    store.write_faults([gpu_row(2)], day="2026-11-30", batch="faultsense-sim-64-h08")
    store.write_faults([gpu_row(3, replica="sim-b")], day="2026-11-30", batch="faultsense-sim-b-h08")
    folder = tmp_path / "delta" / "dataset=fault_ledger"
    for path in [*(folder / "date=2026-11-29").glob("*.parquet"), *(folder / "date=2026-11-30").glob("*.parquet")]:
        if path.parent.name.endswith("29") or "sim-b" in pq.read_table(path).column("replica").to_pylist():
            path.write_bytes(b"PAR1 destroyed PAR1")
    assert store.read_faults(since="2026-11-30", replica="sim-64")["component"].tolist() == ["gpu:2"]
    got = store.read_table(FAULT_LEDGER, files={"date": "2026-11-30", "replica": "sim-64"}, columns=["component"])
    assert got.column("component").to_pylist() == ["gpu:2"]
    with pytest.raises(LedgerError):  # the whole table does open them
        store.read_faults()


def test_append_batches_adds_many_batches_in_one_commit_each_row_under_its_own_batch(tmp_path: Path) -> None:
    store = LedgerStore(str(tmp_path))
    version = store.append_batches(
        "2026-11-30",
        faults={"faultsense-sim-64-h07": [gpu_row(1)], "faultsense-sim-64-h08": [gpu_row(2), gpu_row(3)]},
        probe_runs={"faultsense-sim-64-h08": probe_rows(2)},
    )
    assert version == 1  # created (version 0), then one commit
    faults = store.read_table(FAULT_LEDGER).to_pandas().sort_values("gpu")
    assert list(zip(faults["batch"], faults["gpu"], strict=True)) == [
        ("faultsense-sim-64-h07", 1), ("faultsense-sim-64-h08", 2), ("faultsense-sim-64-h08", 3),
    ]  # fmt: skip
    assert store.read_table(PROBE_RUNS).column("batch").to_pylist() == ["faultsense-sim-64-h08"] * 2
