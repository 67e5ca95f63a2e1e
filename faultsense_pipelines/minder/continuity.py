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


def _split_sse(y: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Least-squares error of "constant, then a line" split before each of samples 1..n-1.

    ``sse[k - 1]`` is the error of fitting ``y[:k]`` by its mean and ``y[k:]`` by a straight
    line in ``t`` (its own intercept and slope), from running sums in O(n).
    """
    n = len(y)
    k = np.arange(1, n)
    csum, csq = np.cumsum(y), np.cumsum(y * y)
    left = csq[k - 1] - csum[k - 1] ** 2 / k
    t = t - t.mean()  # conditioning of the running sums

    def tail(a: np.ndarray) -> np.ndarray:  # sums of a[k:] for k = 1..n-1
        return np.cumsum(a[::-1])[::-1][1:]

    m = n - k
    sy, st = tail(y), tail(t)
    syy = tail(y * y) - sy**2 / m
    stt = tail(t * t) - st**2 / m
    sty = tail(t * y) - st * sy / m
    with np.errstate(invalid="ignore", divide="ignore"):
        right = np.where(stt > 1e-9, syy - sty**2 / stt, 0.0)  # one sample: a line fits exactly
    return left + np.maximum(right, 0.0)


def estimate_onset(deviation: np.ndarray) -> int:
    """Index at which a machine's deviation from the fleet starts to change.

    Fits one change point to ``deviation`` (the machine minus the fleet median, one value
    per sample, NaN = missing): a constant level (the machine's own healthy offset) up to
    the change, then a straight line with its own intercept and slope, by least squares over
    every split. The model holds a step (a sudden fault: a jump, no slope), a hinge (a slow
    drift: no jump, a slope) and anything between; a flapping fault, whose level jumps about
    after the onset, is fit by a noisy line from the jump on rather than by a ramp that starts
    early (which choosing between a pure step and a pure hinge did, see docs/minder.md). This
    is the one-break "change in level and trend" model of segmented regression; the onset
    estimate is this project's addition to Minder's continuity step (section 4.2), which
    confirms a fault but is not what dates it.

    Args:
        deviation: (n,) float array covering some healthy samples before the fault.

    Returns:
        Index into ``deviation`` of the first abnormal sample; 0 if fewer than 3 samples
        are present.

    Examples:
        >>> estimate_onset(np.array([0.0, 0.1, -0.1, 0.0, 5.0, 5.1, 4.9, 5.0]))
        4
        >>> estimate_onset(np.array([0.0, 0.1, -0.1, 0.0, 1.0, 2.1, 2.9, 4.0]))
        4

    Notes:
        O(n).
    """
    present = np.flatnonzero(~np.isnan(deviation))
    if present.size < 3:
        return 0
    sse = _split_sse(deviation[present].astype(np.float64), present.astype(np.float64))
    return int(present[int(np.argmin(sse)) + 1])  # first sample of the right segment
