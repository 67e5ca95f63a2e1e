"""Judging one probe: measure it and call it pass, fail or error against a baseline.

Shared by both phases of :mod:`faultsense_pipelines.localize`: a probe whose latency lands
between the threshold and its square root is measured again before it is judged, and with
a reference probe the two are measured in alternation
(:func:`~faultsense_pipelines.measure.rounds.judge_against_reference`).
"""

from __future__ import annotations

import math

from ..replica.executor import ProbeExecutor, ProbeMeasurement
from .batch import measure
from .rounds import judge_against_reference
from .threshold import probe_latency_ms, probe_zone

__all__ = ["judge_probe"]


def judge_probe(
    executor: ProbeExecutor,
    gpus: tuple[int, ...],
    repeats: int,
    baseline_ms: float,
    threshold_ms: float,
    reference: tuple[int, ...] | None = None,
) -> tuple[ProbeMeasurement, str]:
    """Measure one probe and call it ``"pass"``, ``"fail"`` or ``"error"``.

    With x = log(latency / baseline) and t = log(threshold / baseline): x > t fails,
    x <= t/2 passes, and a probe in between is measured again (2 x ``repeats`` more) and
    fails when the median of all 3 x ``repeats`` latencies is above t/2
    (:func:`~faultsense_pipelines.measure.threshold.probe_zone`, the judgement of every probe in both
    phases). A slowdown near the threshold would otherwise pass or fail by the toss of the
    noise, and a faulty GPU that passes once is exonerated and lets its slowness be blamed
    on its links.

    With a ``reference`` (a probe known to be healthy), the test and the reference are
    measured in alternation (:func:`~faultsense_pipelines.measure.rounds.measure_rounds`) and
    x = log(median(test) / median(reference)): machine load that drifted since Phase 1
    moves both alike. An error in either measurement is an ``"error"`` outcome.

    Returns:
        The measurement (all latencies of the test probe, ms) and the outcome.
    """
    if reference is not None:
        return judge_against_reference(executor, gpus, reference, repeats, math.log(threshold_ms / baseline_ms))
    m = measure(executor, gpus, repeats)
    if not m.ok:
        return m, "error"
    t = math.log(threshold_ms / baseline_ms)
    zone = probe_zone(math.log(probe_latency_ms(m.latencies_ms) / baseline_ms), t)
    if zone != "again":
        return m, zone
    again = measure(executor, gpus, 2 * repeats)
    if not again.ok:
        return again, "error"
    both = ProbeMeasurement(m.gpus, m.latencies_ms + again.latencies_ms)
    return both, probe_zone(math.log(probe_latency_ms(both.latencies_ms) / baseline_ms), t, remeasured=True)
