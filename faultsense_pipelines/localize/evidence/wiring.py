"""Phase 2 by weighed evidence over one executor (``--drilldown evidence``).

Wires the pure :func:`~faultsense_pipelines.localize.evidence.drilldown.evidence_drilldown` to a
:class:`~faultsense_pipelines.replica.executor.ProbeExecutor`: it reads the Phase 1 sweep against a
time-varying baseline (:func:`~faultsense_pipelines.localize.evidence.drilldown.time_detrended_excess`),
estimates the noise, measures every Phase 2 test beside a healthy reference probe (one
measurement each in turn, ABBA: :func:`~faultsense_pipelines.measure.rounds.measure_pair`, so a
load burst that begins or ends during the pair moves one round's ratio, not the datum), and
turns the findings into
:class:`~faultsense_pipelines.localize.verdicts.Verdict` rows with a confidence each.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from itertools import chain
from typing import Any

import numpy as np

from ...measure.rounds import measure_pair, paired_log_ratio
from ...replica.executor import ProbeExecutor
from ...replica.topology import ReplicaTopology
from ...replica.vocabulary import Outcome
from ..verdicts import Phase1Records, Phase1Result, ProbeRecord, Verdict
from .drilldown import (
    EvidenceModel,
    Phase1Probes,
    detrended_excess,
    detrended_excess_array,
    estimate_sigma,
    evidence_drilldown,
    phase1_timeline,
    runs_shared_stage,
    time_detrended,
    time_detrended_array,
)

__all__ = ["DEFAULT_MIN_SLOWDOWN", "evidence_units", "run_evidence_phase2"]

#: Smallest slowdown the evidence drill-down calls a fault, by default.
DEFAULT_MIN_SLOWDOWN = 1.2


def evidence_units(phase1: Phase1Result, excess: Sequence[float | None], effect: float) -> list[int]:
    """Phase 1 probes to drill into: the rule's suspects and every probe whose time-detrended
    excess reaches ``effect``, less those a moving baseline shows were lifted by a load burst
    (excess below ``effect / 2``).

    On a tiny replica, where some GPU sits in half the cover's probes or more (n = 8, k = 4:
    every GPU in 3 of 6), a slow GPU's probes are half of every baseline window and lift it, so
    Phase 1 cannot judge that GPU alone: there every probe with excess from ``effect / 2`` is
    drilled into, and the paired tests decide (issue: tiny replicas).

    Args:
        phase1: the Phase 1 sweep.
        excess: per probe, ``log(latency / baseline at its time)`` (``None`` on error); with
            records kept as arrays (:class:`~faultsense_pipelines.localize.verdicts.Phase1Records`)
            also a ``(P,)`` float array.
        effect: log of the smallest slowdown that is a fault.

    Returns:
        Indices into ``phase1.records``, ascending.
    """
    records = phase1.records
    if isinstance(records, Phase1Records) and isinstance(excess, np.ndarray):  # arrays: no object per probe
        counts = np.bincount(np.asarray(records.members, dtype=np.int64).ravel(), minlength=1)
        flag = effect / 2 if int(counts.max()) / max(1, len(records)) >= 0.5 else effect
        flagged = set(phase1.suspect_probes) | set(np.flatnonzero(excess >= flag).tolist())
        return sorted(i for i in flagged if excess[i] >= effect / 2)
    probes = [r.gpus for r in records]  # sorted, distinct GPU ids (ProbeRecord)
    counts = np.bincount(np.fromiter(chain.from_iterable(probes), dtype=np.int64), minlength=1)
    share = int(counts.max()) / max(1, len(probes))
    flag = effect / 2 if share >= 0.5 else effect
    flagged = set(phase1.suspect_probes) | {i for i, x in enumerate(excess) if x is not None and x >= flag}
    return sorted(i for i in flagged if (x := excess[i]) is not None and x >= effect / 2)


def run_evidence_phase2(
    executor: ProbeExecutor,
    phase1: Phase1Result,
    *,
    repeats: int,
    seed: int = 0,
    confidence: float = 0.999,
    min_slowdown: float = DEFAULT_MIN_SLOWDOWN,
    topology: ReplicaTopology | None = None,
) -> tuple[tuple[ProbeRecord, ...], tuple[Verdict, ...]]:
    """Drill into a Phase 1 sweep with paired, weighed tests.

    Args:
        executor: runs the Phase 2 probes.
        phase1: the Phase 1 sweep. One the suspect rule called ``replica_degraded`` is read
            too: against a time-local baseline a load burst is not a slow majority. (A
            uniform slowdown of every GPU is invisible to any relative test, by design.)
        repeats: measurements per Phase 2 probe.
        seed: seed of the padding and reference draws.
        confidence: posterior a blame needs (the false-blame budget is ``1 - confidence``).
        min_slowdown: smallest slowdown that is a fault (> 1): the effect size of every test.
            Phase 1's threshold is set for one probe alone and grows with the noise; many
            weighed measurements resolve smaller slowdowns than any one of them can.
        topology: where the GPUs sit; with several nodes, NICs, NVSwitches and switches are
            hypotheses too (:mod:`~faultsense_pipelines.localize.evidence.shared`).

    Returns:
        The Phase 2 probe records (each test probe, then its reference; outcome ``"fail"``
        when the pair accused the test probe) and the verdicts: confirmed and inconclusive
        GPUs and links with their confidence, masked links between confirmed GPUs.

    Raises:
        ValueError: a Phase 1 with no measured probe, ``repeats < 1`` or ``min_slowdown <= 1``.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    p1 = phase1.records
    array = p1.latency_rows(phase1.repeats) if isinstance(p1, Phase1Records) else None
    latencies: Any
    detrended: Any
    excess: Any
    phase1_probes: Sequence[tuple[Sequence[int], float | None]]
    if isinstance(p1, Phase1Records) and array is not None and array.size:  # arrays: the same floats
        latencies = array
        # the rule's baseline is only a fallback: each probe is read against the probes measured
        # around it, so a sweep the rule called degraded during a load burst is still read
        detrended = time_detrended_array(array, phase1.baseline_ms or _median(array))
        excess = detrended_excess_array(detrended)
        phase1_probes = Phase1Probes(p1.members, excess)
    else:
        latencies = [r.latencies_ms[: phase1.repeats] for r in p1]
        measured = [x for lat in latencies for x in lat]
        if not measured:
            raise ValueError("the evidence drill-down needs a Phase 1 sweep with at least one measured probe")
        detrended = time_detrended(latencies, phase1.baseline_ms or statistics.median(measured))
        excess = detrended_excess(detrended)
        phase1_probes = [(r.gpus, x) for r, x in zip(p1, excess, strict=True)]
    if not (math.isfinite(min_slowdown) and min_slowdown > 1.0):
        raise ValueError(f"min_slowdown must be a finite number > 1, got {min_slowdown!r}")
    effect = math.log(min_slowdown)
    units = evidence_units(phase1, excess, effect)
    model = EvidenceModel(sigma=estimate_sigma(detrended, excess, units), effect=effect, repeats=repeats, confidence=confidence)
    records: list[ProbeRecord] = []

    def pair(test: tuple[int, ...], reference: tuple[int, ...]) -> float | None:
        # which probe goes first alternates between pairs too: a linear drift cancels
        t, r = measure_pair(executor, test, reference, repeats, test_first=len(records) % 4 == 0)
        d = paired_log_ratio(t.latencies_ms, r.latencies_ms) if t.ok and r.ok else None
        for gpus, m in ((test, t), (reference, r)):
            accused = gpus == test and d is not None and d > effect / 2
            outcome = Outcome.ERROR if not m.ok else (Outcome.FAIL if accused else Outcome.PASS)
            records.append(ProbeRecord(2, len(records), tuple(sorted(gpus)), m.latencies_ms, m.error, outcome))
        return d

    result = evidence_drilldown(
        phase1.gpus,
        phase1.probe_size,
        phase1_probes,
        units,
        pair,
        model,
        seed=seed,
        topology=topology,
        timeline=phase1_timeline(latencies.tolist() if isinstance(latencies, np.ndarray) else latencies)
        if runs_shared_stage(topology)
        else (),
    )
    verdicts = tuple(
        Verdict(
            f.kind,
            f.gpu,
            f.peer_gpu,
            f.status,
            f.slowdown,
            2,
            2 * f.tests_used,
            f.confidence,
            f.reason,
            shared=f.shared,
            name=None if f.shared is None or topology is None else topology.name(f.shared),
            evidence=f.evidence,
        )
        for f in result.findings
    )
    return tuple(records), verdicts


def _median(values: np.ndarray) -> float:
    """:func:`statistics.median` of every value of an array, computed as it does: the same float."""
    s = np.sort(values, axis=None)
    m = len(s)
    return float(s[m // 2]) if m % 2 else float((s[m // 2 - 1] + s[m // 2]) / 2)
