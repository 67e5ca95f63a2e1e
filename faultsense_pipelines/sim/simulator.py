"""A simulated replica: the ``simulated`` probe executor.

The replica has n GPUs with injected :mod:`faults <faultsense_pipelines.replica.faults>`. A probe's
latency is ``base_ms`` x the worst slowdown among the GPUs and links it touches x
multiplicative lognormal noise exp(N(0, sigma^2)) per repeat -- the model of FaultSense's
simulation (APSys '26, §5), with the noise the paper left out. Seeded and reproducible: the
same (faults, sigma, seed) and the same sequence of calls give the same latencies.

The healthy latency defaults to :data:`DEFAULT_BASE_MS` (20 ms) everywhere: here, in a
scenario (``faultsense simulate``) and in a fleet file's ``simulated.base_ms``. Only the
latencies in ms scale with it; the suspect rules are scale-free, so verdicts do not change.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from itertools import chain

import numpy as np

from ..replica.executor import ProbeMeasurement
from ..replica.faults import Fault, GpuFault, LinkFault, SharedFault, check_faults
from ..replica.topology import ReplicaTopology
from ..replica.vocabulary import ExecutorKind
from .latency import LatencyModel, NoiseModel

__all__ = ["DEFAULT_BASE_MS", "MAX_NOISE_SIGMA", "SimulatedReplica"]

#: Healthy probe latency, ms: the order of a one-layer MoE forward with an all-to-all. The one
#: default of the simulator, a scenario and a fleet file's ``simulated.base_ms``.
DEFAULT_BASE_MS = 20.0
#: The largest lognormal noise sigma: at sigma = 1 one repeat in twenty is already 5x off its
#: mean (exp(1.645)), far noisier than any replica measured; the fleet file has the same cap.
MAX_NOISE_SIGMA = 1.0


class SimulatedReplica:
    """Probe executor over a simulated replica (implements ``ProbeExecutor``).

    Args:
        gpus: n, GPUs in the replica (>= 1).
        faults: injected faults (:data:`~faultsense_pipelines.replica.faults.Fault` objects, validated where they were
            read); ids must lie in ``0..n-1``, each GPU or link at most once. A fault with
            ``duty`` < 1 comes and goes (a two-state chain, as in :class:`~.latency.LatencyModel`).
        noise_sigma: sigma of the lognormal noise per repeat (0..MAX_NOISE_SIGMA; 0 = noise-free).
        seed: seed of the noise generator.
        base_ms: healthy probe latency, ms (> 0).
        topology: where the GPUs sit; needed by NIC, NVSwitch and switch faults, which slow
            every probe holding a path they carry.
        noise: production-like effects (:class:`~faultsense_pipelines.sim.latency.NoiseModel`:
            heavy tails, stalls, drift, load bursts, spillover) instead of ``noise_sigma`` alone;
            its ``sigma`` replaces ``noise_sigma``.

    Raises:
        ValueError: naming the bad argument.

    >>> from faultsense_pipelines.replica.faults import LinkFault
    >>> r = SimulatedReplica(8, [LinkFault((3, 4), 1.5)], base_ms=10.0)
    >>> r.run([2, 3, 4, 5]).latencies_ms, r.run([0, 1, 2, 3]).latencies_ms
    ((15.0,), (10.0,))
    """

    name: str = ExecutorKind.SIMULATED

    def __init__(
        self,
        gpus: int,
        faults: Sequence[Fault] = (),
        noise_sigma: float = 0.0,
        seed: int = 0,
        base_ms: float = DEFAULT_BASE_MS,
        topology: ReplicaTopology | None = None,
        noise: NoiseModel | None = None,
    ) -> None:
        if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1:
            raise ValueError(f"gpus must be an integer >= 1, got {gpus!r}")
        if not math.isfinite(noise_sigma) or not 0 <= noise_sigma <= MAX_NOISE_SIGMA:
            raise ValueError(f"noise_sigma must be a finite number in [0, {MAX_NOISE_SIGMA:g}], got {noise_sigma!r}")
        if not math.isfinite(base_ms) or base_ms <= 0:
            raise ValueError(f"base_ms must be a finite number > 0, got {base_ms!r}")
        faults = tuple(faults)
        for f in faults:
            if not isinstance(f, GpuFault | LinkFault | SharedFault):
                raise ValueError(f"a simulated fault must be a GpuFault, LinkFault or shared-component fault, got {f!r}")
        if topology is not None and topology.gpus != gpus:
            raise ValueError(f"topology is of {topology.gpus} GPUs, the replica of {gpus}")
        check_faults(faults, gpus, topology=topology, simulated=True)
        self.gpus = gpus
        self.topology = topology if topology is not None else ReplicaTopology(gpus)
        self._slow = tuple((f.component(topology), float(f.slowdown or 1.0)) for f in faults)
        duties = tuple(float(f.duty) for f in faults)
        self.faults = faults
        self.noise_sigma = float(noise_sigma)
        self.seed = seed
        self.base_ms = float(base_ms)
        self.probes_run = 0
        self._rng = np.random.default_rng(seed)
        self._model: LatencyModel | None = None
        if noise is None and any(d < 1.0 for d in duties):
            noise = NoiseModel(sigma=self.noise_sigma)  # an intermittent fault comes and goes over time
        if noise is not None:
            self.noise_sigma = noise.sigma
            self._model = LatencyModel(
                noise,
                [(c, False, slow, duty) for (c, slow), duty in zip(self._slow, duties, strict=True)],
                seed=seed,
                base_ms=base_ms,
                topology=self.topology,
            )

    def slowdown(self, gpus: Sequence[int]) -> float:
        """The worst slowdown among the faults a probe over ``gpus`` touches (1.0 if none)."""
        members = frozenset(gpus)
        return max((slow for c, slow in self._slow if self.topology.holds(c, members)), default=1.0)

    def run(self, gpus: Sequence[int], repeats: int = 1) -> ProbeMeasurement:
        """Measure the probe over ``gpus`` ``repeats`` times (ms)."""
        probe = tuple(sorted(set(gpus)))
        if not probe or any(isinstance(g, bool) or not isinstance(g, int | np.integer) for g in probe):
            raise ValueError(f"a probe needs integer GPU ids, got {list(gpus)!r}")
        if probe[0] < 0 or probe[-1] >= self.gpus:
            raise ValueError(f"probe {list(probe)} names a GPU outside 0..{self.gpus - 1}")
        if repeats < 1:
            raise ValueError(f"repeats must be >= 1, got {repeats}")
        self.probes_run += 1
        if self._model is not None:
            return ProbeMeasurement(probe, self._model.measure(probe, repeats))
        mean = self.base_ms * self.slowdown(probe)
        if self.noise_sigma == 0.0:
            latencies = np.full(repeats, mean)
        else:
            with np.errstate(over="ignore"):  # an overflow is reported below, as a ValueError
                latencies = mean * np.exp(self._rng.normal(0.0, self.noise_sigma, size=repeats))
        if not np.isfinite(latencies).all():
            raise ValueError(
                f"simulated latency of probe {list(probe)} overflows: base_ms={self.base_ms!r} x slowdown "
                f"{self.slowdown(probe)!r} x lognormal noise (sigma {self.noise_sigma!r}) is not a finite number of ms"
            )
        return ProbeMeasurement(probe, tuple(float(x) for x in latencies))

    def run_many(self, probes: Sequence[Sequence[int]], repeats: int = 1) -> list[ProbeMeasurement]:
        """:meth:`run` every probe in turn, as arrays: the same latencies (ms), noise draws and
        errors as ``[self.run(p, repeats) for p in probes]``, in O(P (k + repeats)) numpy work
        for P probes of k GPUs instead of a Python loop over the faults per probe.

        Raises:
            ValueError: as :meth:`run`, for the first probe it would fail on.
        """
        sets = [sorted(set(p)) for p in probes]
        kinds = set(map(type, chain.from_iterable(sets)))  # one pass in C; bools are ints but not ids
        if repeats < 1 or not all(sets) or not all(issubclass(t, int | np.integer) and t is not bool for t in kinds):
            return [self.run(p, repeats) for p in probes]  # the first bad probe raises as run does
        if sets and (min(s[0] for s in sets) < 0 or max(s[-1] for s in sets) >= self.gpus):
            return [self.run(p, repeats) for p in probes]
        if self._model is not None:  # production-like noise draws measurement by measurement
            return [self.run(p, repeats) for p in probes]
        touched = self.topology.holds_matrix_sorted([c for c, _ in self._slow], sets) if self._slow else None
        latencies = self._draw(touched, len(sets), repeats, lambda i: sets[i])
        return [ProbeMeasurement(tuple(s), tuple(row)) for s, row in zip(sets, latencies.tolist(), strict=True)]

    def _draw(self, touched: np.ndarray | None, count: int, repeats: int, probe: Callable[[int], object]) -> np.ndarray:
        """Latencies (ms) of ``count`` probes, ``(count, repeats)``: base times the largest
        slowdown of the faults each probe holds (``touched``: ``(count, faults)`` bools, or
        None without faults) times lognormal noise. Counts the probes run. Raises ValueError
        naming the first probe (``probe(i)``) whose latency is not finite."""
        slowdown = np.ones(count)
        if touched is not None:
            for j, (_, slow) in enumerate(self._slow):
                slowdown[touched[:, j]] = np.maximum(slowdown[touched[:, j]], slow)
        mean = self.base_ms * slowdown
        if self.noise_sigma == 0.0:
            latencies = np.repeat(mean[:, None], repeats, axis=1)
        else:
            with np.errstate(over="ignore"):  # an overflow is reported below, as a ValueError
                latencies = mean[:, None] * np.exp(self._rng.normal(0.0, self.noise_sigma, size=(count, repeats)))
        bad = np.flatnonzero(~np.isfinite(latencies).all(axis=1))
        self.probes_run += count if not len(bad) else int(bad[0]) + 1
        if len(bad):
            raise ValueError(
                f"simulated latency of probe {probe(int(bad[0]))} overflows: base_ms={self.base_ms!r} x slowdown "
                f"{float(slowdown[bad[0]])!r} x lognormal noise (sigma {self.noise_sigma!r}) is not a finite number of ms"
            )
        out: np.ndarray = latencies
        return out

    def run_array(self, members: np.ndarray, repeats: int = 1) -> np.ndarray:
        """:meth:`run_many` of probes given as rows of a ``(P, k)`` integer array of
        ascending, distinct GPU ids: the same latencies (ms) and noise draws, returned as a
        ``(P, repeats)`` float array instead of one measurement object per probe.

        Raises:
            ValueError: as :meth:`run_many` (rows that are not ascending and distinct, or hold
                a GPU outside ``0..n-1``, are run through it, which raises or measures them).
        """
        members = np.asarray(members)
        ok = (
            members.ndim == 2
            and members.shape[1] > 0
            and np.issubdtype(members.dtype, np.integer)
            and repeats >= 1
            and self._model is None
        )
        if ok and len(members):
            ok = bool(members.min() >= 0 and members.max() < self.gpus and (np.diff(members, axis=1) > 0).all())
        if not ok:
            rows = [m.latencies_ms for m in self.run_many(np.asarray(members).tolist(), repeats)]
            return np.asarray(rows, dtype=np.float64).reshape(len(rows), repeats)
        touched = self.topology.holds_matrix_ids([c for c, _ in self._slow], members) if self._slow else None
        return self._draw(touched, len(members), repeats, lambda i: members[i].tolist())

    def close(self) -> None:
        """Nothing to release; safe to call twice."""
