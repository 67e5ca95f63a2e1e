"""How a sweep changes its (replica, hour) partition of the ledger: in one commit, or not at all.

A sweep writes nothing while it measures. Only when it completes does it *commit*
(:func:`commit_sweep`, called by ``fault_ledger`` alone, :mod:`.ledger`): one
Delta commit (:meth:`LedgerStore.commit`) replaces every row of the partition's batch
``faultsense-<replica>-hHH`` -- its Phase 1 and Phase 2 probe rows and its fault rows -- and
of its failed attempt ``...-failed``, so re-running an hour replaces its rows, never adds to
them, and a process killed at any moment (``kill -9``, ``SIGTERM``, power loss) leaves the
partition as it was or as exactly the new sweep, never a mix: the commit is one atomic entry
of the table's log. The same commit writes the sweep's one ``sweeps`` row (status, start and
end, probes per phase), so the ledger says which sweep is the partition's without a scan.

A sweep that fails (the executor cannot start, a server is unreachable, a worker crashes)
leaves the completed sweep's rows alone -- an executor error is never evidence about a GPU,
so it must not erase faults an earlier sweep confirmed -- and records what it did measure,
error rows included, and its ``failed`` sweep row, as the batch
``faultsense-<replica>-hHH-failed`` (replaced by the next failed attempt of the partition,
removed by the next completed one; :func:`record_failed_attempt`, called by the step that failed).

An interrupted sweep (Ctrl-C, ``SIGINT``) writes nothing at all; a commit that has begun
finishes before the interrupt is raised.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime

import dagster as dg

from faultsense_pipelines.ledger import FaultRow, LedgerStore, ProbeRunRow, SweepRow

from .partitions import SweepKey
from .rows import DETECTOR

__all__ = ["commit_sweep", "failed_batch", "fault_batch", "interrupts_deferred", "record_failed_attempt", "run_started_at"]


def fault_batch(key: SweepKey) -> str:
    """The sweep partition's batch in the ledger, e.g. ``faultsense-sim-64-h08`` (probe and fault rows)."""
    return f"{DETECTOR}-{key.batch()}"


def failed_batch(key: SweepKey) -> str:
    """The latest failed attempt's batch, e.g. ``faultsense-sim-64-h08-failed`` (probe rows only)."""
    return f"{DETECTOR}-{key.batch('failed')}"


def run_started_at(context: dg.AssetExecutionContext) -> datetime:
    """When the step's run started (UTC), from the instance's run record; now when the record
    has no start time yet."""
    record = context.instance.get_run_record_by_id(context.run.run_id)
    started = record.start_time if record is not None else None
    return datetime.fromtimestamp(started, UTC) if started else datetime.now(UTC)


@contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Hold ``SIGINT`` off while the block runs; an interrupt that arrived meanwhile is raised
    (through whatever handler was installed, Dagster's included) when the block ends.

    Only in the main thread (where Python delivers signals); elsewhere a no-op.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signo, _frame: received.append(signo))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if received:
        signal.raise_signal(signal.SIGINT)


def commit_sweep(
    store: LedgerStore,
    key: SweepKey,
    *,
    phase1: Sequence[ProbeRunRow],
    phase2: Sequence[ProbeRunRow] | None,
    faults: Sequence[FaultRow],
    sweep_id: str = "",
    sweep: SweepRow | None = None,
) -> tuple[str, str]:
    """Replace the partition with one completed sweep, in one commit.

    Args:
        phase1: the sweep's Phase 1 probe rows.
        phase2: its Phase 2 probe rows; None when it needed no drill-down.
        faults: its fault rows (may be empty: the partition is healthy).
        sweep_id: recorded in the commit's metadata (``faultsense.sweep_id``).
        sweep: its ``sweeps`` row (the partition's earlier ones, completed or failed, go).

    Returns:
        The table's path with the new version (``.../delta@v12``), twice (probe rows and
        fault rows are in the same commit).
    """
    batch = fault_batch(key)
    with interrupts_deferred():
        written = store.commit(
            key.day,
            replace=[batch, failed_batch(key)],
            probe_runs={batch: [*phase1, *(phase2 or ())]},
            faults={batch: list(faults)},
            sweeps={batch: [sweep] if sweep is not None else []},
            note={"faultsense.sweep_id": sweep_id, "faultsense.partition": f"{key.hour}|{key.replica}"},
        )
    where = f"{written.path}@v{written.version}"
    return where, where


def record_failed_attempt(store: LedgerStore, key: SweepKey, rows: Sequence[ProbeRunRow], sweep: SweepRow | None = None) -> str:
    """Write a failed sweep's rows -- its probe rows and its ``failed`` ``sweeps`` row -- as the
    partition's ``-failed`` batch (one commit); nothing else changes.

    Returns:
        The table's path with the new version.
    """
    batch = failed_batch(key)
    with interrupts_deferred():
        written = store.commit(
            key.day, replace=[batch], probe_runs={batch: list(rows)}, sweeps={batch: [sweep] if sweep is not None else []}
        )
    return f"{written.path}@v{written.version}"
