"""Running probes: one probe with its errors as rows, and a batch of probes in one call.

An :class:`~faultsense_pipelines.replica.executor.ExecutorError` is never evidence about a
GPU: :func:`measure` turns it into that probe's measurement with ``error`` set. An executor
that measures a batch in one call implements
:class:`~faultsense_pipelines.replica.executor.BatchExecutor`; :func:`batched` adapts any other
one, so every caller has one path.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..replica.executor import BatchExecutor, ExecutorError, ProbeExecutor, ProbeMeasurement

__all__ = ["batched", "measure", "measure_all"]


def measure(executor: ProbeExecutor, gpus: tuple[int, ...], repeats: int) -> ProbeMeasurement:
    """Run one probe ``repeats`` times; an :class:`ExecutorError` becomes a measurement with ``error``."""
    try:
        return executor.run(gpus, repeats)
    except ExecutorError as exc:
        return ProbeMeasurement(tuple(sorted(gpus)), (), error=str(exc) or type(exc).__name__)


def measure_all(executor: ProbeExecutor, probes: Sequence[Sequence[int]], repeats: int) -> list[ProbeMeasurement]:
    """:func:`measure` every probe (GPU ids) in turn, back to back repeats; one measurement (ms)
    per probe, in order, in one :meth:`~faultsense_pipelines.replica.executor.BatchExecutor.run_many`
    call (:func:`batched`)."""
    return batched(executor).run_many(probes, repeats)


class _OneByOne:
    """:func:`batched`'s adapter: ``run_many`` as :func:`measure` of each probe in turn."""

    def __init__(self, executor: ProbeExecutor) -> None:
        self.executor = executor
        self.name = executor.name
        self.gpus = executor.gpus

    def run(self, gpus: Sequence[int], repeats: int = 1) -> ProbeMeasurement:
        return self.executor.run(gpus, repeats)

    def run_many(self, probes: Sequence[Sequence[int]], repeats: int = 1) -> list[ProbeMeasurement]:
        return [measure(self.executor, tuple(probe), repeats) for probe in probes]

    def close(self) -> None:
        self.executor.close()


def batched(executor: ProbeExecutor) -> BatchExecutor:
    """``executor`` itself when it is a :class:`~faultsense_pipelines.replica.executor.BatchExecutor`,
    else an adapter whose ``run_many`` measures the probes one by one with :func:`measure`
    (an :class:`~faultsense_pipelines.replica.executor.ExecutorError` becomes that probe's
    error measurement)."""
    return executor if isinstance(executor, BatchExecutor) else _OneByOne(executor)
