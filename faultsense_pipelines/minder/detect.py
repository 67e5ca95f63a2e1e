"""Scan a fleet's metrics for faulty machines: Minder's detection pass.

For each metric, in priority order: denoise every machine's windows with that metric's
LSTM-VAE, score each machine's distance to the rest of the fleet per window
(:mod:`~faultsense_pipelines.minder.similarity`), keep machines that stay the outlier for
``continuity_s`` (:mod:`~faultsense_pipelines.minder.continuity`), and date the onset of
the abnormal pattern. Runs of one machine that overlap in time are one fault, named by the
highest-priority metric that confirmed it and dated by the (lower) median of its metrics'
onsets, so one metric's poor change-point fit does not move it.

References:
    Deng et al., "Minder: Faulty Machine Detection for Large-scale Distributed Model
    Training", NSDI '25 (arXiv 2411.01791), section 4 (design) and Figure 5 (workflow).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from faultsense_pipelines.minder.continuity import confirmed_runs, estimate_onset
from faultsense_pipelines.minder.io import MetricArray
from faultsense_pipelines.minder.model import reconstruct, torch_threads
from faultsense_pipelines.minder.settings import MinderSettings
from faultsense_pipelines.minder.similarity import fleet_distances, outlier_scores
from faultsense_pipelines.minder.train import MinderModel
from faultsense_pipelines.minder.windows import fleet_median, split_windows

__all__ = ["Fault", "scan"]

ONSET_LOOKBACK_WINDOWS = 30  # windows before the first outlier window the onset fit may reach back


@dataclass(frozen=True)
class Fault:
    """A faulty machine found by Minder.

    Attributes:
        machine: the machine's name.
        start: estimated onset of the abnormal pattern (UTC), not when it was confirmed.
        metric: the highest-priority metric that confirmed it.
        score: peak outlier score (robust z) over the run.
        confirmed_at: end of the window in which it had lasted ``continuity_s`` (UTC).
    """

    machine: str
    start: pd.Timestamp
    metric: str
    score: float
    confirmed_at: pd.Timestamp

    def to_dict(self) -> dict[str, str | float]:
        """The JSON contract: machine, ISO 8601 start, metric, score."""
        return {"machine": self.machine, "start": self.start.isoformat(), "metric": self.metric,
                "score": round(self.score, 3)}  # fmt: skip


@dataclass(frozen=True)
class _Run:
    machine: int
    metric: str
    rank: int  # position of the metric in the model's priority
    onset: int  # sample index
    first: int  # sample index of the first outlier window
    last: int  # sample index one past the last outlier window
    confirmed: int  # sample index one past the confirming window
    peak: float


def _metric_runs(x: np.ndarray, model: MinderModel, metric: str, rank: int, settings: MinderSettings) -> list[_Run]:
    """Confirmed outlier runs of one metric; x: (n_machines, n_times) normalized."""
    w = model.window
    windows, coverage, offset = split_windows(x, w)
    if windows.shape[1] == 0:
        return []
    if settings.denoise:
        windows = reconstruct(model.denoisers[metric], windows)  # (n_machines, n_windows, w)
    distances = fleet_distances(windows, coverage >= settings.min_coverage)
    spread = max(float(model.spreads[model.metrics.index(metric)]), settings.min_spread)
    scores = outlier_scores(distances, min_spread=spread, min_machines=settings.min_machines)
    min_windows = max(1, math.ceil(settings.continuity_s / (w * model.interval_s) - 1e-9))
    runs = confirmed_runs(scores, settings.threshold, min_windows, settings.max_gap_windows)
    if not runs:
        return []
    # the machine's own (denoised) series against the fleet's, sample by sample, from ``offset`` on
    series = windows.reshape(windows.shape[0], -1)
    deviation = series - fleet_median(series)[None, :]
    out = []
    previous_end: dict[int, int] = {}
    for run in runs:  # ordered by machine, then first window
        # onset fit from well before the first outlier window (a fault near the threshold can
        # cross it windows after it began), but not into the machine's previous run
        lo_w = max(previous_end.get(run.machine, 0), run.first - max(ONSET_LOOKBACK_WINDOWS, min_windows))
        previous_end[run.machine] = run.last + 1
        lo, first_start = lo_w * w, run.first * w
        fit_end = (run.confirmed + 1) * w  # onset fit: lookback to confirmation
        if first_start - lo < 2:  # abnormal from the first sample seen: no change point to find
            onset = first_start
        else:  # the pattern began by the end of the first outlier window at the latest
            onset = min(lo + estimate_onset(deviation[run.machine, lo:fit_end]), first_start + w - 1)
        out.append(
            _Run(run.machine, metric, rank, offset + onset, offset + first_start, offset + (run.last + 1) * w,
                 offset + fit_end, run.peak)
        )  # fmt: skip
    return out


def _overlapping(runs: list[_Run]) -> list[list[_Run]]:
    """Group one machine's runs into stretches that overlap in time."""
    groups: list[list[_Run]] = []
    for run in sorted(runs, key=lambda r: r.first):
        if groups and run.first < max(r.last for r in groups[-1]):
            groups[-1].append(run)
        else:
            groups.append([run])
    return groups


def _merge(runs: list[_Run], array: MetricArray) -> list[Fault]:
    """One fault per machine per stretch of overlapping runs."""
    by_machine: dict[int, list[_Run]] = {}
    for run in runs:
        by_machine.setdefault(run.machine, []).append(run)
    faults = []
    for machine, mine in by_machine.items():
        for group in _overlapping(mine):
            onsets = sorted(r.onset for r in group)
            confirmed = min(r.confirmed for r in group)
            faults.append(
                Fault(
                    machine=array.machines[machine],
                    start=array.time_at(min(onsets[(len(onsets) - 1) // 2], confirmed - 1)),
                    metric=min(group, key=lambda r: r.rank).metric,
                    score=max(r.peak for r in group),
                    confirmed_at=array.time_at(confirmed),
                )
            )
    return sorted(faults, key=lambda f: (f.start, f.machine))


def scan(array: MetricArray, model: MinderModel, settings: MinderSettings | None = None) -> tuple[Fault, ...]:
    """Find the faulty machines in ``array``.

    Args:
        array: fleet metrics sampled at ``model.interval_s``; metrics the model does not
            know are ignored, model metrics the array lacks are skipped.
        model: a trained :class:`~faultsense_pipelines.minder.train.MinderModel`.
        settings: scanning settings (threshold, continuity, ...); the model's when ``None``.
            Window length and denoiser size always come from the model.

    Returns:
        Faults ordered by onset then machine; empty if every machine looks like the rest.

    Raises:
        ValueError: fewer than ``min_machines`` machines, the array's interval differs from
            the model's, or they share no metric.

    Notes:
        O(n_metrics * n_machines * n_times * hidden^2) for the denoisers, which dominate;
        similarity is O(n_machines * n_times) per metric.
    """
    settings = settings or model.settings
    if len(array.machines) < settings.min_machines:
        raise ValueError(f"need at least {settings.min_machines} machines to compare, got {len(array.machines)}")
    if not math.isclose(array.interval_s, model.interval_s, rel_tol=1e-3):
        raise ValueError(f"metrics are sampled every {array.interval_s} s, the model every {model.interval_s} s")
    metrics = [m for m in model.priority if m in array.metrics]
    if not metrics:
        raise ValueError(f"no metric in common with the model (model has: {', '.join(model.metrics)})")
    runs = []
    with torch_threads(1):
        for rank, metric in enumerate(metrics):
            runs.extend(_metric_runs(model.normalize(array, metric), model, metric, rank, settings))
    return tuple(_merge(runs, array))
