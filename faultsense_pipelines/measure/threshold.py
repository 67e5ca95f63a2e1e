"""A probe's latency against a slow threshold: the median of its repeats, and the three zones.

The primitives every judgement of a measured probe shares, in both phases: its latency is the
median of its repeats (:func:`probe_latency_ms`); it is slow when its log-latency lies above the
threshold by more than rounding (:func:`log_above`, :data:`LOG_TIE`); and near the threshold it
is measured again before it is called (:func:`probe_zone`). The suspect rules of
:mod:`faultsense_pipelines.localize.suspects` and the measurements of :mod:`.repeats` and
:mod:`.rounds` use them (the rules re-export them).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Literal

import numpy as np

__all__ = ["LOG_TIE", "Zone", "log_above", "probe_fails", "probe_latencies_ms", "probe_latency_ms", "probe_zone"]

#: Two log-latencies closer than this are equal (a latency ratio within 1 +- 1e-9): the gap
#: is floating-point rounding, not measurement. Scaling every latency by c adds log c to
#: every log-latency and to the baseline, exactly in arithmetic but not in floating point, so
#: a probe exactly at a threshold ([1.0, 1.0, 1.1] at min_slowdown 1.1) would otherwise turn
#: suspect under some factors (0.875) and not others. Every threshold comparison of the rules
#: and of :func:`probe_zone` goes through :func:`log_above`.
LOG_TIE = 1e-9

#: The three zones of one probe's judgement (:func:`probe_zone`).
Zone = Literal["fail", "pass", "again"]


def log_above(x: float, limit: float) -> bool:
    """True when the log-latency (or log-ratio) ``x`` lies above ``limit`` by more than rounding.

    Args:
        x: a log-latency or log-ratio (log ms, or dimensionless).
        limit: the threshold in the same units.

    Returns:
        ``x - limit > LOG_TIE`` (:data:`LOG_TIE`): ties within rounding are not above, so
        a comparison does not change when every latency is scaled by the same factor.

    >>> log_above(math.log(0.875 * 1.1), math.log(0.875) + math.log(1.1))
    False
    >>> log_above(math.log(1.2), math.log(1.1))
    True
    """
    return x - limit > LOG_TIE


def probe_zone(x: float, t: float, *, remeasured: bool = False) -> Zone:
    """The three-zone judgement of one probe: fail, pass, or measure it again.

    Used by both phases (``measure.repeats.judge_probe``, ``measure.rounds.judge_against_reference``,
    ``localize.driver.run_phase1``'s re-measurement, ``localize.anchor.anchor_sweep``). A slowdown near the
    threshold would otherwise pass or fail by the toss of the noise, and a faulty GPU that
    passes once is exonerated and lets its slowness be blamed on its links.

    Args:
        x: log(latency / healthy latency) of the probe (latency: the median of its
            repeats; the healthy latency: the sweep's baseline, or a healthy reference
            probe measured alongside it).
        t: log(threshold / healthy latency), the slow threshold in log terms (> 0).
        remeasured: the probe was measured again (2 x repeats more) and ``x`` is over all
            of its latencies: the zone between is then settled at t/2.

    Returns:
        ``"fail"`` when x > t, ``"pass"`` when x <= t/2 (above the threshold's square root
        in latency terms is not a pass), otherwise ``"again"``; with ``remeasured``,
        ``"fail"`` when x > t/2, else ``"pass"``. Ties within :data:`LOG_TIE` are not above.

    >>> t = math.log(1.2)
    >>> probe_zone(math.log(1.3), t), probe_zone(math.log(1.05), t), probe_zone(math.log(1.15), t)
    ('fail', 'pass', 'again')
    >>> probe_zone(math.log(1.15), t, remeasured=True)
    'fail'
    """
    if remeasured:
        return "fail" if log_above(x, t / 2) else "pass"
    if log_above(x, t):
        return "fail"
    return "again" if log_above(x, t / 2) else "pass"


def probe_latency_ms(repeats_ms: Sequence[float]) -> float:
    """The latency of one probe: the median of its repeats, ms.

    Raises:
        ValueError: if there is no repeat or a repeat is not finite and > 0.
    """
    if not repeats_ms:
        raise ValueError("a probe needs at least one latency")
    for v in repeats_ms:
        if not math.isfinite(v) or v <= 0:
            raise ValueError(f"latency_ms must be finite and > 0, got {v!r}")
    return float(statistics.median(repeats_ms))


def probe_latencies_ms(latencies_ms: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    """:func:`probe_latency_ms` of every probe of a sweep: the median of each probe's repeats.

    One array computation when every probe has the same number of repeats, all finite and
    > 0 (the median of r floats is the same float either way: the middle one, or the mean of
    the two middle ones), else probe by probe, which raises on the first bad probe.

    Args:
        latencies_ms: per probe, its repeats (ms): lists, or one ``(P, r)`` float array.

    Returns:
        Shape ``(P,)`` float array, ms.

    Raises:
        ValueError: no probe, or a probe as :func:`probe_latency_ms` rejects it.

    >>> probe_latencies_ms([[10.0, 13.0, 12.0], [9.0, 11.0]]).tolist()
    [12.0, 10.0]
    """
    if not len(latencies_ms):
        raise ValueError("a sweep needs at least one measured probe")
    if isinstance(latencies_ms, np.ndarray) or len({len(r) for r in latencies_ms}) == 1:
        a = np.asarray(latencies_ms, dtype=np.float64)
        if a.ndim == 2 and a.shape[1] and np.isfinite(a).all() and (a > 0).all():
            out: np.ndarray = a[:, 0] if a.shape[1] == 1 else np.median(a, axis=1)
            return out
    return np.asarray([probe_latency_ms(r) for r in latencies_ms], dtype=np.float64)


def probe_fails(repeats_ms: Sequence[float], threshold_ms: float) -> bool:
    """True when the probe's median latency exceeds ``threshold_ms`` (ms) by more than rounding.

    Raises:
        ValueError: as :func:`probe_latency_ms`.

    >>> probe_fails([10.0, 13.0, 12.5], 12.0)
    True
    """
    return log_above(math.log(probe_latency_ms(repeats_ms)), math.log(threshold_ms))
