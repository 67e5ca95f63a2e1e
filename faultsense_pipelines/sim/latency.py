"""A production-like latency model for simulated probes.

Real probe latencies are not i.i.d. lognormal (measured on this project's shared CPU machines:
``bench/results/local_probe.md``, ``bench/results/vllm_cpu_probe.md``): load drifts and bursts move every probe at once, a few percent of
measurements hit a transient stall (a batch collision, an allocator or GC pause), the noise
has heavy tails, faults come and go (thermal throttling cycles), and in a real
expert-parallel engine every rank joins every forward, so a slow GPU also slows probes that
do not hold it (``bench/results/ep_contrast.md``). Each effect is optional and
off by default; with every effect off the model is the FaultSense paper's simulation (APSys
'26, §5) plus lognormal noise, draw for draw.

One measurement of a probe over GPU set P at measurement index t (a counter shared by every
probe of the replica, so shared effects line up in time) is::

    latency = base_ms x load(t) x span(P) x slowdown_t(P) x exp(eps) x stall

- ``load(t) = (1 + drift x sin(2 pi t / drift_period + phase)) x (1 + burst_height if a burst
  is on at t)``; a burst starts with probability ``burst_rate`` per measurement and lasts
  ``burst_length`` measurements;
- ``slowdown_t(P)``: the worst slowdown among the faults active at t that P touches, and, for
  each active slow GPU that P does not hold, ``1 + spillover x (slowdown - 1)``; a fault with
  ``duty`` < 1 is on and off in runs (a two-state Markov chain whose stationary share of "on"
  is ``duty`` and whose mean "on" run is :data:`DUTY_RUN` measurements), the shape of a
  thermal throttling cycle;
- ``span(P) = (1 + node_gap) ** (nodes P spans - 1)``: healthy hardware is not uniform; a
  probe whose GPUs sit on more nodes crosses more inter-node paths (NICs, switches) and is
  slower with nothing faulty (needs the replica's topology);
- ``eps``: N(0, sigma^2), or ``sigma`` x Student-t with ``tail_df`` degrees of freedom;
- ``stall``: with probability ``stall_rate``, a factor uniform in [1.5, ``stall_max``].

Spillover applies to GPU faults only: a slow link slows only the transfers over it, which
happen only in probes holding both of its ends.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..replica.topology import Component, ReplicaTopology, gpu_component, link_component
from ..replica.vocabulary import ComponentKind
from ..validation import shown

__all__ = ["DUTY_RUN", "PRODUCTION_NOISE", "STALL_MIN", "LatencyModel", "NoiseModel", "parse_noise"]

#: Mean length, in measurements, of an "on" run of an intermittent fault (duty < 1).
DUTY_RUN = 20.0
#: Smallest stall factor: a stall is at least 1.5x its measurement.
STALL_MIN = 1.5


@dataclass(frozen=True)
class NoiseModel:
    """The latency effects of a production replica, each optional (the defaults turn it off).

    Attributes:
        sigma: scale of the per-measurement noise in log space (lognormal sigma), >= 0.
        tail_df: Student-t degrees of freedom of the noise (> 2), or None for Gaussian (lognormal).
        stall_rate: share of measurements hit by a transient stall, in [0, 1).
        stall_max: largest stall factor (>= 1.5); a stall multiplies by U(1.5, stall_max).
        drift: amplitude of a slow load swing shared by every probe, in [0, 1).
        drift_period: measurements per cycle of that swing (>= 2).
        burst_rate: probability per measurement that a shared load burst starts, in [0, 1).
        burst_height: a burst multiplies every latency by 1 + burst_height (>= 0).
        burst_length: measurements a burst lasts (>= 1).
        spillover: share of a slow GPU's extra time that also lands on probes without it, in [0, 1].
        node_gap: each node a probe spans beyond its first multiplies its healthy latency by
            ``1 + node_gap``, in [0, 1] (needs a topology with ``gpus_per_node``).

    Raises:
        ValueError: naming the first field out of range.
    """

    sigma: float = 0.0
    tail_df: float | None = None
    stall_rate: float = 0.0
    stall_max: float = 4.0
    drift: float = 0.0
    drift_period: int = 400
    burst_rate: float = 0.0
    burst_height: float = 0.3
    burst_length: int = 15
    spillover: float = 0.0
    node_gap: float = 0.0

    def __post_init__(self) -> None:
        checks = (
            ("sigma", self.sigma, 0.0 <= self.sigma <= 1.0, "in [0, 1]"),
            ("tail_df", self.tail_df, self.tail_df is None or 2.0 < self.tail_df <= 1e6, "in (2, 1e6] (or absent)"),
            ("stall_rate", self.stall_rate, 0.0 <= self.stall_rate < 1.0, "in [0, 1)"),
            ("stall_max", self.stall_max, STALL_MIN <= self.stall_max <= 100.0, "in [1.5, 100]"),
            ("drift", self.drift, 0.0 <= self.drift < 1.0, "in [0, 1)"),
            ("drift_period", self.drift_period, 2 <= self.drift_period <= 10**9, "an integer in 2..10^9"),
            ("burst_rate", self.burst_rate, 0.0 <= self.burst_rate < 1.0, "in [0, 1)"),
            ("burst_height", self.burst_height, 0.0 <= self.burst_height <= 100.0, "in [0, 100]"),
            ("burst_length", self.burst_length, 1 <= self.burst_length <= 10**9, "an integer in 1..10^9"),
            ("spillover", self.spillover, 0.0 <= self.spillover <= 1.0, "in [0, 1]"),
            ("node_gap", self.node_gap, 0.0 <= self.node_gap <= 1.0, "in [0, 1]"),
        )
        for name, value, ok, rule in checks:
            if isinstance(value, bool) or (value is not None and not math.isfinite(value)) or not ok:
                raise ValueError(f"noise.{name} must be {rule}, got {shown(value)}")
        for name in ("drift_period", "burst_length"):
            if not isinstance(getattr(self, name), int):
                raise ValueError(f"noise.{name} must be an integer, got {shown(getattr(self, name))}")

    @property
    def iid(self) -> bool:
        """True when only ``sigma`` is set: the paper's model with i.i.d. lognormal noise."""
        return (
            self.tail_df is None
            and self.stall_rate == 0.0
            and self.drift == 0.0
            and self.burst_rate == 0.0
            and self.spillover == 0.0
            and self.node_gap == 0.0
        )


@dataclass(frozen=True)
class _Fault:
    component: Component
    slowdown: float
    duty: float

    @property
    def is_gpu(self) -> bool:
        return self.component.kind == ComponentKind.GPU


#: The production-like noise of the benchmarks (``"noise": "production"`` in a scenario):
#: sigma 0.03, Student-t tails (4 degrees of freedom), 2% of measurements stalled 1.5-4x, a
#: shared drift of +-15%, load bursts (1% per measurement, +30%, 15 measurements long).
PRODUCTION_NOISE = NoiseModel(
    sigma=0.03, tail_df=4.0, stall_rate=0.02, stall_max=4.0, drift=0.15, burst_rate=0.01, burst_height=0.3, burst_length=15
)


def parse_noise(obj: object) -> NoiseModel:
    """A :class:`NoiseModel` from a decoded JSON value: ``"production"``
    (:data:`PRODUCTION_NOISE`) or an object of its fields (``{"sigma": 0.02}``).

    Raises:
        ValueError: ``noise.<field>: ...`` for an unknown field or a value out of range.

    >>> parse_noise({"sigma": 0.02, "stall_rate": 0.01}).stall_rate, parse_noise("production").tail_df
    (0.01, 4.0)
    """
    if obj == "production":
        return PRODUCTION_NOISE
    if not isinstance(obj, dict):
        raise ValueError(f'noise must be "production" or an object like {{"sigma": 0.02}}, got {shown(obj)}')
    fields = set(NoiseModel.__dataclass_fields__)
    unknown = sorted(str(key) for key in obj if key not in fields)
    if unknown:
        raise ValueError(f"noise has unknown field(s) {unknown[:5]}; known: {', '.join(sorted(fields))}")
    for name, value in obj.items():
        if name == "tail_df" and value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"noise.{name} must be a number, got {shown(value)}")
    return NoiseModel(**obj)


class LatencyModel:
    """Seeded generator of probe latencies under a :class:`NoiseModel` (ms).

    Args:
        noise: the effects to apply.
        faults: ``(what, is_gpu_fault, slowdown, duty)`` per injected fault: ``what`` is one
            GPU id or the two ends of a link (``is_gpu_fault`` tells which), or a
            :class:`~faultsense_pipelines.replica.topology.Component` of ``topology`` (a shared one:
            every probe holding a path it carries is slow); ``slowdown`` >= 1; ``duty`` in (0, 1].
        seed: seed of every random draw.
        base_ms: healthy latency of a probe, ms (> 0).
        topology: where the GPUs sit (needed by shared components).

    The lognormal noise is drawn from ``np.random.default_rng(seed)`` exactly as the paper's
    model draws it, one ``normal(0, sigma, repeats)`` per call; every other effect draws from
    its own stream, so with :attr:`NoiseModel.iid` the latencies are the paper model's, bit
    for bit.

    Raises:
        ValueError: a slowdown < 1 or a duty outside (0, 1].

    >>> m = LatencyModel(NoiseModel(), [((2,), True, 3.0, 1.0)], seed=0, base_ms=10.0)
    >>> m.measure((1, 2), 2), m.measure((0, 1), 1)
    ((30.0, 30.0), (10.0,))
    >>> m.measurements
    3
    """

    def __init__(
        self,
        noise: NoiseModel,
        faults: Sequence[tuple[Sequence[int] | Component, bool, float, float]] = (),
        *,
        seed: int = 0,
        base_ms: float = 20.0,
        topology: ReplicaTopology | None = None,
    ) -> None:
        parsed = []
        for what, is_gpu, slowdown, duty in faults:
            if not math.isfinite(slowdown) or slowdown < 1.0:
                raise ValueError(f"slowdown must be a finite number >= 1, got {slowdown!r}")
            if not math.isfinite(duty) or not 0.0 < duty <= 1.0:
                raise ValueError(f"duty must be in (0, 1], got {duty!r}")
            if isinstance(what, Component):
                component = what
            elif is_gpu:
                component = gpu_component(what[0])
            else:
                component = link_component(*what)
            if component.shared and topology is None:
                raise ValueError(f"a {component.kind} fault needs the replica's topology")
            parsed.append(_Fault(component, float(slowdown), float(duty)))
        if noise.node_gap and (topology is None or topology.gpus_per_node is None):
            raise ValueError("noise.node_gap needs the replica's topology (gpus_per_node)")
        self.noise = noise
        # GPUs and links need no topology: any will do to tell which probes hold them
        self.topology = topology if topology is not None else ReplicaTopology(1)
        self.faults = tuple(parsed)
        self.base_ms = float(base_ms)
        self.measurements = 0
        self._noise_rng = np.random.default_rng(seed)
        self._effects_rng = np.random.default_rng([seed, 0x5EED])
        self._phase = float(self._effects_rng.uniform(0.0, 2.0 * math.pi))
        self._burst_left = 0
        self._on = [bool(self._effects_rng.random() < f.duty) for f in self.faults]

    def _step_shared(self) -> float:
        """Advance the shared state by one measurement; return the load factor at it."""
        n = self.noise
        t = self.measurements
        load = 1.0 + n.drift * math.sin(2.0 * math.pi * t / n.drift_period + self._phase) if n.drift else 1.0
        if self._burst_left == 0 and n.burst_rate and self._effects_rng.random() < n.burst_rate:
            self._burst_left = n.burst_length
        if self._burst_left:
            self._burst_left -= 1
            load *= 1.0 + n.burst_height
        for i, f in enumerate(self.faults):
            if f.duty < 1.0:
                # two-state chain: leave "on" w.p. 1/DUTY_RUN; leave "off" so that P(on) = duty
                leave_on = 1.0 / DUTY_RUN
                leave_off = leave_on * f.duty / (1.0 - f.duty)
                flip = leave_on if self._on[i] else min(1.0, leave_off)
                if self._effects_rng.random() < flip:
                    self._on[i] = not self._on[i]
        self.measurements += 1
        return load

    def slowdown(self, gpus: Sequence[int]) -> float:
        """Slowdown of a probe over ``gpus`` with the faults' current on/off state (1.0 if none)."""
        members = frozenset(gpus)
        worst = 1.0
        for f, on in zip(self.faults, self._on):
            if not on:
                continue
            if self.topology.holds(f.component, members):
                worst = max(worst, f.slowdown)
            elif f.is_gpu and self.noise.spillover:
                worst = max(worst, 1.0 + self.noise.spillover * (f.slowdown - 1.0))
        return worst

    def measure(self, gpus: Sequence[int], repeats: int) -> tuple[float, ...]:
        """``repeats`` back-to-back measurements of the probe over ``gpus``, ms.

        Raises:
            ValueError: ``repeats`` < 1, or a latency that is not a finite number.
        """
        if repeats < 1:
            raise ValueError(f"repeats must be >= 1, got {repeats}")
        n = self.noise
        if n.iid and all(f.duty == 1.0 for f in self.faults):
            mean = self.base_ms * self.slowdown(gpus)
            self.measurements += repeats
            if n.sigma == 0.0:
                return (mean,) * repeats
            with np.errstate(over="ignore"):
                out = mean * np.exp(self._noise_rng.normal(0.0, n.sigma, size=repeats))
            return self._finite(gpus, out)
        eps = self._noise_rng.normal(0.0, n.sigma, size=repeats) if n.sigma else np.zeros(repeats)
        if n.tail_df is not None and n.sigma:
            eps = n.sigma * self._effects_rng.standard_t(n.tail_df, size=repeats)
        latencies = np.empty(repeats)
        span = (1.0 + n.node_gap) ** (len({self.topology.node(g) for g in gpus}) - 1) if n.node_gap else 1.0
        for i in range(repeats):
            slow = span * self.slowdown(gpus)
            load = self._step_shared()
            stall = 1.0
            if n.stall_rate and self._effects_rng.random() < n.stall_rate:
                stall = float(self._effects_rng.uniform(STALL_MIN, n.stall_max))
            with np.errstate(over="ignore"):
                latencies[i] = self.base_ms * load * slow * math.exp(min(float(eps[i]), 700.0)) * stall
        return self._finite(gpus, latencies)

    @staticmethod
    def _finite(gpus: Sequence[int], latencies: np.ndarray) -> tuple[float, ...]:
        if not np.isfinite(latencies).all():
            raise ValueError(f"simulated latency of probe {sorted(gpus)} is not a finite number of ms")
        return tuple(float(x) for x in latencies)
