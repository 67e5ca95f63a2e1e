"""Synthetic training-cluster metrics with injected machine faults and decoys.

A synchronous training job makes every machine do the same work: all of them follow one
iteration rhythm (a compute phase that loads the GPU, then a communication phase that
loads NVLink, PCIe and the NIC). Monitoring samples that rhythm averaged over each scrape
interval, with per-machine noise and small per-machine offsets, and misses some samples.

Injected faults change one machine from an onset to the end (or for a duration):

- ``gpu_throttle``: power capped, GPU hotter, lower utilization;
- ``nvlink_degraded`` / ``pcie_degraded``: that link's throughput falls;
- ``nic_flapping``: the NIC goes down and up every few tens of seconds, PFC pauses surge;
- ``cpu_contention``: a stray process takes CPU, the GPU waits for input;
- ``slow_drift``: GPU temperature and memory creep up (a failing fan, a leak).

Decoys must not be reported: a ``blip`` (one machine, ~30 s) and a ``job_slowdown`` (every
machine at once, e.g. a storage stall). Everything is seeded; :attr:`SyntheticFleet.faults`
is the ground truth (machine, onset).

References:
    Deng et al., "Minder: Faulty Machine Detection for Large-scale Distributed Model
    Training", NSDI '25 (arXiv 2411.01791), section 2 (fault types and their metrics).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from faultsense_pipelines.minder.io import MetricArray, to_long_frame

__all__ = [
    "DECOY_KINDS",
    "DEFAULT_METRICS",
    "FAULT_KINDS",
    "Injection",
    "SyntheticFleet",
    "generate_fleet",
    "random_injections",
]

DEFAULT_METRICS = (
    "gpu_util", "gpu_power_w", "gpu_temp_c", "nvlink_tx_bytes", "nvlink_rx_bytes", "pcie_tx_bytes",
    "pcie_rx_bytes", "net_tx_bytes", "net_rx_bytes", "pfc_tx_packets", "cpu_util", "mem_used_bytes",
)  # fmt: skip
FAULT_KINDS = ("gpu_throttle", "nvlink_degraded", "pcie_degraded", "nic_flapping", "cpu_contention", "slow_drift")
DECOY_KINDS = ("blip", "job_slowdown")

# metric: (base level, rhythm swing, phase: +1 compute / -1 communication, noise, offset),
# noise and offset as fractions of the level; the rhythm swings the level by `swing`.
_PROFILE = {
    "gpu_util": (100.0, 0.50, +1, 0.02, 0.01),
    "gpu_power_w": (700.0, 0.50, +1, 0.02, 0.015),
    "gpu_temp_c": (70.0, 0.10, +1, 0.01, 0.02),
    "nvlink_tx_bytes": (40e9, 0.85, -1, 0.03, 0.01),
    "nvlink_rx_bytes": (40e9, 0.85, -1, 0.03, 0.01),
    "pcie_tx_bytes": (8e9, 0.7, -1, 0.04, 0.015),
    "pcie_rx_bytes": (8e9, 0.7, -1, 0.04, 0.015),
    "net_tx_bytes": (20e9, 0.85, -1, 0.03, 0.01),
    "net_rx_bytes": (20e9, 0.85, -1, 0.03, 0.01),
    "pfc_tx_packets": (400.0, 0.8, -1, 0.10, 0.03),
    "cpu_util": (35.0, 0.3, -1, 0.04, 0.03),
    "mem_used_bytes": (600e9, 0.02, +1, 0.002, 0.01),
}


@dataclass(frozen=True)
class Injection:
    """One injected fault or decoy.

    Attributes:
        kind: one of :data:`FAULT_KINDS` or :data:`DECOY_KINDS`.
        machine: the machine it hits; ``None`` for a job-wide slowdown.
        onset_s: seconds after the start of the data.
        duration_s: how long it lasts; ``None`` = to the end.
    """

    kind: str
    machine: str | None
    onset_s: float
    duration_s: float | None = None

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS + DECOY_KINDS:
            raise ValueError(f"unknown injection kind {self.kind!r}")
        if (self.machine is None) != (self.kind == "job_slowdown"):
            raise ValueError(f"{self.kind} needs {'no' if self.kind == 'job_slowdown' else 'a'} machine")

    @property
    def is_fault(self) -> bool:
        """True for a machine fault, False for a decoy."""
        return self.kind in FAULT_KINDS


@dataclass(frozen=True, eq=False)
class SyntheticFleet:
    """Generated metrics and what was injected into them."""

    array: MetricArray
    injections: tuple[Injection, ...]

    @property
    def faults(self) -> tuple[tuple[str, pd.Timestamp], ...]:
        """Ground truth: (machine, onset) of every injected machine fault."""
        return tuple(
            (inj.machine, self.array.time_at(inj.onset_s / self.array.interval_s))
            for inj in self.injections
            if inj.is_fault and inj.machine is not None
        )

    def to_frame(self, *, nan_rate: float = 0.0, shuffle: bool = True, seed: int = 0) -> pd.DataFrame:
        """Long-format rows as a scraper would write them: unsorted, some values NaN."""
        frame = to_long_frame(self.array)
        rng = np.random.default_rng(seed)
        if nan_rate > 0:
            frame.loc[rng.random(len(frame)) < nan_rate, "value"] = np.nan
        if shuffle:
            frame = frame.iloc[rng.permutation(len(frame))].reset_index(drop=True)
        return frame


def _rhythm(n_times: int, interval_s: float, rng: np.random.Generator) -> np.ndarray:
    """Fraction of each scrape interval spent in the compute phase, shape (n_times,)."""
    fine = np.arange(int(n_times * interval_s)) + rng.uniform(0, 100)  # 1-s resolution
    period = 23.0 * (1 + 0.03 * np.sin(2 * np.pi * fine / 611.0))  # slowly wandering iteration time
    phase = np.cumsum(1.0 / period) % 1.0
    compute = (phase < 0.65).astype(float)
    per_interval = int(interval_s) if interval_s >= 1 else 1
    return compute[: n_times * per_interval].reshape(n_times, per_interval).mean(axis=1)


def _active(n_times: int, interval_s: float, inj: Injection) -> np.ndarray:
    t = np.arange(n_times) * interval_s
    end = np.inf if inj.duration_s is None else inj.onset_s + inj.duration_s
    return (t >= inj.onset_s) & (t < end)


def _apply(values: np.ndarray, col: dict[str, int], inj: Injection, row: int | slice, interval_s: float,
           rng: np.random.Generator) -> None:  # fmt: skip
    """Change ``values[row, :, :]`` in place where ``inj`` is active."""
    n_times = values.shape[1]
    on = _active(n_times, interval_s, inj)
    x = values[row]  # (n_times, n_metrics) or (n_machines, n_times, n_metrics): a view

    def scale(metric: str, factor: float | np.ndarray) -> None:
        if metric in col:
            x[..., on, col[metric]] *= factor

    def add(metric: str, amount: float | np.ndarray) -> None:
        if metric in col:
            x[..., on, col[metric]] += amount

    elapsed_min = (np.arange(n_times)[on] * interval_s - inj.onset_s) / 60.0
    match inj.kind:
        case "gpu_throttle":
            scale("gpu_power_w", 0.6)
            scale("gpu_util", 0.85)
            add("gpu_temp_c", 8.0)
        case "nvlink_degraded":
            for metric in ("nvlink_tx_bytes", "nvlink_rx_bytes"):
                scale(metric, 0.35)
        case "pcie_degraded":
            for metric in ("pcie_tx_bytes", "pcie_rx_bytes"):
                scale(metric, 0.4)
        case "nic_flapping":  # down for 20 s, up for 20 s, plus random extra downs
            down = ((elapsed_min * 60.0) // 20.0) % 2 == 0
            down = (down | (rng.random(down.shape) < 0.3)).astype(float)
            for metric in ("net_tx_bytes", "net_rx_bytes"):
                scale(metric, 1.0 - 0.9 * down)
            add("pfc_tx_packets", 4000.0 * down + 500.0)
        case "cpu_contention":
            add("cpu_util", 40.0)
            scale("gpu_util", 0.88)
        case "slow_drift":  # a failing fan and a slow leak
            add("gpu_temp_c", np.minimum(2.5 * elapsed_min, 20.0))
            scale("mem_used_bytes", 1.0 + np.minimum(0.01 * elapsed_min, 0.1))
        case "blip":
            for metric in ("net_tx_bytes", "net_rx_bytes"):
                scale(metric, 0.1)
            add("pfc_tx_packets", 4000.0)
            scale("gpu_util", 0.5)
            scale("gpu_power_w", 0.6)
        case "job_slowdown":  # e.g. a storage stall: every machine waits alike
            for metric in ("nvlink_tx_bytes", "nvlink_rx_bytes", "net_tx_bytes", "net_rx_bytes"):
                scale(metric, 0.5)
            scale("gpu_util", 0.6)
            scale("gpu_power_w", 0.7)
            add("cpu_util", 10.0)


def generate_fleet(
    n_machines: int,
    duration_s: float,
    interval_s: float = 10.0,
    *,
    injections: tuple[Injection, ...] | list[Injection] = (),
    metrics: tuple[str, ...] = DEFAULT_METRICS,
    missing_rate: float = 0.01,
    noise: float = 1.0,
    disappear: dict[str, float] | None = None,
    seed: int = 0,
    start: str = "2026-01-01T00:00:00Z",
) -> SyntheticFleet:
    """Generate a fleet's metrics with the given injections.

    Args:
        n_machines: machines in the job (named ``node-0000``...).
        duration_s: seconds of data.
        interval_s: scrape interval in seconds (a whole number, 1-60).
        injections: faults and decoys to inject.
        metrics: metric names, each from :data:`DEFAULT_METRICS`.
        missing_rate: fraction of samples dropped at random.
        noise: multiplies every metric's sample-to-sample noise (1.0 = the default profile).
        disappear: machine -> seconds after start when it stops reporting.
        seed: random seed; the same arguments give the same data.
        start: UTC time of the first sample.

    Returns:
        The :class:`SyntheticFleet` (metrics sorted by name, as the loader sorts them).

    Raises:
        ValueError: an unknown metric or machine, or a bad size.
    """
    if n_machines < 1 or duration_s < interval_s or interval_s < 1:
        raise ValueError(f"bad fleet size: {n_machines} machines, {duration_s} s at {interval_s} s")
    unknown = [m for m in metrics if m not in _PROFILE]
    if unknown:
        raise ValueError(f"unknown metric {unknown[0]!r}")
    rng = np.random.default_rng(seed)
    metrics = tuple(sorted(metrics))
    machines = tuple(f"node-{i:04d}" for i in range(n_machines))
    row = {name: i for i, name in enumerate(machines)}
    col = {name: k for k, name in enumerate(metrics)}
    n_times = int(duration_s // interval_s)

    compute = _rhythm(n_times, interval_s, rng)
    values = np.empty((n_machines, n_times, len(metrics)), dtype=np.float64)
    for k, name in enumerate(metrics):
        level, swing, sign, jitter, offset = _PROFILE[name]
        shape = 1 - swing + swing * (compute if sign > 0 else 1 - compute)  # (n_times,)
        per_machine = 1 + offset * rng.standard_normal((n_machines, 1))
        values[:, :, k] = level * per_machine * shape[None, :]
        values[:, :, k] *= 1 + noise * jitter * rng.standard_normal((n_machines, n_times))

    for inj in injections:
        if inj.machine is not None and inj.machine not in row:
            raise ValueError(f"injection on unknown machine {inj.machine!r}")
        target = slice(None) if inj.machine is None else row[inj.machine]
        _apply(values, col, inj, target, interval_s, rng)

    for k, name in enumerate(metrics):  # physical limits
        if name in {"gpu_util", "cpu_util"}:
            np.clip(values[:, :, k], 0.0, 100.0, out=values[:, :, k])
        else:
            np.maximum(values[:, :, k], 0.0, out=values[:, :, k])
    values[rng.random(values.shape) < missing_rate] = np.nan
    for machine, gone_s in (disappear or {}).items():
        values[row[machine], int(gone_s // interval_s) :, :] = np.nan

    array = MetricArray(values.astype(np.float32), machines, metrics, pd.Timestamp(start), float(interval_s))
    return SyntheticFleet(array, tuple(injections))


def random_injections(
    rng: np.random.Generator,
    n_machines: int,
    duration_s: float,
    *,
    fault_kind: str | None,
    blips: int = 0,
    job_slowdown: bool = False,
    min_onset_s: float = 120.0,
    fault_room_s: float = 420.0,
    faults: int = 1,
) -> list[Injection]:
    """A random scenario: ``faults`` faults (default one) of ``fault_kind`` plus the given decoys.

    Each fault hits its own machine and starts between ``min_onset_s`` and ``duration_s -
    fault_room_s`` so that it can be confirmed before the data ends (several faults at once
    overlap in time); blips last 30 s; a job slowdown lasts to the end. Kinds after the first
    fault cycle through :data:`FAULT_KINDS` from ``fault_kind``.
    """
    machines = [f"node-{i:04d}" for i in rng.permutation(n_machines)]
    out: list[Injection] = []
    if fault_kind is not None:
        first = FAULT_KINDS.index(fault_kind)
        for k in range(faults):
            onset = float(rng.uniform(min_onset_s, duration_s - fault_room_s))
            kind = FAULT_KINDS[(first + k) % len(FAULT_KINDS)]
            out.append(Injection(kind, machines.pop(), round(onset)))
    for _ in range(blips):
        out.append(Injection("blip", machines.pop(), round(float(rng.uniform(60, duration_s - 60))), 30.0))
    if job_slowdown:
        out.append(Injection("job_slowdown", None, round(float(rng.uniform(60, duration_s - 120)))))
    return out
