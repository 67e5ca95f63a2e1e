"""Metric prioritization: which metrics reveal a faulty machine best, checked first.

Minder checks metrics in order of how well they separate faulty machines from healthy
ones, so the most telling metric confirms (and names) a fault. The order is learnt from
labelled history with a decision tree over per-metric z-scores (each machine's window mean
against the fleet's, robustly); a metric the tree splits on early and often separates
well. Without labels a fixed default order is used: direct signals of the commonest
hardware faults (NIC/PFC, GPU power and utilization) before indirect ones (CPU, memory).

References:
    Deng et al., "Minder: Faulty Machine Detection for Large-scale Distributed Model
    Training", NSDI '25 (arXiv 2411.01791), section 4.4 (metric prioritization).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.tree import DecisionTreeClassifier

__all__ = ["DEFAULT_PRIORITY", "default_priority", "learn_priority", "window_zscores"]

DEFAULT_PRIORITY = (
    "pfc_tx_packets", "net_tx_bytes", "net_rx_bytes", "gpu_power_w", "gpu_util", "gpu_temp_c",
    "nvlink_tx_bytes", "nvlink_rx_bytes", "pcie_tx_bytes", "pcie_rx_bytes", "cpu_util", "mem_used_bytes",
)  # fmt: skip


def default_priority(metrics: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Known metrics in :data:`DEFAULT_PRIORITY` order, then any others by name.

    >>> default_priority(["cpu_util", "zeta", "gpu_util", "alpha"])
    ('gpu_util', 'cpu_util', 'alpha', 'zeta')
    """
    known = [m for m in DEFAULT_PRIORITY if m in metrics]
    return tuple(known + sorted(m for m in metrics if m not in DEFAULT_PRIORITY))


def window_zscores(values: np.ndarray, window: int) -> np.ndarray:
    """Absolute robust z-score of each machine's window mean against the fleet, per metric.

    Args:
        values: (n_machines, n_times, n_metrics), NaN = missing.
        window: samples per window; the last ``n_times % window`` samples are dropped.

    Returns:
        (n_machines, n_windows, n_metrics) float array; NaN where a machine has no sample
        in a window. The scale is 1.4826 MAD across machines, floored at 1e-9.

    Examples:
        >>> v = np.array([1.0, 1.0, 2.0, 1.0, 1.0, 2.0, 6.0, 6.0]).reshape(4, 2, 1)
        >>> window_zscores(v, 2).ravel().round(2).tolist()
        [1.35, 0.0, 0.0, 12.14]
    """
    n_machines, n_times, n_metrics = values.shape
    n_windows = n_times // window
    blocks = values[:, : n_windows * window].reshape(n_machines, n_windows, window, n_metrics)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN windows are expected
        means = np.nanmean(blocks, axis=2)  # (n_machines, n_windows, n_metrics)
        median = np.nanmedian(means, axis=0, keepdims=True)
        mad = np.nanmedian(np.abs(means - median), axis=0, keepdims=True)
    return np.abs(means - median) / np.maximum(1.4826 * mad, 1e-9)


def learn_priority(
    zscores: np.ndarray, faulty: np.ndarray, metrics: tuple[str, ...], *, seed: int = 0, max_depth: int = 4
) -> tuple[str, ...]:
    """Order metrics by a decision tree's importance at telling faulty windows from healthy.

    Args:
        zscores: (n_samples, n_metrics) per-metric z-scores (NaN treated as 0: no evidence).
        faulty: (n_samples,) bool labels, True for a faulty machine's window.
        metrics: metric name of each column.
        seed: the tree's random state.
        max_depth: the tree's depth.

    Returns:
        All metrics, most important first; metrics the tree never used follow in
        :func:`default_priority` order.

    Raises:
        ValueError: shapes disagree, or the labels hold only one class.
    """
    if zscores.ndim != 2 or zscores.shape != (len(faulty), len(metrics)):
        raise ValueError(f"z-scores of shape {zscores.shape} do not match {len(faulty)} labels x {len(metrics)} metrics")
    if np.unique(faulty).size < 2:
        raise ValueError("labelled history needs both faulty and healthy windows")
    tree = DecisionTreeClassifier(max_depth=max_depth, class_weight="balanced", random_state=seed)
    tree.fit(np.nan_to_num(zscores, nan=0.0), np.asarray(faulty, bool))
    importance = dict(zip(metrics, tree.feature_importances_, strict=True))
    used = sorted((m for m in metrics if importance[m] > 0), key=lambda m: -importance[m])
    return tuple(used) + tuple(m for m in default_priority(metrics) if m not in used)
