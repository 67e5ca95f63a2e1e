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
    "sweep_key",
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


def cover_partitions(shapes: list[str]) -> dg.StaticPartitionsDefinition:
    """One ``probe_cover`` partition per replica shape in the fleet (``"n64-k8"``)."""
    return dg.StaticPartitionsDefinition(shapes)
