"""Noise of probe latencies: how far a healthy probe's measured latency strays, estimated robustly.

Gray failures are judged against noise: a probe is slow only when it stands further above
the healthy baseline than measurement noise can carry it. Two robust estimates of that
noise, both on log-latencies (lognormal noise of sigma s becomes additive noise of s):

* *between* probes -- the median absolute deviation (MAD) of the healthy probes of one
  sweep, x 1.4826 to estimate a normal sigma (:func:`location_and_threshold`);
* *within* probes -- the MAD of each probe's repeats around its own median, pooled over the
  sweep (:func:`repeat_noise`): a fault slows every repeat of a probe alike, so it cannot
  inflate this one.

:class:`~faultsense_pipelines.localize.suspects.RobustRule` uses both to set its threshold.

References:
    P. J. Rousseeuw and C. Croux, "Alternatives to the median absolute deviation",
    JASA 88 (1993); FaultSense (APSys '26), §4.2 (median-relative threshold).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

import numpy as np

__all__ = ["MAD_TO_SIGMA", "location_and_threshold", "repeat_noise"]

MAD_TO_SIGMA = 1.4826  # MAD of a normal sample x 1.4826 = its standard deviation


def repeat_noise(latencies_ms: Sequence[Sequence[float]]) -> tuple[float, int] | None:
    """Noise sigma of a probe's latency (median of its repeats) estimated from the repeats.

    Pools the log-residuals r = log(latency) - log(median of the probe's repeats) of every
    probe (less the median repeat itself): sigma = 1.4826 x median |r| is the per-repeat
    noise, and the median of R repeats has about 1.2533 x sigma / sqrt(R) (asymptotic
    efficiency of the median). Only the
    spread *within* probes is used, so a fault (which slows every repeat of a probe alike)
    does not inflate it, unlike the spread between probes.

    Args:
        latencies_ms: per probe, its repeats, ms (all > 0).

    Returns:
        (sigma of a probe's median, number of pooled residuals), or ``None`` unless every
        probe has at least 3 repeats (too few to tell noise from nothing).

    >>> round(repeat_noise([[10.0, 11.0, 9.0]] * 4)[0], 3)
    0.108
    """
    if isinstance(latencies_ms, np.ndarray):  # (P, repeats): every probe has shape[1] repeats
        if latencies_ms.ndim != 2 or not len(latencies_ms) or latencies_ms.shape[1] < 3:
            return None
        latencies_ms = latencies_ms.tolist()
    if not latencies_ms or min(len(r) for r in latencies_ms) < 3:
        return None
    resid: list[float] = []
    for r in latencies_ms:
        m = math.log(statistics.median(r))
        dev = sorted(abs(math.log(v) - m) for v in r)
        resid.extend(dev[1:] if len(r) % 2 else dev)  # an odd sample's median is its own: r = 0
    sigma = MAD_TO_SIGMA * float(statistics.median(resid))
    return 1.2533 * sigma / math.sqrt(statistics.median(len(r) for r in latencies_ms)), len(resid)


def location_and_threshold(
    x: Sequence[float] | np.ndarray, z: float, floor: float, rep: tuple[float, int] | None = None
) -> tuple[float, float, float]:
    """Baseline b, threshold offset t and between-probe spread (sigma, widened) of the healthy ``x``.

    The scale is the MAD of the healthy probes, widened by one standard deviation of its
    own sampling error (~1.2 / sqrt(m)). With repeats (``rep``), a small healthy set
    (m < 8: its MAD is mostly luck) uses the pooled repeat noise instead, and a large one
    the larger of both.

    Args:
        x: log-latencies of the probes judged healthy (log ms), m of them.
        z: the normal quantile of the rule's false-alarm budget.
        floor: the smallest threshold offset, log(min_slowdown).
        rep: :func:`repeat_noise` of the sweep, or ``None`` without repeats.

    Returns:
        (b, t, spread): the median of ``x``, ``max(z * scale, floor)``, and the widened
        MAD sigma of ``x`` (all in log); ``(inf, floor, 0.0)`` for an empty ``x``.

    Notes:
        O(m log m).

    Median 0.025, MAD 0.05, spread 1.4826 x 0.05 x (1 + 1.2 / sqrt(4)) = 0.1186, t = 3 x 0.1186:

    >>> b, t, spread = location_and_threshold([0.0, 0.1, -0.1, 0.05], 3.0, 0.05)
    >>> b, round(t, 4), round(spread, 4)
    (0.025, 0.3558, 0.1186)
    """
    if not len(x):  # every probe trimmed: cannot happen from the median start, guard anyway
        return math.inf, floor, 0.0
    xa = np.asarray(x, dtype=np.float64)  # np.median: the middle value, or the two middle ones' mean
    b = float(np.median(xa))
    spread = MAD_TO_SIGMA * float(np.median(np.abs(xa - b))) * (1.0 + 1.2 / math.sqrt(len(xa)))
    scale = spread
    if rep is not None:
        noise = rep[0] * (1.0 + 1.2 / math.sqrt(rep[1]))
        scale = noise if len(x) < 8 else max(spread, noise)
    return b, max(z * scale, floor), spread
