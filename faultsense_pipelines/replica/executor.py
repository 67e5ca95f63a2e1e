"""What every probe executor returns, and the one interface they share.

An executor runs one probe (a set of GPUs, see FaultSense §4.1) ``repeats`` times on a
replica and reports the end-to-end latency of each repeat in milliseconds. Simulated,
local torch.distributed, Ray and vLLM executors all implement :class:`ProbeExecutor`;
the localization code depends on nothing else. An executor that can measure many probes in
one call says so by implementing :class:`BatchExecutor` (and, for rows of a GPU-id array,
:class:`ArrayExecutor`); ``faultsense_pipelines.measure.batched`` adapts any other one. An
executor that knows which host each GPU's worker runs on (``ray``) says so by implementing
:class:`HostedExecutor`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["ArrayExecutor", "BatchExecutor", "ExecutorError", "HostedExecutor", "ProbeExecutor", "ProbeMeasurement"]


class ExecutorError(RuntimeError):
    """An executor could not measure a probe (unreachable server, worker crash, timeout).

    This is never evidence of a fault: callers record it as an error row and move on.
    """


@dataclass(frozen=True)
class ProbeMeasurement:
    """One probe measured ``len(latencies_ms)`` times.

    Attributes:
        gpus: the probe's GPU ids, sorted, 0-based.
        latencies_ms: end-to-end latency of each repeat, in ms (finite, >= 0); empty when
            ``error`` is set.
        error: why the probe could not be measured, or ``None``.
    """

    gpus: tuple[int, ...]
    latencies_ms: tuple[float, ...]
    error: str | None = None

    def __post_init__(self) -> None:
        for v in self.latencies_ms:
            if not math.isfinite(v) or v < 0:
                raise ValueError(f"latency_ms must be finite and >= 0, got {v!r} for probe {list(self.gpus)}")
        if self.error is None and not self.latencies_ms:
            raise ValueError(f"probe {list(self.gpus)} has neither latencies nor an error")

    @property
    def ok(self) -> bool:
        """True when the probe was measured (no error)."""
        return self.error is None


@runtime_checkable
class ProbeExecutor(Protocol):
    """Runs probes on one replica.

    Attributes:
        name: executor kind (``"simulated"``, ``"local"``, ``"ray"``, ``"vllm"``).
        gpus: number of GPUs in the replica it drives.
    """

    name: str
    gpus: int

    def run(self, gpus: Sequence[int], repeats: int = 1) -> ProbeMeasurement:
        """Measure the probe over ``gpus`` ``repeats`` times.

        Returns a :class:`ProbeMeasurement`; failures to measure come back as a measurement
        with ``error`` set, never as a latency.

        Raises:
            ValueError: if a GPU id is outside ``0..gpus-1`` or ``repeats < 1``.
        """
        ...

    def close(self) -> None:
        """Release workers, connections and processes. Safe to call twice."""
        ...


@runtime_checkable
class BatchExecutor(ProbeExecutor, Protocol):
    """A :class:`ProbeExecutor` that measures a batch of probes in one call (the simulator:
    one vectorized draw), returning what :meth:`~ProbeExecutor.run` called probe by probe, in
    order, would (the same draws, errors as measurements with ``error``)."""

    def run_many(self, probes: Sequence[Sequence[int]], repeats: int = 1) -> list[ProbeMeasurement]:
        """Measure each probe (GPU ids) ``repeats`` times; one :class:`ProbeMeasurement` per
        probe, in order.

        Raises:
            ValueError: as :meth:`~ProbeExecutor.run`.
        """
        ...


@runtime_checkable
class ArrayExecutor(BatchExecutor, Protocol):
    """A :class:`BatchExecutor` that also takes its probes as one integer array and answers with
    one latency array, never an error (the simulator at scale)."""

    def run_array(self, members: np.ndarray, repeats: int = 1) -> np.ndarray:
        """:meth:`~BatchExecutor.run_many` of the probes given as rows of a ``(P, k)`` integer
        array of ascending GPU ids; returns a ``(P, repeats)`` float array of latencies (ms).

        Raises:
            ValueError: for rows that are not ascending, distinct GPU ids of the replica.
        """
        ...


@runtime_checkable
class HostedExecutor(ProbeExecutor, Protocol):
    """A :class:`ProbeExecutor` whose workers run on named hosts (the ``ray`` executor reads
    them from its actors): a sweep names the replica's nodes after them where the fleet file
    does not (:meth:`~faultsense_pipelines.replica.topology.ReplicaTopology.named_by_hosts`).

    Attributes:
        hosts: the host GPU ``g``'s worker runs on, ``hosts[g]``, one per GPU; empty until the
            workers have started.
    """

    hosts: tuple[str, ...]
