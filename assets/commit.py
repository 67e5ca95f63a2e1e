"""How a sweep changes its (replica, hour) partition of the ledger: all at the end, or not at all.

A sweep writes nothing while it measures. Only when it completes does it *commit*: the
partition's Phase 1 and Phase 2 probe files and its fault batch are replaced together (and
a failed attempt's file of the same partition is removed), so re-running an hour replaces
its rows, never adds to them.

A sweep that fails (the executor cannot start, a server is unreachable, a worker crashes)
leaves the completed sweep's files alone -- an executor error is never evidence about a
GPU, so it must not erase faults an earlier sweep confirmed -- and records what it did
measure, error rows included, in one file of its own, ``<replica>-hHH-failed.parquet`` of
``probe_runs`` (replaced by the next failed attempt of the partition, removed by the next
completed one).

An interrupted sweep (Ctrl-C, ``SIGINT``) writes nothing at all. A commit that has begun
finishes before the interrupt is raised, so a partition is always either as it was or
exactly one completed sweep.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from faultsense_pipelines.ledger import PROBE_RUNS, FaultRow, LedgerStore, ProbeRunRow

from .partitions import SweepKey
from .rows import DETECTOR

__all__ = ["commit_sweep", "failed_batch", "fault_batch", "interrupts_deferred", "record_failed_attempt"]


def fault_batch(key: SweepKey) -> str:
    """Name of the sweep's file in ``fault_ledger/``, e.g. ``faultsense-sim-64-h08``."""
    return f"{DETECTOR}-{key.batch()}"


def failed_batch(key: SweepKey) -> str:
    """Name of the latest failed attempt's file in ``probe_runs/``, e.g. ``sim-64-h08-failed``."""
    return key.batch("failed")


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
) -> tuple[str, str]:
    """Replace the partition with one completed sweep.

    Args:
        phase1: the sweep's Phase 1 probe rows.
        phase2: its Phase 2 probe rows; None when it needed no drill-down (an earlier
            sweep's Phase 2 file is removed).
        faults: its fault rows (may be empty: the partition is healthy).

    Returns:
        The Phase 1 probe file's and the fault file's paths.
    """
    with interrupts_deferred():
        runs = store.write_probe_runs(list(phase1), day=key.day, batch=key.batch("phase1")).path
        if phase2 is None:
            store.delete_batch(PROBE_RUNS, day=key.day, batch=key.batch("phase2"))
        else:
            store.write_probe_runs(list(phase2), day=key.day, batch=key.batch("phase2"))
        path = store.write_faults(list(faults), day=key.day, batch=fault_batch(key)).path
        store.delete_batch(PROBE_RUNS, day=key.day, batch=failed_batch(key))
    return runs, path


def record_failed_attempt(store: LedgerStore, key: SweepKey, rows: Sequence[ProbeRunRow]) -> str:
    """Write a failed sweep's rows to the partition's ``-failed`` file; nothing else changes.

    Returns:
        The file's path.
    """
    with interrupts_deferred():
        return store.write_probe_runs(list(rows), day=key.day, batch=failed_batch(key)).path
