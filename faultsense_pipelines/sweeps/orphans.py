"""Runs that a killed ``faultsense sweep`` left looking live: found by the process that ran
them (:data:`PID_TAG`, :data:`HOST_TAG`) being gone, and marked failed."""

from __future__ import annotations

import os
import socket

from .._utils import pid_alive

__all__ = ["HOST_TAG", "PID_TAG", "cli_tags", "fail_orphaned_fleet_runs", "fail_orphaned_runs"]


#: Tags of every run ``faultsense sweep`` executes: the process and host that run it.
PID_TAG, HOST_TAG = "faultsense/cli_pid", "faultsense/cli_host"


def cli_tags() -> dict[str, str]:
    """The :data:`PID_TAG` and :data:`HOST_TAG` of a run this process executes."""
    return {PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()}


def fail_orphaned_runs(instance, replica: str) -> int:
    """Mark failed the sweep runs of ``replica`` that a killed ``faultsense sweep`` left in
    ``NOT_STARTED``, ``STARTING`` or ``STARTED``; return how many.

    A sweep killed with ``SIGKILL`` (or by the OOM killer) never records its run's end, so
    the run stays ``STARTED`` for good -- or ``NOT_STARTED``, when the kill came between the
    run's creation and its start -- and the UI lists it as live while the run queue, which
    admits one run per replica, would hold that replica's scheduled and backfill runs behind
    it. A run counts as orphaned when this host ran it from a process (:data:`PID_TAG`) that
    no longer exists; it is failed with that reason (a ``RUN_FAILURE`` event). Call it holding
    the replica's sweep lock (:func:`~faultsense_pipelines.ledger.lock.replica_lock`), so no
    live sweep of the replica is racing it.
    """
    return _fail_dead_cli_runs(instance, {"dagster/partition/replica": replica}, lambda run: True)


def fail_orphaned_fleet_runs(instance) -> int:
    """Mark failed the analytics and fleet-view runs (runs without a replica) that a killed
    ``faultsense sweep`` of this host left in ``NOT_STARTED``, ``STARTING`` or ``STARTED``;
    return how many. Their process being gone (:data:`PID_TAG`) is enough: no lock guards them.
    """
    return _fail_dead_cli_runs(instance, {}, lambda run: "dagster/partition/replica" not in run.tags)


def _fail_dead_cli_runs(instance, tags: dict[str, str], which) -> int:
    """Fail each live-looking run carrying ``tags`` (and this host's :data:`HOST_TAG`) that
    ``which(run)`` accepts and whose ``faultsense sweep`` process (:data:`PID_TAG`) is gone."""
    import dagster as dg

    runs = instance.get_runs(
        filters=dg.RunsFilter(
            statuses=[dg.DagsterRunStatus.NOT_STARTED, dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED],
            tags={**tags, HOST_TAG: socket.gethostname()},
        )
    )
    failed = 0
    for run in runs:
        pid = run.tags.get(PID_TAG, "")
        if which(run) and pid.isdigit() and int(pid) != os.getpid() and not pid_alive(int(pid)):
            instance.report_run_failed(run, f"its faultsense sweep process (pid {pid}) is gone: killed before the run ended")
            failed += 1
    return failed
