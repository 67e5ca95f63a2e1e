"""Suspect rules: which Phase 1 probes are slow enough to drill into.

A *suspect* probe is one whose latency stands out from the healthy probes of the same sweep
(FaultSense, APSys '26, §4.2). Both rules here are relative to the sweep itself, so a uniform
shift of every probe (load, dynamic batching, a slower production model) moves the baseline
with it and never creates suspects.

* :class:`MedianRatioRule` -- the paper's rule, T_i > alpha * median(T).
* :class:`RobustRule` (the default) -- for real, noisy measurements: the median of repeats
  per probe, a robust baseline and scale of the log-latencies (iteratively trimmed
  median / MAD, so a fault touching many probes of a small replica does not drag the
  baseline), and a threshold set for a chosen per-sweep false-alarm rate under lognormal
  noise, never below a minimum slowdown. Its noise estimates live in
  :mod:`faultsense_pipelines.measure.noise` (``repeat_noise`` is re-exported here).

A rule maps the per-probe latencies of one sweep to a :class:`SuspectVerdict`; the same
baseline and threshold then judge every Phase 2 probe (``measure.repeats.judge_probe``, which also
re-measures probes that land between the threshold and its square root).

When a rule reports ``replica_degraded``, :meth:`MedianRatioRule.anchor` and
:meth:`RobustRule.anchor` look for a *fast cluster*: the largest group of fastest probes that
the rule itself judges a healthy sweep, decisively separated from every other probe. Its
baseline is what the sweep would have had if the slow probes were a minority;
:mod:`faultsense_pipelines.localize.anchor` decides, from which GPUs those probes hold, whether to
believe it (most probes slow because a few components are slow) or to keep the replica
degraded (many components slow).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from statistics import NormalDist
from typing import Protocol, runtime_checkable

import numpy as np

from ..measure.noise import location_and_threshold, repeat_noise
from ..measure.threshold import LOG_TIE, log_above, probe_fails, probe_latencies_ms, probe_latency_ms, probe_zone

__all__ = [
    "DEFAULT_ALPHA",
    "LOG_TIE",
    "AnchoringRule",
    "FloorRule",
    "MedianRatioRule",
    "RobustRule",
    "SuspectRule",
    "SuspectVerdict",
    "default_rule",
    "fast_cluster_verdict",
    "log_above",
    "probe_fails",
    "probe_latency_ms",
    "probe_zone",
    "repeat_noise",
]

#: The paper leaves alpha configurable and gives no value. 1.2 sits above the run-to-run
#: spread of a healthy probe (a 3-sigma excursion of lognormal noise with sigma = 0.05 is
#: x1.16) and below the slowdowns worth an operator's time (>= 1.3 in our benchmark).
DEFAULT_ALPHA = 1.2


@dataclass(frozen=True)
class SuspectVerdict:
    """What a rule concluded about one sweep.

    Attributes:
        baseline_ms: the healthy probe latency the rule inferred, ms.
        threshold_ms: probes whose latency (median of repeats) exceeds this are slow, ms.
        suspects: indices of the slow probes, ascending.
        replica_degraded: True when the healthy-majority assumption fails (most probes
            slow, or a fast minority below the baseline); no suspect is then reported.
    """

    baseline_ms: float
    threshold_ms: float
    suspects: tuple[int, ...]
    replica_degraded: bool


@runtime_checkable
class SuspectRule(Protocol):
    """Judges the per-probe latencies of one sweep."""

    def judge(self, latencies_ms: Sequence[Sequence[float]]) -> SuspectVerdict:
        """Return the suspect verdict for probes measured with ``latencies_ms[i]`` (ms, repeats)."""
        ...


@runtime_checkable
class AnchoringRule(SuspectRule, Protocol):
    """A rule that can also re-judge a degraded sweep against its fastest cluster of probes."""

    def anchor(self, latencies_ms: Sequence[Sequence[float]]) -> SuspectVerdict | None:
        """The verdict with the fast cluster as the healthy probes, or ``None`` if there is none."""
        ...


@runtime_checkable
class FloorRule(SuspectRule, Protocol):
    """A rule that never calls a slowdown under its ``min_slowdown`` (a latency ratio > 1): the
    replica's floor, which the drill-down keeps too."""

    min_slowdown: float


@dataclass(frozen=True)
class MedianRatioRule:
    """The paper's rule: probe i is suspect when T_i > alpha * median(T).

    Attributes:
        alpha: ratio to the median above which a probe is suspect (> 1); see
            :data:`DEFAULT_ALPHA`.

    Notes:
        The median tracks uniform shifts as long as faults touch fewer than half of the
        probes; past that the median itself is slow. Faults only slow probes down, so a
        probe faster than median(T) / alpha proves the median slow: the verdict is then
        ``replica_degraded`` with no suspects instead of a guess (not in the paper). A slow
        majority with no probe that fast is not noticed. O(P log P) for P probes.

    References:
        FaultSense (APSys '26), §4.2, suspect rule under Algorithm 1.

    >>> MedianRatioRule(1.2).judge([[10.0], [10.0], [13.0], [10.0]]).suspects
    (2,)
    >>> MedianRatioRule(1.2).judge([[10.0], [13.0], [13.0], [14.0]]).replica_degraded
    True
    """

    alpha: float = DEFAULT_ALPHA

    def __post_init__(self) -> None:
        if not math.isfinite(self.alpha) or self.alpha <= 1.0:
            raise ValueError(f"alpha must be a finite number > 1, got {self.alpha!r}")

    def judge(self, latencies_ms: Sequence[Sequence[float]]) -> SuspectVerdict:
        t = probe_latencies_ms(latencies_ms).tolist()
        baseline = float(statistics.median(t))
        threshold = self.alpha * baseline
        # compared in log terms, ties within rounding not above (:func:`log_above`)
        b, a = math.log(baseline), math.log(self.alpha)
        if log_above(b, math.log(min(t)) + a):  # a fast minority: the median itself is slow
            return SuspectVerdict(baseline, threshold, (), replica_degraded=True)
        suspects = tuple(i for i, v in enumerate(t) if log_above(math.log(v), b + a))
        return SuspectVerdict(baseline, threshold, suspects, replica_degraded=False)

    def anchor(self, latencies_ms: Sequence[Sequence[float]]) -> SuspectVerdict | None:
        """Re-judge a sweep against its fast cluster (see :func:`fast_cluster_verdict`).

        >>> v = MedianRatioRule(1.2).anchor([[10.0], [13.0], [10.0], [15.0], [26.0]])
        >>> v.baseline_ms, v.suspects
        (10.0, (1, 3, 4))
        """
        return fast_cluster_verdict(self.judge, latencies_ms, math.log(self.alpha))


@dataclass(frozen=True)
class RobustRule:
    """Noise-aware suspect rule for real measurements (the default).

    Works on x_i = log(median of probe i's repeats). The baseline b and scale s are the
    median and 1.4826 x MAD of the probes currently judged healthy, starting from the faster
    half of the probes (faults only slow probes down) and re-estimated until the healthy set
    stops changing (iterative trimming). A probe is
    suspect when x_i > b + t with

        t = max(z * s * (1 + 1.2 / sqrt(m)), log(min_slowdown)),   z = Phi^-1(1 - false_alarm / P),

    (m healthy probes; the factor covers the sampling error of the MAD, whose relative
    standard deviation is about 1.2 / sqrt(m)), so under lognormal noise the chance that any
    of the P healthy probes of a sweep crosses the threshold is about ``false_alarm``
    (Bonferroni), and no slowdown under ``min_slowdown`` is ever called. Measured with 1,000
    healthy sweeps each (seeded): sweeps with a false suspect 0.9% (P=100, sigma=0.03),
    0.5% (P=100, sigma=0.05), 3% (P=30, sigma=0.05), 8.5% (P=8, sigma=0.05): small sweeps
    with large noise need repeats.

    The healthy-majority assumption is checked, not trusted: if more than half of the probes
    are slow, if one is faster than b - 1.5 t, two are faster than b - t, or more than a tenth
    of them (and more than 2) are faster than b - max(2 s, log(min_slowdown)) (faults only
    slow probes down, so a fast
    minority means the baseline itself is slow), or if the healthy probes spread more than
    ``max_sigma`` (no majority cluster: the slow probes inflate the scale), the verdict is
    ``replica_degraded`` with no suspects. :meth:`anchor` then looks for a fast cluster of
    probes judged by this same rule (:func:`fast_cluster_verdict`); the false-alarm rate of
    sweeps the rule does not call degraded is unchanged.

    Attributes:
        false_alarm: per-sweep probability of calling a healthy probe suspect, in (0, 1).
        min_slowdown: smallest latency ratio ever called slow (> 1).
        max_sigma: largest believable noise sigma of a probe's log-latency (> 0); a wider
            spread means the sweep cannot tell healthy from slow.
        use_repeats: when every probe has >= 3 repeats, also estimate the noise from the
            spread *within* probes (:func:`repeat_noise`, many degrees of freedom): a
            healthy set of m < 8 probes is scaled by it alone (the MAD of a handful of
            probes is mostly luck), a larger one by the larger of both; and the healthy
            probes count as too wide only past max(``max_sigma``, 3 x that noise) and
            when no gap of t/2 (in log) separates the fastest suspect from the slowest
            healthy probe (slow probes that form their own group are not noise). On real
            executors the noise depends on machine load (sigma 0.1 quiet, 0.13-0.4 under
            load on the ``local`` executor), so a fixed ``max_sigma`` alone would call a
            loaded but healthy-majority sweep degraded.

    Notes:
        O(P log P) per iteration; converges in a few iterations. A uniform shift multiplies
        every latency by c, i.e. adds log c to every x_i: b moves by log c, s and t do not
        change, so the suspects are the same (comparisons ignore differences within
        floating-point rounding, :data:`LOG_TIE`, so a probe exactly at the threshold stays
        below it under every c).

    References:
        FaultSense (APSys '26), §4.2 (median-relative threshold); P. J. Rousseeuw and
        C. Croux, "Alternatives to the median absolute deviation", JASA 88 (1993).

    >>> RobustRule().judge([[10.0], [10.1], [9.9], [10.0], [14.0], [10.05]]).suspects
    (4,)
    """

    false_alarm: float = 0.01
    min_slowdown: float = 1.1
    max_sigma: float = 0.1
    use_repeats: bool = True

    def __post_init__(self) -> None:
        if not (0.0 < self.false_alarm < 1.0):
            raise ValueError(f"false_alarm must be in (0, 1), got {self.false_alarm!r}")
        if not math.isfinite(self.min_slowdown) or self.min_slowdown <= 1.0:
            raise ValueError(f"min_slowdown must be a finite number > 1, got {self.min_slowdown!r}")
        if not math.isfinite(self.max_sigma) or self.max_sigma <= 0:
            raise ValueError(f"max_sigma must be a finite number > 0, got {self.max_sigma!r}")

    def judge(self, latencies_ms: Sequence[Sequence[float]]) -> SuspectVerdict:
        return self._judge(latencies_ms, len(latencies_ms))

    def anchor(self, latencies_ms: Sequence[Sequence[float]]) -> SuspectVerdict | None:
        """Re-judge a sweep against its fast cluster (see :func:`fast_cluster_verdict`).

        The cluster is judged with the false-alarm budget of the whole sweep (z for all P
        probes), so its threshold is the one a healthy majority of the same spread would get.
        With repeats, a noise (:func:`repeat_noise`) above ``max_sigma`` rules it out.

        >>> v = RobustRule().anchor([[10.0], [13.0], [10.0], [15.0], [26.0]])
        >>> round(v.baseline_ms, 6), v.suspects
        (10.0, (1, 3, 4))
        """
        rep = repeat_noise(latencies_ms) if self.use_repeats else None
        if rep is not None and rep[0] > self.max_sigma:  # noisier than believable: no decisive split
            return None
        judge = partial(self._judge, probes=len(latencies_ms))
        return fast_cluster_verdict(judge, latencies_ms, math.log(self.min_slowdown))

    def _judge(self, latencies_ms: Sequence[Sequence[float]], probes: int) -> SuspectVerdict:
        """:meth:`judge`, with the Bonferroni correction over ``probes`` probes."""
        x = [math.log(v) for v in probe_latencies_ms(latencies_ms).tolist()]
        xa = np.asarray(x)  # the same log-latencies as an array: comparisons below are elementwise
        z = NormalDist().inv_cdf(1.0 - self.false_alarm / max(probes, len(x)))
        floor = math.log(self.min_slowdown)
        rep = repeat_noise(latencies_ms) if self.use_repeats else None
        # start from the faster half: under the healthy-majority assumption it is all healthy
        healthy = np.sort(np.argsort(xa, kind="stable")[: (len(x) + 1) // 2])
        for _ in range(100):
            b, t, _ = location_and_threshold(xa[healthy], z, floor, rep)
            nxt = np.flatnonzero(~_above(xa, b + t))
            if np.array_equal(nxt, healthy):
                break
            healthy = nxt
        b, t, spread = location_and_threshold(xa[healthy], z, floor, rep)
        suspects = tuple(np.flatnonzero(_above(xa, b + t)).tolist())
        s = (t / z / (1.0 + 1.2 / math.sqrt(len(healthy)))) if t > floor else 0.0
        fast = int(_above(b - max(2.0 * s, floor), xa).sum())
        # calling a sweep degraded stops all localization: demand more than for a suspect
        # (or two probes each as far below the baseline as a suspect is above it: under the
        # healthy-majority null each has about false_alarm / P chance, two together far less)
        fast_minority = fast > max(2, len(x) // 10) or bool(_above(b - 1.5 * t, xa).any()) or int(_above(b - t, xa).sum()) >= 2
        # healthy probes spread wider than noise can explain: max_sigma, or (with repeats)
        # three times the noise of a probe's median measured from its own repeats; with
        # repeats that only matters when the suspects do not stand apart as their own group
        explained = max(self.max_sigma, 3.0 * rep[0]) if rep else self.max_sigma
        too_wide = spread > explained and z * spread > floor
        if rep is not None and too_wide:
            gap = min((x[i] for i in suspects), default=math.inf) - float(xa[healthy].max())
            too_wide = log_above(t / 2, gap)
        degraded = 2 * len(suspects) > len(x) or fast_minority or too_wide
        baseline, threshold = math.exp(b), math.exp(b + t)
        if degraded:
            return SuspectVerdict(baseline, threshold, (), replica_degraded=True)
        return SuspectVerdict(baseline, threshold, suspects, replica_degraded=False)


def _above(x: np.ndarray | float, limit: np.ndarray | float) -> np.ndarray:
    """:func:`log_above` elementwise: ``x - limit > LOG_TIE`` as a boolean array."""
    out: np.ndarray = np.asarray(x) - limit > LOG_TIE
    return out


def fast_cluster_verdict(
    judge: Callable[[Sequence[Sequence[float]]], SuspectVerdict],
    latencies_ms: Sequence[Sequence[float]],
    min_t: float,
) -> SuspectVerdict | None:
    """A sweep re-judged against its *fast cluster*: the fastest probes, if they stand apart.

    The fast cluster F is the largest set of the fastest probes, at least 2 (one probe says
    nothing of the noise), such that

    1. ``judge`` calls F, alone, a healthy sweep: no suspect and not degraded (so F is one
       tight group with no fast minority of its own);
    2. every other probe is above F's threshold b + t (log-latencies; b, t from ``judge``);
    3. decisively: the fastest other probe is at least t above the slowest of F (every
       other probe would be a suspect even against the slowest probe of F as the baseline),
       and at least twice the width of F (the empty band between the groups is wider than
       the fast group itself: probes slowed by a continuum of amounts do not qualify) --
       eight times when probes have fewer than 3 repeats: then nothing measures the noise,
       and the scale of a few fast probes is luck (noise-free data has width 0).

    Splits are tried at the gaps of the sorted log-latencies of at least ``min_t`` (the
    rule's smallest possible t), from the largest F down.

    Args:
        judge: the rule's verdict on a sweep (ms, repeats per probe).
        latencies_ms: per probe, its repeats, ms.
        min_t: a lower bound on the rule's threshold offset t, in log (e.g. log alpha).

    Returns:
        F's baseline and threshold with every other probe a suspect (not degraded), or
        ``None`` when no fast cluster exists (e.g. a uniform shift: one cluster; or every
        probe slowed by a different amount: no tight group apart).

    Notes:
        A uniform shift moves every log-latency alike and changes nothing here. Whether to
        believe F healthy also depends on which GPUs its probes hold; that is decided by
        :func:`faultsense_pipelines.localize.anchor.anchor_sweep`. O(G x J) for G candidate gaps and
        J the cost of one ``judge``.

    >>> fast_cluster_verdict(MedianRatioRule(1.2).judge, [[10.0], [30.0], [10.0], [20.0]], math.log(1.2)).suspects
    (1, 3)
    >>> fast_cluster_verdict(MedianRatioRule(1.2).judge, [[13.0], [12.0], [12.5]], math.log(1.2)) is None
    True
    """
    lat = probe_latencies_ms(latencies_ms).tolist()
    order = sorted(range(len(lat)), key=lat.__getitem__)
    x = [math.log(lat[i]) for i in order]
    widths = 2.0 if min(len(r) for r in latencies_ms) >= 3 else 8.0
    for j in range(len(x) - 1, 1, -1):
        gap = x[j] - x[j - 1]
        if log_above(min_t, gap):
            continue
        v = judge([latencies_ms[i] for i in order[:j]])
        if v.suspects or v.replica_degraded:
            continue
        top = math.log(v.threshold_ms)
        if log_above(x[j], top) and not log_above(max(top - math.log(v.baseline_ms), widths * (x[j - 1] - x[0])), gap):
            return SuspectVerdict(v.baseline_ms, v.threshold_ms, tuple(sorted(order[j:])), replica_degraded=False)
    return None


def default_rule() -> SuspectRule:
    """The rule used when none is given: :class:`RobustRule` with its defaults."""
    return RobustRule()
