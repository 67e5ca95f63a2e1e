"""Machine-level similarity: in each window, how far is each machine from all the others?

Machines in one synchronous training job do the same work, so their (denoised) metric
windows look alike; a faulty machine's window is far from everyone else's. For window
``w`` and machine ``i`` with series ``a_i`` (W samples), the *distance to the fleet* is the
root-mean-square Euclidean distance to every other compared machine,

    d_i = sqrt( 1/((m-1) W) * sum_{j != i} ||a_i - a_j||^2 ),

and the *outlier score* is its robust z-score across machines,

    z_i = (d_i - median_j d_j) / max(1.4826 * MAD_j d_j, min_spread).

A change that hits every machine at once moves every ``a_i`` together and leaves every
``d_i`` unchanged, so a job-wide slowdown is never an outlier.

References:
    Deng et al., "Minder: Faulty Machine Detection for Large-scale Distributed Model
    Training", NSDI '25 (arXiv 2411.01791), section 4.1 (machine-level similarity).
"""

from __future__ import annotations

import numpy as np

from faultsense_pipelines.minder.windows import fleet_median

__all__ = ["fleet_distances", "outlier_scores"]


def fleet_distances(windows: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """RMS distance of each machine's window to every other valid machine's window.

    Args:
        windows: (n_machines, n_windows, W) series, finite where ``valid``.
        valid: (n_machines, n_windows) bool, which machines take part in each window.

    Returns:
        (n_machines, n_windows) float array; NaN where invalid or fewer than 2 machines.

    Notes:
        All pairs in O(n W) per window rather than O(n^2 W), from the identity
        ``sum_j ||a_i - a_j||^2 = m ||a_i - c||^2 + sum_j ||a_j - c||^2`` with ``c`` the
        mean of the ``m`` valid windows.

    Examples:
        Three machines, one-sample windows 0, 0 and 3: machine 2 is 3 away from both others,
        machines 0 and 1 are 0 and 3 away from the other two.

        >>> w = np.array([[[0.0]], [[0.0]], [[3.0]]])
        >>> fleet_distances(w, np.ones((3, 1), bool)).ravel().round(3).tolist()
        [2.121, 2.121, 3.0]
    """
    _n_machines, _n_windows, length = windows.shape
    mask = valid[..., None]
    m = valid.sum(axis=0).astype(np.float64)  # (n_windows,)
    x = np.where(mask, windows, 0.0).astype(np.float64)
    centroid = x.sum(axis=0) / np.maximum(m, 1)[:, None]  # (n_windows, W)
    to_centroid = np.where(valid, ((x - centroid[None]) ** 2).sum(axis=2), 0.0)  # (n_machines, n_windows)
    spread = to_centroid.sum(axis=0)  # (n_windows,)
    with np.errstate(invalid="ignore", divide="ignore"):
        squared = (m * to_centroid + spread) / ((m - 1) * length)
        distance = np.sqrt(np.maximum(squared, 0.0))
    return np.where(valid & (m >= 2), distance, np.nan)


def outlier_scores(distances: np.ndarray, *, min_spread: float, min_machines: int = 4) -> np.ndarray:
    """Robust z-score of each machine's distance to the fleet, per window.

    Args:
        distances: (n_machines, n_windows) from :func:`fleet_distances`, NaN = not compared.
        min_spread: floor on the scale (1.4826 MAD) in the distances' units.
        min_machines: windows with fewer compared machines get no scores.

    Returns:
        (n_machines, n_windows) float array; NaN where not compared.

    Examples:
        >>> d = np.array([[1.0], [1.1], [0.9], [1.0], [5.0]])
        >>> outlier_scores(d, min_spread=0.01).ravel().round(2).tolist()
        [0.0, 0.67, -0.67, 0.0, 26.98]
    """
    counted = np.sum(~np.isnan(distances), axis=0)
    usable = counted >= min_machines
    safe = np.where(usable[None, :], distances, np.nan)
    if not usable.any():
        return np.full(distances.shape, np.nan)
    median = fleet_median(safe[:, usable])
    mad = fleet_median(np.abs(safe[:, usable] - median[None, :]))
    scores = np.full(distances.shape, np.nan)
    scores[:, usable] = (safe[:, usable] - median[None, :]) / np.maximum(1.4826 * mad, min_spread)[None, :]
    return scores
