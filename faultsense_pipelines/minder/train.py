"""Train Minder on a fleet's history: per-metric normalization, denoisers, metric priority.

Minder needs no labels: each metric's LSTM-VAE learns what a window of that metric looks
like from the fleet's own history (healthy by majority: a fault touches one machine of
many). Labels, when an operator has them, only order the metrics (see
:mod:`faultsense_pipelines.minder.priority`).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from faultsense_pipelines.minder.io import MetricArray
from faultsense_pipelines.minder.model import LSTMVAE, fit_denoiser, reconstruct, torch_threads
from faultsense_pipelines.minder.priority import default_priority, learn_priority, window_zscores
from faultsense_pipelines.minder.settings import MinderSettings
from faultsense_pipelines.minder.similarity import fleet_distances
from faultsense_pipelines.minder.windows import normalization, split_windows

__all__ = ["FaultLabel", "MinderModel", "train_minder"]

_MAX_TRAINING_WINDOWS = 8192  # per metric; more adds time, not accuracy, on fleet data


@dataclass(frozen=True)
class FaultLabel:
    """A known fault in labelled history: ``machine`` was faulty from ``start`` to ``end``."""

    machine: str
    start: pd.Timestamp
    end: pd.Timestamp | None = None


@dataclass(frozen=True, eq=False)
class MinderModel:
    """A trained Minder detector.

    Attributes:
        settings: the settings it was trained with (and scans with by default).
        interval_s: sampling interval of its training data, in seconds.
        window: samples per window.
        metrics: the metrics it has a denoiser for.
        centers, scales: per-metric normalization, (n_metrics,) each, in the metric's units.
        spreads: per-metric typical spread (1.4826 MAD across machines) of the distance to
            the fleet in healthy history, (n_metrics,), normalized units: the unit of the
            outlier score.
        priority: metrics in the order a scan checks them.
        denoisers: metric -> trained :class:`~faultsense_pipelines.minder.model.LSTMVAE`.
    """

    settings: MinderSettings
    interval_s: float
    window: int
    metrics: tuple[str, ...]
    centers: np.ndarray
    scales: np.ndarray
    spreads: np.ndarray
    priority: tuple[str, ...]
    denoisers: Mapping[str, LSTMVAE] = field(repr=False)

    def normalize(self, array: MetricArray, metric: str) -> np.ndarray:
        """(n_machines, n_times) series of ``metric`` in this model's normalized units."""
        k = self.metrics.index(metric)
        column = array.values[:, :, array.metrics.index(metric)].astype(np.float64)
        return (column - self.centers[k]) / self.scales[k]


def _training_windows(x: np.ndarray, window: int, settings: MinderSettings, rng: np.random.Generator) -> np.ndarray:
    """Windows well covered by data, at half-window strides, at most a fixed number."""
    stride = max(1, window // 2)
    picked = []
    for shift in range(0, window, stride):
        windows, coverage, _ = split_windows(x[:, : x.shape[1] - shift], window)
        picked.append(windows[coverage >= max(settings.min_coverage, 0.8)])
    data = np.concatenate(picked) if picked else np.empty((0, window))
    if len(data) > _MAX_TRAINING_WINDOWS:
        data = data[rng.choice(len(data), _MAX_TRAINING_WINDOWS, replace=False)]
    return data


def _healthy_spread(x: np.ndarray, denoiser: LSTMVAE, window: int, settings: MinderSettings) -> float:
    """Median over windows of the spread of machines' distances to the fleet."""
    windows, coverage, _ = split_windows(x, window)
    distances = fleet_distances(reconstruct(denoiser, windows), coverage >= settings.min_coverage)
    enough = np.sum(~np.isnan(distances), axis=0) >= settings.min_machines
    if not enough.any():
        return settings.min_spread
    d = distances[:, enough]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        mad = np.nanmedian(np.abs(d - np.nanmedian(d, axis=0)), axis=0)
    return max(float(np.median(1.4826 * mad)), settings.min_spread)


def _labelled_priority(array: MetricArray, normalized: np.ndarray, window: int, labels: Sequence[FaultLabel]) -> tuple[str, ...]:
    """Learn the metric order from labelled history (see :func:`learn_priority`)."""
    zscores = window_zscores(normalized, window)  # (n_machines, n_windows, n_metrics)
    n_windows = zscores.shape[1]
    starts = np.array([array.time_at(w * window) for w in range(n_windows)])
    ends = np.array([array.time_at((w + 1) * window) for w in range(n_windows)])
    faulty = np.zeros(zscores.shape[:2], bool)
    row = {name: i for i, name in enumerate(array.machines)}
    for label in labels:
        if label.machine not in row:
            raise ValueError(f"labelled machine {label.machine!r} is not in the metrics")
        end = pd.Timestamp.max.tz_localize("UTC") if label.end is None else label.end
        faulty[row[label.machine]] |= (ends > label.start) & (starts < end)
    return learn_priority(zscores.reshape(-1, len(array.metrics)), faulty.ravel(), array.metrics)


def train_minder(array: MetricArray, settings: MinderSettings | None = None, labels: Sequence[FaultLabel] = ()) -> MinderModel:
    """Fit normalization and one LSTM-VAE denoiser per metric on a fleet's history.

    Args:
        array: fleet history (mostly healthy).
        settings: training and scanning settings; defaults when ``None``.
        labels: known faults; when given, they order the metrics (decision tree),
            otherwise :func:`~faultsense_pipelines.minder.priority.default_priority`.

    Returns:
        The trained :class:`MinderModel`.

    Raises:
        ValueError: fewer than ``min_machines`` machines, too little history for one
            window, a metric with no usable window, or a label on an unknown machine.
    """
    with torch_threads(1):
        return _train(array, settings or MinderSettings(), labels)


def _train(array: MetricArray, settings: MinderSettings, labels: Sequence[FaultLabel]) -> MinderModel:
    window = settings.window_samples(array.interval_s)
    if len(array.machines) < settings.min_machines:
        raise ValueError(f"need at least {settings.min_machines} machines to train, got {len(array.machines)}")
    if array.n_times < window:
        raise ValueError(f"need at least {window} samples ({settings.window_s} s) of history, got {array.n_times}")
    rng = np.random.default_rng(settings.seed)
    centers, scales, spreads, denoisers = [], [], [], {}
    normalized = np.empty(array.values.shape, np.float64)
    for k, metric in enumerate(array.metrics):
        center, scale = normalization(array.values[:, :, k])
        centers.append(center)
        scales.append(scale)
        normalized[:, :, k] = (array.values[:, :, k] - center) / scale
        data = _training_windows(normalized[:, :, k], window, settings, rng)
        if len(data) == 0:
            raise ValueError(f"metric {metric!r} has no window with enough samples to train on")
        denoisers[metric] = fit_denoiser(
            data,
            hidden=settings.hidden,
            latent=settings.latent,
            steps=settings.train_steps,
            batch_size=settings.batch_size,
            learning_rate=settings.learning_rate,
            kl_weight=settings.kl_weight,
            seed=settings.seed + k,
        )
        spreads.append(_healthy_spread(normalized[:, :, k], denoisers[metric], window, settings))
    priority = _labelled_priority(array, normalized, window, labels) if labels else default_priority(array.metrics)
    return MinderModel(
        settings=settings,
        interval_s=array.interval_s,
        window=window,
        metrics=array.metrics,
        centers=np.asarray(centers),
        scales=np.asarray(scales),
        spreads=np.asarray(spreads),
        priority=priority,
        denoisers=denoisers,
    )
