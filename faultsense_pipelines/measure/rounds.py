"""Interleaved measurement: repeats taken in rounds, and probes judged against a reference.

On a real replica the latency of a probe moves with everything else the machine does (other
tenants, a burst of CPU load, clock changes). If the ``repeats`` of one probe are taken back
to back, a burst that lasts a few hundred ms lands on all repeats of that probe and on none
of the others, and reads as a slow probe. Two defences, both relative (a uniform shift of
every latency changes nothing):

* **Rounds** (Phase 1). Every probe is measured once, then every probe again, and so on:
  repeat j of every probe belongs to round j, taken within a short window. A load burst
  lifts a whole round; :func:`detrend_rounds` divides each round by its own median (relative
  to the median of all rounds), so a burst no longer moves one probe against another.
* **Reference** (Phase 2). Each test probe is measured in turn with a *reference* probe
  known to be healthy (it passed Phase 1), and judged by the ratio of their medians
  (:func:`reference_ratio`) instead of against a baseline measured minutes earlier.

References:
    FaultSense (APSys '26), §4.2 (median-relative suspect rule), §4.3 (drill-down probes
    padded with healthy GPUs); the paired, blocked design is the classic remedy for drifting
    nuisance factors (G. E. P. Box, J. S. Hunter and W. G. Hunter, *Statistics for
    Experimenters*, 2nd ed., Wiley 2005, ch. 4 "Blocking").
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import overload

import numpy as np

from ..replica.executor import ProbeExecutor, ProbeMeasurement
from .batch import batched, measure
from .threshold import probe_latency_ms, probe_zone

__all__ = ["detrend_rounds", "judge_against_reference", "measure_pair", "measure_rounds", "paired_log_ratio", "reference_ratio"]


def measure_rounds(executor: ProbeExecutor, probes: Sequence[Sequence[int]], repeats: int) -> list[ProbeMeasurement]:
    """Measure every probe ``repeats`` times, one round over all probes at a time.

    Args:
        executor: runs the probes.
        probes: the probes (GPU ids), in order.
        repeats: rounds (>= 1).

    Returns:
        One measurement per probe, in order; latencies in round order (ms). A probe whose
        run fails in some round is an error measurement and is skipped in later rounds.
    """
    lat: list[list[float]] = [[] for _ in probes]
    error: list[str | None] = [None] * len(probes)
    batch = batched(executor)
    for _ in range(repeats):
        alive = [i for i in range(len(probes)) if error[i] is None]
        for i, m in zip(alive, batch.run_many([probes[i] for i in alive], 1), strict=True):
            if m.ok:
                lat[i].extend(m.latencies_ms)
            else:
                error[i] = m.error
    return [
        ProbeMeasurement(tuple(sorted(p)), () if e else tuple(v), error=e) for p, v, e in zip(probes, lat, error, strict=True)
    ]


def measure_pair(
    executor: ProbeExecutor, test: Sequence[int], reference: Sequence[int], repeats: int, *, test_first: bool = True
) -> tuple[ProbeMeasurement, ProbeMeasurement]:
    """Measure a test probe and a reference probe one measurement each in turn, ABBA order.

    Round j takes one measurement of each; the round's first probe alternates (``test_first``:
    test, reference, reference, test, test, ...). A load burst that begins or ends inside the
    pair then falls between the two measurements of at most one round, and a linear drift
    cancels over two rounds, so the per-round ratios (:func:`paired_log_ratio`) see it in at
    most one of ``repeats`` rounds. Taking the test's repeats back to back and then the
    reference's would put a burst edge between the two probes' medians in about half the
    positions it can fall.

    Args:
        executor: runs the probes.
        test, reference: the two probes' GPU ids.
        repeats: rounds (>= 1).
        test_first: whether round 0 measures the test probe first.

    Returns:
        ``(test, reference)`` measurements, latencies in round order (ms). After the first
        error of either probe no further round is taken; the probe that failed carries the
        error and no latency.

    Raises:
        ValueError: ``repeats < 1``.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    probes = (tuple(test), tuple(reference))
    lat: tuple[list[float], list[float]] = ([], [])
    error: list[str | None] = [None, None]
    for j in range(repeats):
        order = (0, 1) if (j % 2 == 0) == test_first else (1, 0)
        for side in order:
            m = measure(executor, probes[side], 1)
            if not m.ok:
                error[side] = m.error
                break
            lat[side].extend(m.latencies_ms)
        if error[0] is not None or error[1] is not None:
            break
    t, r = (
        ProbeMeasurement(tuple(sorted(p)), () if e else tuple(v), error=e) for p, v, e in zip(probes, lat, error, strict=True)
    )
    return t, r


def paired_log_ratio(test_ms: Sequence[float], reference_ms: Sequence[float]) -> float:
    """``d``: the median over rounds of ``log(test_j / reference_j)`` (repeats taken in pairs).

    Args:
        test_ms, reference_ms: one latency per round each (ms, finite and > 0), as
            :func:`measure_pair` returns them; equal lengths.

    Raises:
        ValueError: unequal lengths, no round, or a latency that is not finite and > 0.

    A burst (x1.3) over the last rounds shifts one round's ratio only:

    >>> round(paired_log_ratio([10.0, 13.0, 13.0], [10.0, 10.0, 13.0]), 6)
    0.0
    """
    if len(test_ms) != len(reference_ms):
        raise ValueError(f"paired probes need one latency each per round, got {len(test_ms)} and {len(reference_ms)}")
    probe_latency_ms(test_ms), probe_latency_ms(reference_ms)  # validates: non-empty, finite, > 0
    return float(statistics.median(math.log(t / r) for t, r in zip(test_ms, reference_ms, strict=True)))


@overload
def detrend_rounds(latencies_ms: np.ndarray) -> np.ndarray: ...


@overload
def detrend_rounds(latencies_ms: Sequence[Sequence[float]]) -> list[list[float]]: ...


def detrend_rounds(latencies_ms: Sequence[Sequence[float]] | np.ndarray) -> list[list[float]] | np.ndarray:
    """Remove each round's common factor from latencies taken in rounds.

    ``latencies_ms[i][j]`` is probe i in round j (every probe the same number of rounds).
    Each round is divided by f_j = median_i(latency[i][j]) / median_j(f'_j) with
    f'_j = median_i(latency[i][j]): a round taken during a burst of load is scaled back to
    a typical round. Differences between probes within a round are kept exactly, so a
    probe that is slow in every round stays slow by the same ratio.

    Args:
        latencies_ms: per probe, one latency per round, ms, all > 0: lists, or one
            ``(P, R)`` float array (a sweep of millions of probes).

    Returns:
        The detrended latencies, same shape, ms: lists for lists, an array for an array
        (the same floats either way). A single round, no probe, or probes with unequal
        round counts, are returned unchanged (lists as new lists, an array as itself).

    Notes:
        O(P R log P) for P probes and R rounds. Multiplying every latency by c returns the
        input's detrended latencies times c. With a fault on up to half of the probes the
        round median moves by the same amount in every round, so faults are not removed.

    >>> detrend_rounds([[10.0, 20.0], [30.0, 60.0]])
    [[15.0, 15.0], [45.0, 45.0]]
    >>> detrend_rounds(np.array([[10.0, 20.0], [30.0, 60.0]])).tolist()
    [[15.0, 15.0], [45.0, 45.0]]
    """
    if isinstance(latencies_ms, np.ndarray):
        return _detrended(latencies_ms)
    rows = [list(r) for r in latencies_ms]
    if len({len(r) for r in rows}) != 1 or len(rows[0]) <= 1:
        return rows
    out: list[list[float]] = _detrended(np.asarray(rows, dtype=np.float64)).tolist()
    return out


def _detrended(lat: np.ndarray) -> np.ndarray:
    """:func:`detrend_rounds` of a ``(P, R)`` array: each latency times the typical round
    factor over its round's (``v * typical / f_j``, in that order, as for one float)."""
    if lat.shape[1] <= 1 or not len(lat):
        return lat
    f = [float(statistics.median(lat[:, j].tolist())) for j in range(lat.shape[1])]
    typical = float(statistics.median(f))
    out: np.ndarray = (lat * typical) / np.asarray(f)[None, :]
    return out


def reference_ratio(test_ms: Sequence[float], reference_ms: Sequence[float]) -> float:
    """Latency of a test probe relative to a healthy reference measured alongside it.

    Args:
        test_ms: the test probe's repeats, ms.
        reference_ms: the reference probe's repeats, taken interleaved with the test's, ms.

    Returns:
        median(test) / median(reference) (> 0).

    Raises:
        ValueError: if either has no repeat or a repeat is not finite and > 0.

    >>> reference_ratio([30.0, 33.0, 31.0], [10.0, 11.0, 9.0])
    3.1
    """
    return probe_latency_ms(test_ms) / probe_latency_ms(reference_ms)


def judge_against_reference(
    executor: ProbeExecutor, gpus: tuple[int, ...], reference: tuple[int, ...], repeats: int, t: float
) -> tuple[ProbeMeasurement, str]:
    """Measure a test probe in alternation with a healthy reference and call it pass or fail.

    With x = log(median(test) / median(reference)): x > t fails, x <= t/2 passes, and in
    between both are measured again (2 x ``repeats`` rounds more) and the probe fails when x
    over all 3 x ``repeats`` rounds is above t/2
    (:func:`~faultsense_pipelines.measure.threshold.probe_zone`, as ``repeats.judge_probe``).

    Args:
        executor: runs the probes.
        gpus: the test probe.
        reference: a probe known to be healthy, of the same size as the test.
        repeats: rounds (>= 1).
        t: log of the slow threshold relative to the healthy latency (> 0).

    Returns:
        The test probe's measurement (its latencies, ms) and ``"pass"``, ``"fail"`` or
        ``"error"`` (either probe could not be measured; the error names which).
    """
    test, ref = measure_rounds(executor, [gpus, reference], repeats)
    if not (test.ok and ref.ok):
        return _error(test, ref), "error"
    zone = probe_zone(math.log(reference_ratio(test.latencies_ms, ref.latencies_ms)), t)
    if zone != "again":
        return test, zone
    test2, ref2 = measure_rounds(executor, [gpus, reference], 2 * repeats)
    if not (test2.ok and ref2.ok):
        return _error(test2, ref2), "error"
    both = ProbeMeasurement(test.gpus, test.latencies_ms + test2.latencies_ms)
    x = math.log(reference_ratio(both.latencies_ms, ref.latencies_ms + ref2.latencies_ms))
    return both, probe_zone(x, t, remeasured=True)


def _error(test: ProbeMeasurement, ref: ProbeMeasurement) -> ProbeMeasurement:
    return test if not test.ok else ProbeMeasurement(test.gpus, (), error=f"reference probe {list(ref.gpus)}: {ref.error}")
