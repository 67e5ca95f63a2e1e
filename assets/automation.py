"""When sweeps run: the hourly and nightly schedules, and the sensor that keeps replica
partitions in step with the fleet file.

The replica partition dimension is dynamic (see :mod:`.partitions`): the sensor adds a
partition for every replica in the fleet file and removes those no longer there, so a new
replica is swept from the next tick without reloading code. Cover partitions are static
(one per replica shape, fixed when the code location loads); if the fleet file gains a new
shape, the sensor says a reload is needed, and sweeps still run (they plan covers
themselves).
"""

import dagster as dg

from faultsense_pipelines.fleet import FleetError
from faultsense_pipelines.resources.dagster_internals import (
    UnresolvedAssetJobDefinition,
    UnresolvedPartitionedAssetScheduleDefinition,
)
from faultsense_pipelines.resources.fleet import FleetResource

from .partitions import REPLICAS, REPLICAS_NAME, current_hour_key

__all__ = [
    "AFTER_LEDGER_UPDATES",
    "NIGHTLY_REPEATS",
    "build_automation_sensor",
    "build_hourly_schedule",
    "build_nightly_schedule",
    "build_replica_sensor",
]

#: Measurements per probe in the nightly sweep (the hourly one uses the fleet's or 3).
NIGHTLY_REPEATS = 10

#: When an asset downstream of ``fault_ledger`` (the analytics, the fleet view) is refreshed:
#: once a sweep of its partition has updated ``fault_ledger`` since it last ran, and no sweep
#: of that partition (nor the asset itself) is still running -- so the 200 sweeps of an hour
#: refresh each day's analytics about once, after the last of them. Unlike
#: ``AutomationCondition.eager()`` it does not wait for every upstream hour of the day (most
#: are never swept yet) and does not start on days no sweep touched.
AFTER_LEDGER_UPDATES = (
    dg.AutomationCondition.any_deps_updated().since_last_handled()
    & ~dg.AutomationCondition.any_deps_in_progress()
    & ~dg.AutomationCondition.in_progress()
).with_label("after fault_ledger updates")


def _status(running: bool) -> dg.DefaultScheduleStatus:
    return dg.DefaultScheduleStatus.RUNNING if running else dg.DefaultScheduleStatus.STOPPED


def build_hourly_schedule(
    job: "dg.JobDefinition | UnresolvedAssetJobDefinition", running: bool = False
) -> "dg.ScheduleDefinition | UnresolvedPartitionedAssetScheduleDefinition":
    """Phase 1 sweep (plus drill-down when needed) of every replica, at minute 5 of each hour;
    running from the start when ``running`` (the fleet file's ``schedules: {hourly: true}``)."""
    return dg.build_schedule_from_partitioned_job(
        job,
        name="hourly_sweep",
        minute_of_hour=5,
        default_status=_status(running),
        description="Sweep every replica of the fleet each hour (one run per replica).",
    )


def build_nightly_schedule(
    job: "dg.JobDefinition | UnresolvedAssetJobDefinition", running: bool = False
) -> dg.ScheduleDefinition:
    """A deeper sweep of every replica at 02:30 UTC with :data:`NIGHTLY_REPEATS` repeats per probe;
    running from the start when ``running`` (the fleet file's ``schedules: {nightly: true}``).

    It re-sweeps the 02:00 hour partition, replacing the hourly sweep's rows for that hour
    with the more precise ones.
    """

    @dg.schedule(
        name="nightly_deep_sweep",
        cron_schedule="30 2 * * *",
        execution_timezone="UTC",
        job=job,
        default_status=_status(running),
        description=f"Nightly sweep of every replica with {NIGHTLY_REPEATS} repeats per probe.",
    )
    def nightly_deep_sweep(context: dg.ScheduleEvaluationContext):
        hour = current_hour_key(context.scheduled_execution_time)
        replicas = context.instance.get_dynamic_partitions(REPLICAS_NAME)
        if not replicas:
            return dg.SkipReason("no replica partitions yet (the fleet_replica_partitions sensor adds them)")
        config = {"repeats": NIGHTLY_REPEATS}
        return [
            dg.RunRequest(
                run_key=f"nightly|{hour}|{name}",
                partition_key=dg.MultiPartitionKey({"hour": hour, "replica": name}),
                run_config={"ops": {"phase1_probe_run": {"config": config}, "phase2_drilldown": {"config": config}}},
                tags={"faultsense/sweep": "nightly"},
            )
            for name in replicas
        ]

    return nightly_deep_sweep


def build_automation_sensor() -> dg.AutomationConditionSensorDefinition:
    """The sensor that evaluates :data:`AFTER_LEDGER_UPDATES` every 30 s; running from the
    start (a schedule or sensor that starts off leaves the analytics never materialized)."""
    return dg.AutomationConditionSensorDefinition(
        "faultsense_automation",
        target=dg.AssetSelection.groups("analytics", "fleet"),
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=30,
        description="Refreshes the analytics and the fleet view after fault_ledger updates.",
    )


def build_replica_sensor(cover_shapes: list[str]) -> dg.SensorDefinition:
    """The sensor that adds and removes replica partitions as the fleet file changes."""

    @dg.sensor(
        name="fleet_replica_partitions",
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Keeps the sweep's replica partitions equal to the replicas of the fleet file.",
    )
    def fleet_replica_partitions(context: dg.SensorEvaluationContext, fleet: FleetResource):
        try:
            current_fleet = fleet.load()
        except FleetError as exc:
            return dg.SkipReason(f"fleet file is invalid, partitions unchanged: {exc}")
        wanted = current_fleet.names
        have = context.instance.get_dynamic_partitions(REPLICAS_NAME)
        add = [n for n in wanted if n not in have]
        remove = [n for n in have if n not in wanted]
        new_shapes = [s for s in current_fleet.shapes if s not in cover_shapes]
        if new_shapes:
            context.log.warning(
                f"fleet has new replica shapes {new_shapes}: reload the code location to add probe_cover partitions"
            )
        if not add and not remove:
            return dg.SkipReason(f"replica partitions match the fleet ({len(wanted)} replicas)")
        requests: list[dg.AddDynamicPartitionsRequest | dg.DeleteDynamicPartitionsRequest] = []
        if add:
            requests.append(REPLICAS.build_add_request(add))
        if remove:
            requests.append(REPLICAS.build_delete_request(remove))
        context.log.info(f"replica partitions: added {add}, removed {remove}")
        return dg.SensorResult(dynamic_partitions_requests=requests)

    return fleet_replica_partitions
