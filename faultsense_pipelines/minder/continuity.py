"""Machine-level continuity: a fault is an outlier that stays an outlier.

A machine that is the outlier in one window may be noise, a blip, a scrape glitch. Minder
calls it faulty only when it stays the outlier for a while (default about 5 minutes; most
abnormal patterns of real faults last longer, blips do not). :func:`confirmed_runs` finds
such runs of outlier windows; :func:`estimate_onset` then dates the start of the abnormal
pattern itself, which precedes the window in which it was confirmed.

References:
    Deng et al., "Minder: Faulty Machine Detection for Large-scale Distributed Model
    Training", NSDI '25 (arXiv 2411.01791), section 4.2 (machine-level continuity).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["OutlierRun", "confirmed_runs", "estimate_onset"]


@dataclass(frozen=True)
class OutlierRun:
    """Consecutive outlier windows of one machine, long enough to be a fault.

    Attributes:
        machine: row index of the machine.
        first: first outlier window (index).
        last: last outlier window (index, inclusive).
        confirmed: window in which the run reached the required length.
        peak: highest outlier score in the run.
    """

    machine: int
    first: int
    last: int
    confirmed: int
    peak: float


def _runs_of_row(flags: np.ndarray, max_gap: int) -> list[tuple[int, int]]:
    """(first, last) of runs of True, bridging up to ``max_gap`` False between them."""
    hits = np.flatnonzero(flags)
    if hits.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(hits) > max_gap + 1)
    starts = np.concatenate(([hits[0]], hits[breaks + 1]))
    ends = np.concatenate((hits[breaks], [hits[-1]]))
    return list(zip(starts.tolist(), ends.tolist(), strict=True))


def confirmed_runs(scores: np.ndarray, threshold: float, min_windows: int, max_gap: int = 0) -> list[OutlierRun]:
    """Runs of windows in which a machine's outlier score stays above ``threshold``.

    Args:
        scores: (n_machines, n_windows) outlier scores; NaN = not compared (never an outlier).
        threshold: score above which a machine is an outlier in a window.
        min_windows: a run must span at least this many windows (first to last) to count.
        max_gap: quiet windows allowed inside a run (a flapping fault may look normal in
            one window); gaps count towards the span.

    Returns:
        The runs, ordered by machine then first window.

    Raises:
        ValueError: ``min_windows`` < 1 or ``max_gap`` < 0.

    Examples:
        Machine 1 is the outlier for windows 1-4 with one quiet window; machine 0 only once.

        >>> s = np.array([[9, 0, 0, 0, 0, 0], [0, 9, 9, 0, 9, 9]], dtype=float)
        >>> [(r.machine, r.first, r.last, r.confirmed) for r in confirmed_runs(s, 5, 3, 1)]
        [(1, 1, 5, 4)]

    Notes:
        O(n_machines * n_windows).
    """
    if min_windows < 1 or max_gap < 0:
        raise ValueError(f"need min_windows >= 1 and max_gap >= 0, got {min_windows}, {max_gap}")
    above = np.nan_to_num(scores, nan=-np.inf) > threshold
    runs = []
    for machine in np.flatnonzero(above.any(axis=1)):
        for first, last in _runs_of_row(above[machine], max_gap):
            if last - first + 1 < min_windows:
                continue
            hits = first + np.flatnonzero(above[machine, first : last + 1])
            confirmed = int(hits[np.searchsorted(hits, first + min_windows - 1)])
            peak = float(np.max(scores[machine, first : last + 1][above[machine, first : last + 1]]))
            runs.append(OutlierRun(int(machine), first, last, confirmed, peak))
    return runs


def _segment_sse(y: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Least-squares error of a step and of a hinge at every split point 1..n-1."""
    n = len(y)
    taus = np.arange(1, n)
    csum, csq = np.cumsum(y), np.cumsum(y * y)
    left_n, right_n = taus, n - taus
    left_sum, right_sum = csum[taus - 1], csum[-1] - csum[taus - 1]
    left_sq, right_sq = csq[taus - 1], csq[-1] - csq[taus - 1]
    step = (left_sq - left_sum**2 / left_n) + (right_sq - right_sum**2 / right_n)

    # hinge: y = a + b * max(0, t - t_tau); ordinary least squares on two columns
    u = np.maximum(0.0, t[None, :] - t[taus][:, None])  # (n-1, n)
    su, suu, suy = u.sum(axis=1), (u * u).sum(axis=1), (u * y[None, :]).sum(axis=1)
    sy, syy = csum[-1], csq[-1]
    det = n * suu - su**2
    with np.errstate(invalid="ignore", divide="ignore"):
        b = (n * suy - su * sy) / det
        a = (sy - b * su) / n
        hinge = syy - a * sy - b * suy
    hinge = np.where(det > 1e-12, hinge, np.inf)
    return step, hinge


def estimate_onset(deviation: np.ndarray) -> int:
    """Index at which a machine's deviation from the fleet starts to change.

    Fits one change point to ``deviation`` (the machine minus the fleet median, one value
    per sample, NaN = missing) in two shapes, a step (a sudden fault) and a hinge (flat,
    then a ramp: a slow drift), and returns the split with the least squared error.

    Args:
        deviation: (n,) float array covering some healthy samples before the fault.

    Returns:
        Index into ``deviation`` of the first abnormal sample; 0 if fewer than 3 samples
        are present.

    Examples:
        >>> estimate_onset(np.array([0.0, 0.1, -0.1, 0.0, 5.0, 5.1, 4.9, 5.0]))
        4
        >>> estimate_onset(np.array([0.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 4.0]))
        3

    Notes:
        O(n^2) for the hinge fits; ``n`` is a few hundred samples at most.
    """
    present = np.flatnonzero(~np.isnan(deviation))
    if present.size < 3:
        return 0
    y = deviation[present].astype(np.float64)
    step, hinge = _segment_sse(y, present.astype(np.float64))
    best_step, best_hinge = int(np.argmin(step)), int(np.argmin(hinge))
    if step[best_step] <= hinge[best_hinge]:
        return int(present[best_step + 1])  # first sample of the right segment
    return int(present[best_hinge + 1]) if best_hinge + 1 < present.size else int(present[-1])
