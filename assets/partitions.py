"""Partitions of the sweep: one per (hour, replica); covers: one per replica shape.

The replica dimension is *dynamic*: the ``fleet_replica_partitions`` sensor adds and removes
replica keys as the fleet file changes, so adding a replica needs no code reload and its
partitions appear in the UI within a minute. The hour dimension includes the current hour
(``end_offset=1``): a sweep labelled ``08:00`` is the one measured during that hour. The
analytics are partitioned by UTC day (:data:`DAILY`, the ledger's ``date``), today included.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

import dagster as dg

from faultsense_pipelines.fleet.hours import SWEEPS_START, check_hour_key, current_hour_key

__all__ = [
    "DAILY",
    "HOURLY",
    "REPLICAS",
    "REPLICAS_NAME",
    "SWEEPS_START",
    "SWEEP_PARTITIONS",
    "SweepKey",
    "check_hour_key",
    "cover_partitions",
    "current_hour_key",
    "first_sweep_hour",
    "sweep_key",
    "with_start",
]

HOURLY = dg.HourlyPartitionsDefinition(start_date=SWEEPS_START, end_offset=1, timezone="UTC")
#: One partition per UTC day of sweeps (the ledger's ``date``): the analytics and the fleet view.
DAILY = dg.DailyPartitionsDefinition(start_date=SWEEPS_START[:10], end_offset=1, timezone="UTC")
REPLICAS_NAME = "replica"
REPLICAS = dg.DynamicPartitionsDefinition(name=REPLICAS_NAME)
SWEEP_PARTITIONS = dg.MultiPartitionsDefinition({"hour": HOURLY, "replica": REPLICAS})


@dataclass(frozen=True)
class SweepKey:
    """One sweep partition: ``hour`` (``"2026-11-30-08:00"``) and ``replica``."""

    hour: str
    replica: str

    @property
    def start(self) -> datetime:
        """Start of the hour, UTC."""
        return datetime.strptime(self.hour, "%Y-%m-%d-%H:%M").replace(tzinfo=UTC)

    @property
    def day(self) -> str:
        """The ledger's ``date=`` partition, ``YYYY-MM-DD``."""
        return self.start.date().isoformat()

    def batch(self, suffix: str = "") -> str:
        """Ledger file name of this sweep, e.g. ``sim-64-h08`` or ``sim-64-h08-phase1``."""
        return f"{self.replica}-h{self.start.hour:02d}{'-' + suffix if suffix else ''}"

    def multi_key(self) -> dg.MultiPartitionKey:
        """As a Dagster partition key."""
        return dg.MultiPartitionKey({"hour": self.hour, "replica": self.replica})


def sweep_key(context: dg.AssetExecutionContext | dg.AssetCheckExecutionContext) -> SweepKey:
    """The sweep partition a step runs for."""
    key = context.partition_key
    if not isinstance(key, dg.MultiPartitionKey):
        key = SWEEP_PARTITIONS.get_partition_key_from_str(key)
    by_dim = key.keys_by_dimension
    return SweepKey(by_dim["hour"], by_dim["replica"])


def first_sweep_hour(since: str | None, first_swept: str | None, earliest: str | None = None) -> str:
    """Where the sweep partitions (and the analytics' days) start: the fleet file's ``since``
    when given, else the earliest hour the ledger holds a sweep of (``first_swept``,
    ``YYYY-MM-DD-HH:00``, :func:`~.fleet_view.first_swept_hour`), else :data:`SWEEPS_START` (a
    ledger not swept yet); never after ``earliest`` (an hour a sweep is about to run for, e.g.
    ``faultsense sweep --hour``). The daily partitions start at that hour's day.

    >>> first_sweep_hour(None, "2026-12-05-06:00")
    '2026-12-05-06:00'
    >>> first_sweep_hour("2026-12-05-06:00", "2026-12-04-09:00", earliest="2026-12-05-03:00")
    '2026-12-05-03:00'
    """
    start = max(since or first_swept or SWEEPS_START, SWEEPS_START)
    return min(start, earliest) if earliest else start


def with_start(asset: dg.AssetsDefinition, start: str) -> dg.AssetsDefinition:
    """``asset`` with its time partitions starting at the hour ``start`` (``YYYY-MM-DD-HH:00``):
    the sweep assets' hour dimension at that hour, a daily asset's days at its day; an
    unpartitioned or other asset unchanged. (The module's :data:`HOURLY` and :data:`DAILY`
    start at :data:`SWEEPS_START`; :func:`~faultsense_pipelines.definitions.build_definitions`
    narrows them to where the fleet's sweeps start.)"""
    if asset.partitions_def == SWEEP_PARTITIONS:
        hourly = dg.HourlyPartitionsDefinition(start_date=start, end_offset=1, timezone="UTC")
        new: dg.PartitionsDefinition = dg.MultiPartitionsDefinition({"hour": hourly, "replica": REPLICAS})
    elif asset.partitions_def == DAILY:
        new = dg.DailyPartitionsDefinition(start_date=start[:10], end_offset=1, timezone="UTC")
    else:
        return asset
    return asset.map_asset_specs(lambda spec: spec.replace_attributes(partitions_def=new))


def cover_partitions(shapes: list[str]) -> dg.StaticPartitionsDefinition:
    """One ``probe_cover`` partition per replica shape in the fleet (``"n64-k8"``)."""
    return dg.StaticPartitionsDefinition(shapes)
