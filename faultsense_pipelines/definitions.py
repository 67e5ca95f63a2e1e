"""The one place where FaultSense's Dagster assets, checks, jobs, schedules, sensor and
resources are wired together (loaded by ``workspace.yaml`` and ``faultsense sweep``).

The fleet file is ``$FAULTSENSE_FLEET`` or the packaged ``faultsense_pipelines/data/fleet.yaml``;
the ledger is ``$FAULTSENSE_LEDGER`` or the fleet file's ``ledger`` (optional when the
variable is set). A malformed fleet file, or no ledger from either, stops the code location
from loading with one error naming the field, so nothing runs.

``defs`` is a ``@dg.definitions`` function, not a ``Definitions`` object: Dagster's loaders
(``workspace.yaml``, ``dagster definitions validate -m faultsense_pipelines.definitions``)
call it when they load the code location, and importing this module reads no fleet file. So
``faultsense sweep --fleet ok.yaml``, which imports :func:`build_definitions` from here, is
not stopped by a broken ``$FAULTSENSE_FLEET`` that it never uses.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg

from faultsense_pipelines.assets.actions import fault_actions
from faultsense_pipelines.assets.analytics import (
    gpu_fault_counts,
    repeat_offenders,
    replica_daily_health,
    shared_component_counts,
)
from faultsense_pipelines.assets.automation import (
    build_automation_sensor,
    build_hourly_schedule,
    build_nightly_schedule,
    build_replica_sensor,
)
from faultsense_pipelines.assets.cover import build_cover_asset
from faultsense_pipelines.assets.fleet_view import first_swept_hour, fleet_health
from faultsense_pipelines.assets.flowpulse import flowpulse_faults
from faultsense_pipelines.assets.ledger import (
    build_probe_latencies_check,
    fault_ledger,
    fault_ledger_schema,
    fault_ledger_unique_rows,
)
from faultsense_pipelines.assets.maintenance import build_maintenance_schedule, ledger_maintenance
from faultsense_pipelines.assets.minder import minder_faults
from faultsense_pipelines.assets.partitions import first_sweep_hour, with_start
from faultsense_pipelines.assets.sweep import phase1_probe_run, phase2_drilldown
from faultsense_pipelines.fleet import fleet_path as resolve_fleet_path
from faultsense_pipelines.fleet import load_fleet
from faultsense_pipelines.ledger.location import choose_ledger_uri
from faultsense_pipelines.old_paths import alias_old_paths
from faultsense_pipelines.resources.executors import ProbeExecutorResource
from faultsense_pipelines.resources.fleet import FleetResource
from faultsense_pipelines.resources.ledger import LedgerResource

__all__ = ["ANALYTICS_JOB", "COVER_JOB", "FLEET_VIEW_JOB", "SWEEP_JOB", "build_definitions", "defs"]

SWEEP_JOB = "faultsense_sweep"
COVER_JOB = "faultsense_covers"
ANALYTICS_JOB = "faultsense_analytics"
FLEET_VIEW_JOB = "faultsense_fleet_view"

# Outputs pickled by Dagster's IO manager before the stage packages name their classes by the
# old flat module paths (faultsense_pipelines.localization, ...): alias those paths before
# Dagster loads any of them (faultsense_pipelines/old_paths.py).
alias_old_paths()


def resolve_ledger_uri(uri: str) -> str:
    """A local ledger path made absolute (relative to the current directory); URIs unchanged."""
    return uri if "://" in uri else str(Path(uri).expanduser().resolve())


def build_definitions(
    fleet_path: str | Path | None = None, ledger_uri: str | None = None, earliest_hour: str | None = None
) -> dg.Definitions:
    """All of FaultSense's Dagster definitions for one fleet file.

    The sweep partitions (and the analytics' days) start where the fleet's sweeps do
    (:func:`~faultsense_pipelines.assets.partitions.first_sweep_hour`: the fleet file's
    ``since``, else the first hour swept in the ledger: one small read), not before
    ``earliest_hour``.

    Args:
        fleet_path: the fleet YAML; default ``$FAULTSENSE_FLEET``, else ``faultsense_pipelines/data/fleet.yaml``.
        ledger_uri: overrides the fleet's ledger (``$FAULTSENSE_LEDGER`` when not given).
        earliest_hour: an hour (``YYYY-MM-DD-HH:00``) the partitions must hold, e.g. the hour
            ``faultsense sweep --hour`` is about to sweep.

    Raises:
        FleetError: the fleet file is malformed (the message names the field), or no ledger
            is given by ``ledger_uri``, ``$FAULTSENSE_LEDGER`` or the file's ``ledger:``.
    """
    path = resolve_fleet_path(fleet_path).resolve()
    fleet = load_fleet(path)
    ledger = resolve_ledger_uri(choose_ledger_uri(ledger_uri, fleet.ledger, path))

    probe_cover = build_cover_asset(fleet.shapes)
    try:
        swept = first_swept_hour(LedgerResource(uri=ledger).store())
    except Exception:  # an unreachable or damaged ledger must not stop the code location: sweeps name it
        swept = None
    start = first_sweep_hour(fleet.since, swept, earliest_hour)
    phase1, phase2, ledger_asset, actions_asset = (
        with_start(a, start) for a in (phase1_probe_run, phase2_drilldown, fault_ledger, fault_actions)
    )
    analytics = [
        with_start(a, start) for a in (gpu_fault_counts, replica_daily_health, repeat_offenders, shared_component_counts)
    ]
    sweep_job = dg.define_asset_job(
        SWEEP_JOB,
        selection=dg.AssetSelection.assets(phase1, phase2, ledger_asset, actions_asset),
        description="Sweep one replica for one hour: Phase 1, drill-down if needed, fault ledger rows, guarded actions.",
    )
    cover_job = dg.define_asset_job(
        COVER_JOB, selection=dg.AssetSelection.assets(probe_cover), description="Plan the Phase 1 cover of each replica shape."
    )
    analytics_job = dg.define_asset_job(
        ANALYTICS_JOB,
        selection=dg.AssetSelection.groups("analytics"),
        description="Recompute one day's analytics from that day's (and its window's) ledger partitions.",
    )
    fleet_view_job = dg.define_asset_job(
        FLEET_VIEW_JOB,
        selection=dg.AssetSelection.assets(fleet_health),
        description="Redraw the fleet view: every replica's current health and the last hours' heatmap.",
    )
    return dg.Definitions(
        assets=[
            probe_cover,
            phase1,
            phase2,
            ledger_asset,
            actions_asset,
            *analytics,
            fleet_health,
            flowpulse_faults,
            minder_faults,
        ],
        asset_checks=[build_probe_latencies_check(phase1), fault_ledger_schema, fault_ledger_unique_rows],
        jobs=[sweep_job, cover_job, analytics_job, fleet_view_job, ledger_maintenance],
        schedules=[
            build_hourly_schedule(sweep_job, fleet.schedules.hourly),
            build_nightly_schedule(sweep_job, fleet.schedules.nightly),
            build_maintenance_schedule(),
        ],
        sensors=[build_replica_sensor(fleet.shapes), build_automation_sensor()],
        resources={
            "fleet": FleetResource(path=str(path)),
            "ledger": LedgerResource(uri=ledger),
            "probe_executors": ProbeExecutorResource(),
        },
        # Phase 1 and Phase 2 of a sweep share one executor (one pool of local workers).
        executor=dg.in_process_executor,
    )


@dg.definitions
def defs() -> dg.Definitions:
    """The code location of ``workspace.yaml``: :func:`build_definitions` of the default fleet
    (``$FAULTSENSE_FLEET``, else the packaged one), built when Dagster loads it, not at import."""
    return build_definitions()
