"""The Dagster sweep on simulated replicas, in-process on a real (ephemeral) instance."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd
import pyarrow as pa
import pyarrow.compute
import pytest

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.definitions import ANALYTICS_JOB, COVER_JOB, SWEEP_JOB
from faultsense_pipelines.ledger import LedgerStore
from tests.pipeline_helpers import HOUR, HOURS, add_replicas, new_defs, skipped_steps, sweep

pytestmark = pytest.mark.integration  # real in-process Dagster runs


def test_probe_cover_materializes_each_fleet_shape_with_its_statistics(tmp_path: Path, instance) -> None:
    defs, _ = new_defs(tmp_path)
    job = defs.resolve_job_def(COVER_JOB)
    assert job.partitions_def.get_partition_keys() == ["n16-k4"]
    result = job.execute_in_process(instance=instance, partition_key="n16-k4")
    cover = result.output_for_node("probe_cover")
    assert cover == plan_cover(16, 4, "best")
    meta = instance.get_latest_materialization_event(dg.AssetKey("probe_cover")).asset_materialization.metadata
    assert meta["probes"].value == len(cover.probes)
    assert meta["lower_bound"].value == 20  # Schönheim: ceil(16/4 * ceil(15/3)) = 20
    assert meta["all_pairs"].value == 120


def test_a_faulty_replica_is_drilled_down_and_its_injected_faults_land_in_the_ledger(tmp_path: Path, instance) -> None:
    defs, ledger = new_defs(tmp_path)
    add_replicas(instance, defs)
    result = sweep(defs, instance, "sim-faulty")
    assert result.success
    assert skipped_steps(result) == set()
    assert len(result.asset_materializations_for_node("phase2_drilldown")) == 1
    faults = LedgerStore(str(ledger)).read_faults()
    confirmed = faults[faults["status"] == "confirmed"]
    assert sorted(confirmed["component"]) == ["gpu:5", "link:1-9"]
    gpu = confirmed.set_index("component").loc["gpu:5"]
    assert gpu["component_kind"] == "gpu" and gpu["gpu"] == 5 and pd.isna(gpu["peer_gpu"])
    assert gpu["slowdown"] == pytest.approx(2.0, rel=0.1)
    link = confirmed.set_index("component").loc["link:1-9"]
    assert (link["gpu"], link["peer_gpu"], link["component_kind"]) == (1, 9, "link")
    assert set(faults["sweep_id"]) == {result.run_id}
    assert (faults["replica"] == "sim-faulty").all() and (faults["detector"] == "faultsense").all()
    assert (faults["date"] == "2026-11-30").all()
    phase1 = result.output_for_node("phase1_probe_run")
    assert (faults["probes_used"] > len(phase1.records)).all()

    runs = LedgerStore(str(ledger)).read_probe_runs()
    assert sorted(runs["phase"].unique()) == [1, 2]
    assert len(runs[runs["phase"] == 1]) == len(plan_cover(16, 4).probes) * 3  # every probe, 3 repeats
    assert runs["error"].isna().all()

    meta = instance.get_latest_materialization_event(dg.AssetKey("phase2_drilldown")).asset_materialization.metadata
    assert "gpu:5" in meta["verdicts"].value and "| confirmed |" in meta["verdicts"].value
    assert meta["latency_plot"].value.startswith("![probe latencies](data:image/png;base64,iVBOR")
    p1 = instance.get_latest_materialization_event(dg.AssetKey("phase1_probe_run")).asset_materialization.metadata
    assert p1["probes_used"].value == len(phase1.records)
    assert p1["ledger"].value == str(ledger)
    checks = {e.check_name: e.passed for e in result.get_asset_check_evaluations()}
    assert checks == {"probe_latencies_valid": True, "fault_ledger_schema": True, "fault_ledger_unique_rows": True}


def test_a_healthy_replica_gets_an_empty_drilldown_and_fault_ledger_commits_an_empty_fault_batch(
    tmp_path: Path, instance
) -> None:
    defs, ledger = new_defs(tmp_path)
    add_replicas(instance, defs)
    store = LedgerStore(str(ledger))
    assert sweep(defs, instance, "sim-faulty").success  # a first commit: the healthy sweep's is one more
    before = store.version()
    result = sweep(defs, instance, "sim-healthy", drilldown_method="adaptive")  # the default sequential one always reads Phase 1
    assert result.success
    assert skipped_steps(result) == set()  # fault_ledger and fault_actions run after every completed sweep
    (phase2,) = result.asset_materializations_for_node("phase2_drilldown")
    assert phase2.metadata["drilldown"].value == "no suspect: no drill-down"
    assert phase2.metadata["probes_phase2"].value == 0
    loc = result.output_for_node("phase2_drilldown")
    assert (loc.phase2_records, loc.verdicts) == ((), ()) and loc.phase1 == result.output_for_node("phase1_probe_run")
    assert store.version() == before + 1  # fault_ledger's one commit
    assert store.read_faults(replica="sim-healthy").empty
    runs = store.read_table("probe_runs", files={"replica": "sim-healthy"}).to_pandas()
    assert set(runs["batch"]) == {"faultsense-sim-healthy-h08"} and set(runs["phase"]) == {1}
    assert len(runs) == len(plan_cover(16, 4).probes) * 3
    (row,) = [r for r in store.read_table("sweeps").to_pylist() if r["replica"] == "sim-healthy"]
    assert (row["status"], row["drilldown"], row["probes_phase2"]) == ("healthy", None, 0)
    ledger_event = instance.get_latest_materialization_event(dg.AssetKey("fault_ledger"))
    assert ledger_event.asset_materialization.partition == dg.MultiPartitionKey({"hour": HOUR, "replica": "sim-healthy"})
    assert ledger_event.asset_materialization.metadata["rows"].value == 0
    assert ledger_event.run_id == result.run_id  # written by the fault_ledger step, not by Phase 1


def test_phase1_alone_measures_and_writes_nothing(tmp_path: Path, instance) -> None:
    """``fault_ledger`` is the ledger's one sweep writer: Phase 1 materialized alone (an asset
    selection of it only) leaves the ledger without a table, whatever the drill-down."""
    defs, ledger = new_defs(tmp_path)
    add_replicas(instance, defs)
    for method in ("adaptive", "sequential"):
        result = defs.resolve_job_def(SWEEP_JOB).execute_in_process(
            instance=instance,
            partition_key=dg.MultiPartitionKey({"hour": HOUR, "replica": "sim-healthy"}),
            run_config={"ops": {"phase1_probe_run": {"config": {"drilldown_method": method}}}},
            asset_selection=[dg.AssetKey("phase1_probe_run")],
        )
        assert result.success and not result.output_for_node("phase1_probe_run").needs_drilldown
        assert LedgerStore(str(ledger)).version() is None
    assert instance.get_latest_materialization_event(dg.AssetKey("fault_ledger")) is None


@pytest.mark.parametrize(("phase1", "phase2", "expected"), [("sequential", "adaptive", None), ("adaptive", None, "sequential")])
def test_only_phase2_s_drilldown_method_decides_the_drilldown(
    tmp_path: Path, instance, phase1: str, phase2: str | None, expected: str | None
) -> None:
    """Phase 1 measures whatever drill-down follows, so a run whose two ops name different
    drill-downs (here also one left at the default, sequential) runs Phase 2's, committed once."""
    defs, ledger = new_defs(tmp_path)
    add_replicas(instance, defs)
    store = LedgerStore(str(ledger))
    assert sweep(defs, instance, "sim-faulty").success
    before = store.version()
    ops = {"phase1_probe_run": {"config": {"drilldown_method": phase1}}}
    if phase2 is not None:
        ops["phase2_drilldown"] = {"config": {"drilldown_method": phase2}}
    result = defs.resolve_job_def(SWEEP_JOB).execute_in_process(
        instance=instance,
        partition_key=dg.MultiPartitionKey({"hour": HOUR, "replica": "sim-healthy"}),
        run_config={"ops": ops},
    )
    assert result.success
    assert store.version() == before + 1  # one commit
    (row,) = [r for r in store.read_table("sweeps").to_pylist() if r["replica"] == "sim-healthy"]
    assert (row["status"], row["drilldown"]) == ("healthy", expected)


def test_with_the_default_drilldown_a_healthy_replica_writes_no_fault_row_in_one_commit(tmp_path: Path, instance) -> None:
    """The default drill-down reads every Phase 1 sweep, so Phase 1 must not commit the
    partition itself: a kill between two commits would leave a Phase-1-only sweep in place of
    the last completed one (found by a newcomer's SIGKILL)."""
    defs, ledger = new_defs(tmp_path)
    add_replicas(instance, defs)
    assert sweep(defs, instance, "sim-faulty").success
    store = LedgerStore(str(ledger))
    before = store.version()
    result = sweep(defs, instance, "sim-healthy")
    assert result.success and result.output_for_node("phase2_drilldown").verdicts == ()
    assert store.version() == before + 1  # one commit for the whole sweep
    assert store.read_faults(replica="sim-healthy").empty


def test_sweeping_three_hours_writes_three_partitions_and_a_rerun_changes_no_row_count(tmp_path: Path, instance) -> None:
    defs, ledger = new_defs(tmp_path)
    add_replicas(instance, defs)
    for hour in HOURS:  # what a backfill over 05:00-07:00 launches: one run per partition
        assert sweep(defs, instance, "sim-faulty", hour).success
    store = LedgerStore(str(ledger))
    batches = sorted(set(store.read_table("fault_ledger").column("batch").to_pylist()))
    assert batches == [f"faultsense-sim-faulty-h0{h}" for h in (5, 6, 7)]
    faults, runs = store.read_faults(), store.read_probe_runs()
    assert faults.groupby("fault_id").size().max() == 1
    assert len(faults[faults["status"] == "confirmed"]) == 3 * 2
    before = (len(faults), len(runs), len(set(runs["sweep_id"])))

    again = sweep(defs, instance, "sim-faulty", HOURS[1])
    assert again.success
    faults2, runs2 = store.read_faults(), store.read_probe_runs()
    assert (len(faults2), len(runs2), len(set(runs2["sweep_id"]))) == before
    assert set(faults2[faults2["fault_id"].isin(faults["fault_id"])]["fault_id"]) == set(faults["fault_id"])
    assert again.run_id in set(faults2["sweep_id"])
    partitions = instance.get_materialized_partitions(dg.AssetKey("fault_ledger"))
    assert len(partitions) == 3


def test_a_rerun_that_finds_the_replica_healthy_clears_its_old_fault_rows(tmp_path: Path, instance) -> None:
    defs, ledger = new_defs(tmp_path)
    add_replicas(instance, defs)
    assert sweep(defs, instance, "sim-faulty").success
    fleet = (tmp_path / "fleet.yaml").read_text().replace("[{gpu: 5, slowdown: 2.0}, {link: [1, 9], slowdown: 1.8}]", "[]")
    (tmp_path / "fleet.yaml").write_text(fleet)  # the fleet resource re-reads the file each run
    assert sweep(defs, instance, "sim-faulty").success
    store = LedgerStore(str(ledger))
    assert store.read_faults().empty
    assert set(store.read_probe_runs()["phase"]) == {1}


def test_the_checks_judge_what_the_run_wrote_not_other_writers_rows_of_the_day(tmp_path: Path, instance) -> None:
    defs, ledger = new_defs(tmp_path)
    add_replicas(instance, defs)
    assert sweep(defs, instance, "sim-faulty").success
    from deltalake import DeltaTable, write_deltalake

    # other writers, without our code: a copy of the fault rows and an edited probe row, appended to the day
    table = DeltaTable(str(ledger / "delta")).to_pyarrow_table()
    faults = table.filter(pa.compute.equal(table.column("dataset"), "fault_ledger"))
    copied = faults.set_column(faults.schema.get_field_index("batch"), "batch", pa.array(["copied-by-hand"] * len(faults)))
    runs = table.filter(pa.compute.equal(table.column("dataset"), "probe_runs")).slice(0, 1)
    edited = runs.set_column(runs.schema.get_field_index("latency_ms"), "latency_ms", pa.array([-1.0]))
    edited = edited.set_column(edited.schema.get_field_index("batch"), "batch", pa.array(["edited"]))
    write_deltalake(str(ledger / "delta"), pa.concat_tables([copied, edited]), mode="append")

    result = sweep(defs, instance, "sim-faulty")
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert {name: e.passed for name, e in evaluations.items()} == dict.fromkeys(
        ("probe_latencies_valid", "fault_ledger_schema", "fault_ledger_unique_rows"), True
    )
    committed = result.asset_materializations_for_node("fault_ledger")[0].metadata["table_version"].value
    assert isinstance(committed, str)  # text: the Plots tab draws no series of the whole table's version
    unique = evaluations["fault_ledger_unique_rows"].metadata
    assert unique["table_version"].value == int(committed) == LedgerStore(str(ledger)).version()
    # the rows checked are this sweep's own fault rows, read back from the files its commit added
    own = LedgerStore(str(ledger)).read_faults()
    assert unique["rows_checked"].value == int((own["sweep_id"] == result.run_id).sum()) == 2
    phase1 = result.output_for_node("phase1_probe_run")
    assert evaluations["probe_latencies_valid"].metadata["rows_checked"].value == sum(len(r.latencies_ms) for r in phase1.records)


def test_the_latency_check_counts_bad_latencies_and_error_rows_that_carry_one() -> None:
    from faultsense_pipelines.assets.ledger import latency_problems
    from faultsense_pipelines.localize import ProbeRecord

    records = [
        ProbeRecord(1, 0, (0, 1), (1.0, 2.0), None, "pass"),
        ProbeRecord(1, 1, (2, 3), (float("nan"), -1.0, float("inf"), 3.0), None, "fail"),
        ProbeRecord(1, 2, (0, 2), (4.0,), "worker died", "error"),  # an error row with a latency
        ProbeRecord(1, 3, (1, 3), (), "timeout", "error"),
    ]
    assert latency_problems(records) == (6, 3, 1)
    assert latency_problems(records[:1]) == (2, 0, 0)


def test_the_unique_rows_check_catches_duplicates_in_the_runs_own_commit(tmp_path: Path, instance, monkeypatch) -> None:
    import faultsense_pipelines.assets.ledger as ledger_asset

    defs, _ = new_defs(tmp_path)
    add_replicas(instance, defs)
    real_rows = ledger_asset.fault_rows
    monkeypatch.setattr(ledger_asset, "fault_rows", lambda *a, **k: [*real_rows(*a, **k), *real_rows(*a, **k)])
    result = sweep(defs, instance, "sim-faulty")
    checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert {name: e.passed for name, e in checks.items()} == {
        "probe_latencies_valid": True,
        "fault_ledger_schema": True,
        "fault_ledger_unique_rows": False,
    }
    assert checks["fault_ledger_unique_rows"].metadata["duplicate_rows"].value == 4  # gpu:5 and link:1-9, twice each


def test_the_analytics_count_faults_per_gpu_health_per_day_and_repeat_offenders(tmp_path: Path, instance) -> None:
    defs, _ = new_defs(tmp_path)
    add_replicas(instance, defs)
    for hour in reversed(HOURS[:2]):  # 06:00, then 05:00 backfilled: written later, swept earlier
        assert sweep(defs, instance, "sim-faulty", hour).success
    assert sweep(defs, instance, "sim-healthy", HOURS[0]).success
    result = defs.resolve_job_def(ANALYTICS_JOB).execute_in_process(instance=instance, partition_key="2026-11-30")
    counts = result.output_for_node("gpu_fault_counts").set_index(["replica", "gpu"])
    assert counts.loc[("sim-faulty", 5), "gpu_faults"] == 2
    # first and last seen are the sweep hours, not the write times
    assert counts.loc[("sim-faulty", 5), ["first_seen", "last_seen"]].tolist() == ["2026-11-30-05:00", "2026-11-30-06:00"]
    conf = counts.loc[("sim-faulty", 5), "max_confidence"]
    assert 0.5 < conf <= 1 and round(conf, 3) == conf  # stated, rounded to 3 decimals
    assert counts.loc[("sim-faulty", 1), "link_faults"] == 2 and counts.loc[("sim-faulty", 9), "link_faults"] == 2
    assert counts["gpu_faults"].sum() == 2 and counts["link_faults"].sum() == 4
    health = result.output_for_node("replica_daily_health").set_index("replica")
    assert health.loc["sim-faulty", "health"] == "faulty" and health.loc["sim-faulty", "sweeps"] == 2
    assert health.loc["sim-faulty", "components"] == "gpu:5, link:1-9"
    assert health.loc["sim-healthy", "health"] == "healthy" and health.loc["sim-healthy", "faulty_components"] == 0
    offenders = result.output_for_node("repeat_offenders")
    assert sorted(offenders["component"]) == ["gpu:5", "link:1-9"] and (offenders["windows"] == 2).all()
    assert set(offenders["first_seen"]) == {"2026-11-30-05:00"} and set(offenders["last_seen"]) == {"2026-11-30-06:00"}


def test_a_day_of_analytics_counts_its_own_day_and_its_window_never_a_later_or_older_day(tmp_path: Path, instance) -> None:
    # one sweep of sim-faulty (gpu:5 and link:1-9 confirmed) on each of 11-01, 11-29, 11-30 and 12-01
    defs, _ = new_defs(tmp_path)
    add_replicas(instance, defs)
    for hour in ("2026-11-01-03:00", "2026-11-29-03:00", "2026-11-30-03:00", "2026-12-01-03:00"):
        assert sweep(defs, instance, "sim-faulty", hour).success
    job = defs.resolve_job_def(ANALYTICS_JOB)

    def gpu5(day: str) -> tuple[int, int, pd.DataFrame]:
        result = job.execute_in_process(instance=instance, partition_key=day)
        counts = result.output_for_node("gpu_fault_counts").set_index(["replica", "gpu"])
        offenders = result.output_for_node("repeat_offenders").set_index("component")
        windows = int(offenders.loc["gpu:5", "windows"]) if "gpu:5" in offenders.index else 0
        return int(counts.loc[("sim-faulty", 5), "gpu_faults"]), windows, result.output_for_node("replica_daily_health")

    # 11-30: its own day has one sweep; its window 11-01 .. 11-30 holds three, never 12-01's
    faults, windows, health = gpu5("2026-11-30")
    assert (faults, windows) == (3, 3)
    assert list(health["date"]) == ["2026-11-30"] and list(health["sweeps"]) == [1]
    # 11-28: no sweep that day; its window 10-30 .. 11-28 holds only 11-01's, one window is no repeat
    faults, windows, health = gpu5("2026-11-28")
    assert (faults, windows, len(health)) == (1, 0, 0)
    # 12-01: its window 11-02 .. 12-01 has dropped 11-01
    faults, windows, _ = gpu5("2026-12-01")
    assert (faults, windows) == (3, 3)
