"""Schedules, the fleet sensor, per-replica concurrency, the workspace, and `faultsense ledger show`."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest
from typer.testing import CliRunner

from faultsense_pipelines.assets.automation import NIGHTLY_REPEATS
from faultsense_pipelines.cli import app
from faultsense_pipelines.fleet import DEFAULT_FLEET_PATH
from faultsense_pipelines.sweeps.home import ensure_home, open_instance
from tests.pipeline_helpers import HOUR, add_replicas, new_defs, sweep, write_fleet

pytestmark = pytest.mark.integration  # Dagster schedules, sensors and runs; `dagster definitions validate` in a subprocess

REPO = Path(__file__).resolve().parents[2]


def test_the_hourly_schedule_requests_one_run_per_replica_for_the_current_hour(tmp_path: Path) -> None:
    defs, _ = new_defs(tmp_path)
    schedule = defs.resolve_schedule_def("hourly_sweep")
    assert schedule.cron_schedule == "5 * * * *"
    with dg.instance_for_test() as instance:  # a persistent (temporary) instance, as the daemon has
        add_replicas(instance, defs)
        context = dg.build_schedule_context(
            instance=instance,
            scheduled_execution_time=datetime(2026, 11, 30, 8, 5, tzinfo=UTC),
            repository_def=defs.get_repository_def(),
        )
        data = schedule.evaluate_tick(context)
    requests = sorted(data.run_requests, key=lambda r: r.partition_key)
    assert [str(r.partition_key) for r in requests] == [f"{HOUR}|sim-faulty", f"{HOUR}|sim-healthy"]
    assert [r.tags["dagster/partition/replica"] for r in requests] == ["sim-faulty", "sim-healthy"]


def test_the_nightly_schedule_sweeps_every_replica_with_more_repeats(tmp_path: Path) -> None:
    defs, _ = new_defs(tmp_path)
    schedule = defs.resolve_schedule_def("nightly_deep_sweep")
    assert schedule.cron_schedule == "30 2 * * *"
    with dg.instance_for_test() as instance:
        add_replicas(instance, defs)
        context = dg.build_schedule_context(
            instance=instance,
            scheduled_execution_time=datetime(2026, 11, 30, 2, 30, tzinfo=UTC),
            repository_def=defs.get_repository_def(),
        )
        requests = schedule.evaluate_tick(context).run_requests
        assert sorted(r.partition_key.keys_by_dimension["replica"] for r in requests) == ["sim-faulty", "sim-healthy"]
        assert {r.partition_key.keys_by_dimension["hour"] for r in requests} == {"2026-11-30-02:00"}
        config = requests[0].run_config["ops"]["phase1_probe_run"]["config"]
        assert config == {"repeats": NIGHTLY_REPEATS}
        result = sweep(defs, instance, "sim-healthy", "2026-11-30-02:00", **config)
        assert result.success
        assert result.output_for_node("phase1_probe_run").records[0].latencies_ms.__len__() == NIGHTLY_REPEATS


def test_the_sensor_adds_and_removes_replica_partitions_as_the_fleet_file_changes(tmp_path: Path) -> None:
    defs, _ = new_defs(tmp_path)
    sensor = defs.resolve_sensor_def("fleet_replica_partitions")
    fleet_resource = defs.resources["fleet"]
    with dg.DagsterInstance.ephemeral() as instance:
        instance.add_dynamic_partitions("replica", ["retired"])
        result = sensor(dg.build_sensor_context(instance=instance, resources={"fleet": fleet_resource}))
        requests = result.dynamic_partitions_requests
        assert [(type(r).__name__, list(r.partition_keys)) for r in requests] == [
            ("AddDynamicPartitionsRequest", ["sim-faulty", "sim-healthy"]),
            ("DeletePartitionsRequest", ["retired"]),
        ] or [list(r.partition_keys) for r in requests] == [["sim-faulty", "sim-healthy"], ["retired"]]
        for r in requests:
            if r.__class__.__name__.startswith("Add"):
                instance.add_dynamic_partitions("replica", list(r.partition_keys))
            else:
                for key in r.partition_keys:
                    instance.delete_dynamic_partition("replica", key)
        assert sorted(instance.get_dynamic_partitions("replica")) == ["sim-faulty", "sim-healthy"]
        again = sensor(dg.build_sensor_context(instance=instance, resources={"fleet": fleet_resource}))
        assert isinstance(again, dg.SkipReason) and "match the fleet (2 replicas)" in again.skip_message
        (tmp_path / "fleet.yaml").write_text("ledger: x\nreplicas: []\n")
        broken = sensor(dg.build_sensor_context(instance=instance, resources={"fleet": fleet_resource}))
        assert isinstance(broken, dg.SkipReason) and "fleet file is invalid" in broken.skip_message


def test_the_instance_faultsense_creates_allows_one_run_per_replica_at_a_time(tmp_path: Path) -> None:
    # the instance folder that `faultsense sweep` and `faultsense ui` create (the repository
    # root holds no dagster.yaml of its own)
    with open_instance(ensure_home(tmp_path / "home")) as instance:
        limits = instance.get_concurrency_config().run_queue_config.tag_concurrency_limits
    assert {"key": "dagster/partition/replica", "value": {"applyLimitPerUniqueValue": True}, "limit": 1} in limits


@pytest.mark.parametrize("since", [None, "2026-12-05-06:00"])
def test_dagster_definitions_validate_passes_on_the_workspace(tmp_path: Path, since: str | None) -> None:
    # the sweep partitions start where the fleet's sweeps start (here `since:`), and so must
    # the partitioned Phase 1 check; a fresh ledger, not the developer's, so the result is
    # this test's own
    fleet = (DEFAULT_FLEET_PATH.read_text() + (f"since: '{since}'\n" if since else "")).replace(
        "ledger: .faultsense/ledger", f"ledger: {tmp_path / 'ledger'}"
    )
    (tmp_path / "fleet.yaml").write_text(fleet)
    env = {**os.environ, "FAULTSENSE_FLEET": str(tmp_path / "fleet.yaml"), "DAGSTER_HOME": str(tmp_path / "home")}
    env.pop("FAULTSENSE_LEDGER", None)
    (tmp_path / "home").mkdir()
    dagster = Path(sys.executable).parent / "dagster"
    proc = subprocess.run(
        [str(dagster), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "All code locations passed validation" in proc.stdout + proc.stderr


def test_ledger_show_prints_the_recent_faults_of_one_replica(tmp_path: Path) -> None:
    fleet, ledger = write_fleet(tmp_path)
    swept = CliRunner().invoke(app, ["sweep", "--fleet", str(fleet), "--hour", HOUR])
    assert swept.exit_code == 0, swept.stdout + swept.stderr
    assert "sim-faulty" in swept.stdout and "gpu:5" in swept.stdout and "healthy" in swept.stdout
    shown = CliRunner().invoke(
        app, ["ledger", "show", "--ledger", str(ledger), "--since", "2026-11-30", "--replica", "sim-faulty"]
    )
    assert shown.exit_code == 0, shown.stderr
    assert "gpu:5" in shown.stdout and "link:1-9" in shown.stdout and "sim-healthy" not in shown.stdout
    bad = CliRunner().invoke(app, ["ledger", "show", "--ledger", str(ledger), "--since", "yesterday"])
    assert bad.exit_code == 2 and "--since must be a date" in bad.stderr


def test_a_sweep_makes_the_automation_sensor_refresh_its_days_analytics_and_the_fleet_view(tmp_path: Path) -> None:
    defs, _ = new_defs(tmp_path)
    sensor = defs.resolve_sensor_def("faultsense_automation")
    assert sensor.default_status == dg.DefaultSensorStatus.RUNNING  # on from the start, unlike a schedule
    with dg.instance_for_test() as instance:
        add_replicas(instance, defs)
        first = dg.evaluate_automation_conditions(defs=defs, instance=instance)
        assert first.total_requested == 0  # nothing swept yet: nothing to refresh
        assert sweep(defs, instance, "sim-faulty", "2026-11-29-05:00").success
        after = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=first.cursor)
        for name in ("gpu_fault_counts", "replica_daily_health", "repeat_offenders", "shared_component_counts"):
            assert after.get_requested_partitions(dg.AssetKey(name)) == {"2026-11-29"}, name
        assert after.get_num_requested(dg.AssetKey("fleet_health")) == 1  # the fleet view, too
        # handled: the next tick requests nothing until another sweep updates fault_ledger
        again = dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=after.cursor)
        assert again.get_requested_partitions(dg.AssetKey("replica_daily_health")) == set()


def test_the_daily_maintenance_job_compacts_finished_days_with_the_fleets_settings(tmp_path: Path, instance) -> None:
    defs, ledger = new_defs(tmp_path)
    schedule = defs.resolve_schedule_def("daily_ledger_maintenance")
    assert schedule.cron_schedule == "30 0 * * *" and schedule.default_status == dg.DefaultScheduleStatus.RUNNING
    add_replicas(instance, defs)
    # two sweeps of a healthy replica: each writes one probe_runs file and one sweeps file that day
    for hour in ("2026-11-29-05:00", "2026-11-29-06:00"):
        assert sweep(defs, instance, "sim-healthy", hour).success
    from faultsense_pipelines.ledger import LedgerStore

    store = LedgerStore(str(ledger))
    assert (len(store.files("probe_runs")), len(store.files("sweeps")), len(store.files("fault_ledger"))) == (2, 2, 0)
    result = defs.resolve_job_def("ledger_maintenance").execute_in_process(instance=instance)
    done = result.output_for_node("maintain_ledger")
    assert (done["partitions_compacted"], done["files_compacted"], done["rows_deleted"]) == (1, 4, 0)
    assert len(list((ledger / "delta" / "dataset=probe_runs" / "date=2026-11-29").glob("*.parquet"))) >= 1
    assert len(LedgerStore(str(ledger)).files("probe_runs")) == 1
    assert len(LedgerStore(str(ledger)).files("sweeps")) == 1


def test_the_sweep_schedules_are_off_unless_the_fleet_file_turns_them_on(tmp_path: Path) -> None:
    from tests.pipeline_helpers import SMALL_FLEET

    for name in ("off", "on", "half"):
        (tmp_path / name).mkdir()
    off, _ = new_defs(tmp_path / "off")
    on, _ = new_defs(tmp_path / "on", "schedules: {{hourly: true, nightly: true}}\n" + SMALL_FLEET)
    half, _ = new_defs(tmp_path / "half", "schedules: {{nightly: true}}\n" + SMALL_FLEET)
    running, stopped = dg.DefaultScheduleStatus.RUNNING, dg.DefaultScheduleStatus.STOPPED
    for defs, hourly, nightly in ((off, stopped, stopped), (on, running, running), (half, stopped, running)):
        assert defs.resolve_schedule_def("hourly_sweep").default_status == hourly
        assert defs.resolve_schedule_def("nightly_deep_sweep").default_status == nightly
    assert defs.resolve_schedule_def("daily_ledger_maintenance").default_status == running  # on from the start, as before
