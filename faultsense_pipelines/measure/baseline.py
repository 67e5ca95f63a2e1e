"""A sweep read against the time it was measured: a time-local baseline, each probe's excess
over it, and the noise scale of one measurement.

Phase 1 measures every probe once per round, round after round. Load on a serving replica
moves in time (bursts, drift), so one baseline for the whole sweep makes the probes measured
during a burst look slow. Here the baseline at each measurement is a low quantile of the
measurements taken around it (:func:`time_detrended`), a probe's *excess* is the median log
of its measurements over that baseline (:func:`detrended_excess`), and the noise scale of one
measurement is estimated robustly (:func:`estimate_sigma`, MAD x 1.4826).

Nothing here decides a verdict: the drill-downs read these to choose what to test
(:mod:`faultsense_pipelines.localize.sequential`).

References:
    P. J. Rousseeuw and C. Croux, "Alternatives to the median absolute deviation",
    JASA 88 (1993).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import numpy as np

__all__ = [
    "BASELINE_QUANTILE",
    "detrended_excess",
    "estimate_sigma",
    "measurement_order",
    "phase1_timeline",
    "time_detrended",
    "time_detrended_excess",
]


#: Quantile of the moving window taken as the baseline: faults only add latency, so a low
#: quantile stays on the healthy probes where several faults make half a window slow.
BASELINE_QUANTILE = 0.3


def _low_quantile(values: Sequence[float]) -> float:
    ordered = sorted(values)
    pos = BASELINE_QUANTILE * (len(ordered) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def measurement_order(latencies: Sequence[Sequence[float]]) -> list[tuple[int, int]]:
    """``(probe, repeat)`` of every measurement in the order Phase 1 took them: every probe
    once per round, round after round (``latencies[i][j]`` is probe i's j-th repeat)."""
    return [
        (i, j)
        for j in range(max((len(lat) for lat in latencies), default=0))
        for i in range(len(latencies))
        if j < len(latencies[i])
    ]


def phase1_timeline(latencies: Sequence[Sequence[float]]) -> list[tuple[int, float]]:
    """Every measurement as ``(probe, log latency)`` in the order taken (:func:`measurement_order`).

    >>> phase1_timeline([[10.0, 20.0], [10.0]])
    [(0, 2.302585092994046), (1, 2.302585092994046), (0, 2.995732273553991)]
    """
    return [(i, math.log(latencies[i][j])) for i, j in measurement_order(latencies) if latencies[i][j] > 0]


def time_detrended(latencies: Sequence[Sequence[float]], baseline_ms: float, window: int = 9) -> list[list[float]]:
    """Every measurement over the baseline at the time it was taken: ``latency / baseline``.

    Phase 1 measures every probe once per round, round after round (``latencies[i][j]`` is
    probe i's j-th repeat; :func:`measurement_order`). The baseline at a measurement is a low
    quantile (:data:`BASELINE_QUANTILE`) of the ``window`` measurements around it in that
    order, so a load burst or drift lifts the baseline, not the probes it hit; a slow probe
    among healthy neighbours stays slow, even where slow probes fill half the window.

    Args:
        latencies: per probe, its latencies in ms (empty on error), all > 0.
        baseline_ms: fallback baseline (ms) when too few neighbours were measured.
        window: measurements in the moving window (odd, >= 3).

    Returns:
        Per probe, one ratio (dimensionless, > 0) per latency, in repeat order.

    Three probes, the second 2x slow, in two rounds with the load 1.3x higher in the second:
    the slow probe reads 2x in both; where the window straddles the step it mixes the two
    levels (probe 2's first and probe 0's second ratio):

    >>> [[round(r, 2) for r in row] for row in time_detrended([[10.0, 13.0], [20.0, 26.0], [10.0, 13.0]], 10.0, 3)]
    [[1.0, 1.1], [2.0, 2.0], [0.85, 1.0]]
    """
    counts = [len(lat) for lat in latencies]
    repeats = max(counts, default=0)
    uniform = all(c == repeats for c in counts)
    if uniform:  # every probe measured as often: round j is row j of a (repeats, P) array
        values = np.array(latencies, dtype=float).reshape(len(latencies), repeats).T.ravel()
    else:
        order = measurement_order(latencies)
        values = np.array([latencies[i][j] for i, j in order], dtype=float)
    local = _moving_low_quantile(values, window, baseline_ms)
    ratios = (values / local).tolist()
    if uniform:
        return [ratios[i :: len(latencies)] for i in range(len(latencies))] if repeats else [[] for _ in latencies]
    per_probe: list[list[float]] = [[] for _ in latencies]
    for (i, _), r in zip(order, ratios, strict=True):
        per_probe[i].append(r)
    return per_probe


def _moving_low_quantile(values: np.ndarray, window: int, fallback: float) -> np.ndarray:
    """At each of ``values`` (shape ``(N,)``), the :data:`BASELINE_QUANTILE` of the
    ``window`` values around it (shifted inward at the ends; all of them where fewer exist),
    or ``fallback`` where fewer than 3 exist; shape ``(N,)``. Linear interpolation between
    order statistics, as :func:`_low_quantile`; sorted in blocks so memory stays
    O(block x window)."""
    count = len(values)
    if count < 3:
        return np.full(count, fallback)
    if count <= window:
        return np.full(count, _low_quantile(values.tolist()))
    rows = np.lib.stride_tricks.sliding_window_view(values, window)  # (count - window + 1, window)
    pos = BASELINE_QUANTILE * (window - 1)
    lo, frac = int(pos), pos - int(pos)
    hi = min(lo + 1, window - 1)
    q = np.empty(len(rows))
    block = 1 << 16
    for start in range(0, len(rows), block):
        part = np.sort(rows[start : start + block], axis=1)
        q[start : start + block] = part[:, lo] + (part[:, hi] - part[:, lo]) * frac
    first = np.clip(np.arange(count) - window // 2, 0, count - window)
    return q[first]


def time_detrended_excess(latencies: Sequence[Sequence[float]], baseline_ms: float, window: int = 9) -> list[float | None]:
    """Per probe, ``x = log(latency / baseline at the time it was measured)``: the median over
    its repeats of :func:`time_detrended`'s ratios, in log space; ``None`` for a probe with no
    latency. Arguments as :func:`time_detrended`.

    A slow probe among healthy ones stays slow (0.693 = log 2); a burst that lifts the last
    eight measurements by 30% lifts the baseline instead, but for its first measurement, at
    the window's edge:

    >>> lat = [[10.0]] * 6 + [[20.0]] + [[10.0]] * 2 + [[13.0]] * 8
    >>> [round(x, 3) + 0.0 for x in time_detrended_excess(lat, 10.0, 5)]
    [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.693, 0.0, -0.058, 0.204, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    """
    return detrended_excess(time_detrended(latencies, baseline_ms, window))


def detrended_excess(detrended: Sequence[Sequence[float]]) -> list[float | None]:
    """Per probe, the median log of its :func:`time_detrended` ratios; ``None`` where it has none.

    >>> [None if x is None else round(x, 3) for x in detrended_excess([[1.0, 2.0, 2.0], []])]
    [0.693, None]
    """
    out: list[float | None] = [None] * len(detrended)
    by_count: dict[int, list[int]] = {}
    for i, rs in enumerate(detrended):
        if rs:
            by_count.setdefault(len(rs), []).append(i)
    for count, rows in by_count.items():  # one median per row of a (probes, count) array
        medians = np.median(np.log(np.array([detrended[i] for i in rows], dtype=float).reshape(len(rows), count)), axis=1)
        for i, v in zip(rows, medians.tolist(), strict=True):
            out[i] = v
    return out


def estimate_sigma(latencies: Sequence[Sequence[float]], excess: Sequence[float | None], suspects: Sequence[int]) -> float:
    """Noise scale of one measurement's log-latency, from Phase 1 (robust: MAD x 1.4826).

    The larger of two estimates: the spread of the repeats of each probe around their median
    (corrected for the median's own closeness to its sample), and the spread of the
    time-detrended excess of the probes that are not suspect (divided back to one
    measurement). Either alone can be too small: a replica of a few probes, or a sweep of one
    repeat.

    Pass the repeats as :func:`time_detrended` ratios: a probe's repeats are taken rounds
    apart, so raw latencies would count the load's drift and bursts between rounds as noise,
    while a paired Phase 2 test (its two probes measured side by side) cancels them.

    Args:
        latencies: per probe, its repeats (ms, or ratios to the baseline; all > 0 count).
        excess: per probe, the time-detrended excess (:func:`time_detrended_excess`).
        suspects: indices of the probes left out of the second estimate.

    Returns:
        The noise scale in log space (>= 0).

    >>> round(estimate_sigma([[10.0, 10.5, 9.5]] * 8, [0.0] * 8, []), 3)
    0.089
    """
    within = [abs(math.log(v / statistics.median(lat))) for lat in latencies if len(lat) >= 2 for v in lat if v > 0]
    repeats = max((len(lat) for lat in latencies), default=1)
    est = 0.0
    if within:
        est = 1.4826 * statistics.median(within) * math.sqrt(repeats / max(1, repeats - 1))
    left_out = set(suspects)  # built once: a set per probe costs O(probes x suspects)
    between = [x for i, x in enumerate(excess) if x is not None and i not in left_out]
    if len(between) >= 5:
        center = statistics.median(between)
        spread = 1.4826 * statistics.median(abs(x - center) for x in between)
        est = max(est, spread * (math.sqrt(repeats) / 1.2533 if repeats > 1 else 1.0))
    return est
