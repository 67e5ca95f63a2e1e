"""``ledger_maintenance``: the daily job that compacts and trims the ledger's Delta table.

At 00:30 UTC (schedule ``daily_ledger_maintenance``, running from the start) it applies the
fleet file's ``maintenance:`` settings (:class:`~faultsense_pipelines.fleet.maintenance.MaintenanceOptions`)
through :meth:`~faultsense_pipelines.ledger.LedgerStore.maintain`: days older than
``retain_days`` deleted, every finished day that still holds several files merged (and
clustered by ``z_order``) into few large ones, unreferenced files older than ``vacuum_hours``
deleted, and log entries past the table's log retention removed. Yesterday's 14,400 small
files of a 200-replica fleet become a few, so readers of old days open a few files, not
thousands. Safe while sweeps run: it never touches today's partitions.
"""

import dagster as dg

from faultsense_pipelines.ledger import LedgerError
from faultsense_pipelines.resources.fleet import FleetResource
from faultsense_pipelines.resources.ledger import LedgerResource

__all__ = ["MAINTENANCE_JOB", "build_maintenance_schedule", "ledger_maintenance", "maintain_ledger"]

MAINTENANCE_JOB = "ledger_maintenance"


@dg.op(description="Retention, compaction (Z-ordered) and vacuum of the ledger, as the fleet file's maintenance: says.")
def maintain_ledger(context: dg.OpExecutionContext, fleet: FleetResource, ledger: LedgerResource) -> dict[str, int]:
    options = fleet.load().maintenance
    store = ledger.store()
    if store.version() is None:
        context.log.info(f"no ledger table at {store.table_uri} yet: nothing to maintain")
        return {}
    try:
        done = store.maintain(retain_days=options.retain_days, vacuum_hours=options.vacuum_hours, z_order=options.z_order)
    except LedgerError as exc:
        raise dg.Failure(description=str(exc)) from None
    context.log.info(f"ledger {store.table_uri}: {done}")
    context.add_output_metadata({**done, "ledger": store.display_uri, "retain_days": options.retain_days or "all"})
    return done


@dg.job(name=MAINTENANCE_JOB, description="Compact finished days, apply retention, vacuum (the fleet's maintenance: settings).")
def ledger_maintenance() -> None:
    maintain_ledger()


def build_maintenance_schedule() -> dg.ScheduleDefinition:
    """``daily_ledger_maintenance``: :data:`MAINTENANCE_JOB` at 00:30 UTC, running by default."""
    return dg.ScheduleDefinition(
        name="daily_ledger_maintenance",
        job=ledger_maintenance,
        cron_schedule="30 0 * * *",
        execution_timezone="UTC",
        default_status=dg.DefaultScheduleStatus.RUNNING,
        description="Compact yesterday's ledger files, apply retention, vacuum.",
    )
