"""Every use of Dagster's private API (``dagster._...``), in one place.

Each name below is one that Dagster's public API (``import dagster as dg``) does not export in
the pinned release, with what it is for. ``tests/test_dagster_internals.py`` imports each one
and fails when any other module of the project reaches into ``dagster._``: a Dagster upgrade
that moves one breaks that test, named, instead of a sweep at 3 a.m.

Importing this module imports Dagster: import it inside the functions that need it where the
caller must stay light (the CLI's error paths).
"""

from __future__ import annotations

from dagster._core.definitions.partitions.partitioned_schedule import UnresolvedPartitionedAssetScheduleDefinition
from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition
from dagster._core.execution.plan.objects import ErrorSource
from dagster._core.instance.ref import InstanceRef

__all__ = [
    "NOOP_COMPUTE_LOGS",
    "ErrorSource",
    "InstanceRef",
    "UnresolvedAssetJobDefinition",
    "UnresolvedPartitionedAssetScheduleDefinition",
]

#: The instance setting that turns off compute-log capture (``faultsense sweep``'s runs print to
#: the terminal as they are; the capture's helper processes would print a traceback on Ctrl-C):
#: Dagster names no public class for it.
NOOP_COMPUTE_LOGS = {"module": "dagster._core.storage.noop_compute_log_manager", "class": "NoOpComputeLogManager"}

# What each is for:
# - UnresolvedAssetJobDefinition, UnresolvedPartitionedAssetScheduleDefinition: the types
#   ``dg.define_asset_job`` and ``dg.build_schedule_from_partitioned_job`` return (annotations of
#   assets/automation.py);
# - ErrorSource: tells a run stopped by Ctrl-C from a failed one (sweeps/signals.py);
# - InstanceRef: opens the persistent instance with the CLI's overrides (sweeps/home.py).
