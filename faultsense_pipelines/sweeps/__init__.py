"""Sweeping a fleet now, outside any schedule: what ``faultsense sweep`` runs.

* :mod:`.run` -- :func:`run_sweep`: one in-process run of the Dagster sweep job per replica,
  each under the replica's sweep lock (a replica another process holds waits behind the
  others), then the swept day's analytics and the fleet view.
* :mod:`.outcome` -- :class:`ReplicaSweep`: what one replica's run did, read from its result.
* :mod:`.orphans` -- failing the runs a killed sweep left looking live.
* :mod:`.signals` -- Ctrl-C and ``SIGTERM`` while a sweep runs (:class:`SweepInterrupted`).
* :mod:`.home` -- the persistent Dagster instance that the sweep and ``faultsense ui`` share.

Nothing here imports Dagster until a sweep runs, so the CLI refuses bad input before it loads it.
The ``faultsense sweep`` command itself (options, the summary table) is
:mod:`faultsense_pipelines.cli.sweep_cmd`.
"""

from .orphans import HOST_TAG, PID_TAG, fail_orphaned_fleet_runs, fail_orphaned_runs
from .outcome import ReplicaSweep
from .run import DEFAULT_LOCK_WAIT_S, MAX_LOCK_WAIT_S, check_lock_wait, run_sweep
from .signals import SweepInterrupted

__all__ = [
    "DEFAULT_LOCK_WAIT_S",
    "HOST_TAG",
    "MAX_LOCK_WAIT_S",
    "PID_TAG",
    "ReplicaSweep",
    "SweepInterrupted",
    "check_lock_wait",
    "fail_orphaned_fleet_runs",
    "fail_orphaned_runs",
    "run_sweep",
]
