"""Localization: Phase 1 sweep, suspect rule and Phase 2 drill-down over one executor.

This is the one place where the pure algorithms (:mod:`faultsense_pipelines.cover`, :mod:`.suspects`,
:mod:`.drilldown`, :mod:`.sequential`) meet a :class:`~faultsense_pipelines.replica.executor.ProbeExecutor`. Its results
are the frozen, picklable dataclasses of :mod:`faultsense_pipelines.localize.verdicts`
(re-exported here), which map one-to-one onto the ledger: a :class:`ProbeRecord` per
measured probe (``probe_runs``) and a :class:`Verdict` per judged component (the fault
ledger).

Executor failures: a probe whose measurement carries ``error`` has outcome ``"error"``; it
exonerates nothing and blames nothing, and components seen only in errored probes get no
verdict. :attr:`Phase1Result.errors` counts them.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, cast

import numpy as np

from ..cover import Cover
from ..measure.repeats import judge_probe
from ..measure.rounds import detrend_rounds
from ..measure.sweep import sweeper
from ..measure.threshold import probe_latencies_ms, probe_latency_ms, probe_zone
from ..replica.executor import ProbeExecutor, ProbeMeasurement
from ..replica.topology import ReplicaTopology
from ..replica.vocabulary import DEFAULT_DRILLDOWN, DrilldownMethod, Outcome, Status
from .anchor import anchor_sweep, healthy_cross_probes, refutes_anchor
from .drilldown import drilldown
from .drilldown.common import Finding
from .sequential.wiring import DEFAULT_ALPHA, DEFAULT_MIN_SLOWDOWN, run_sequential_phase2
from .suspects import FloorRule, RobustRule, SuspectRule, default_rule
from .verdicts import Localization, Phase1Records, Phase1Result, ProbeRecord, Verdict, measured_rows, padded_members

__all__ = ["localize", "run_phase1", "run_phase2"]


def run_phase1(
    executor: ProbeExecutor,
    cover: Cover,
    *,
    repeats: int = 1,
    rule: SuspectRule | None = None,
    interleave: bool = True,
    anchor: bool = True,
) -> Phase1Result:
    """Run every cover probe ``repeats`` times and judge the sweep.

    The rule picks the suspects; a probe it did not flag but whose latency lies between the
    threshold and its square root (t/2 in log terms) is measured again, as in
    :func:`judge_probe`, and becomes a suspect when still above t/2 (an ``"error"`` when the
    re-measurement fails: an undecided probe exonerates nothing). A sweep the rule
    still calls ``replica_degraded`` is re-judged against its fast cluster of probes
    (:func:`~faultsense_pipelines.localize.anchor.anchor_sweep`): when those probes stand apart and
    hold most GPUs, the slow probes are suspects against their baseline (``anchored``).

    Args:
        executor: runs the probes on the replica.
        cover: the Phase 1 plan; ``cover.gpus`` must equal ``executor.gpus``.
        repeats: measurements per probe (>= 1); the rule uses their median.
        rule: suspect rule; :func:`~faultsense_pipelines.localize.suspects.default_rule` when ``None``.
        interleave: take the repeats in rounds (every probe once, then every probe again,
            ...) and hand the rule round-detrended latencies
            (:func:`~faultsense_pipelines.measure.rounds.detrend_rounds`), so a burst of machine
            load lifts every probe alike; re-measurements are taken in rounds too. A sweep
            judged ``replica_degraded`` is measured once more (``repeats`` more rounds) and
            judged on all its repeats: a load burst should not cost the whole sweep. With
            ``repeats == 1`` it changes nothing.
        anchor: re-judge a sweep still ``replica_degraded`` against its fast cluster
            (default); ``False`` keeps the rule's verdict alone.

    Returns:
        A :class:`Phase1Result` with one record per cover probe, in cover order, in one
        :class:`~faultsense_pipelines.localize.verdicts.Phase1Records` whatever the executor
        (measured by :func:`~faultsense_pipelines.measure.sweep.sweeper`); a probe that could
        not be measured is a row with outcome ``"error"``, counted in ``errors``.

    Raises:
        ValueError: if the cover and executor disagree on the GPU count or ``repeats < 1``,
            or the executor returns a number of latencies other than asked for.
    """
    _check(executor, cover.gpus, repeats)
    rule = rule or default_rule()
    members = _members(cover)
    measure = sweeper(executor, cover.probes, members, in_rounds=interleave and repeats > 1)
    lat, errors = measure(None, repeats)
    baseline: float | None = None
    threshold: float | None = None
    suspects: set[int] = set()
    degraded = False
    resweeps = 0
    while True:
        ok = np.flatnonzero(measured_rows(len(members), errors))
        if not len(ok):
            break
        judged = _judged(lat, ok, errors, interleave)
        verdict = rule.judge(cast(Any, judged) if isinstance(rule, RobustRule) else judged.tolist())  # RobustRule reads arrays
        baseline, threshold = verdict.baseline_ms, verdict.threshold_ms
        suspects = {int(ok[j]) for j in verdict.suspects}
        degraded = verdict.replica_degraded
        if not (degraded and interleave and repeats > 1 and resweeps < 1):
            break
        # a degraded verdict stops all localization: measure every probe again, in rounds,
        # and judge all the repeats together before giving up on the sweep
        resweeps += 1
        more, failed = measure(ok, repeats)
        lat = np.concatenate([lat, np.full((len(lat), repeats), np.nan)], axis=1)
        lat[ok, -repeats:] = more
        for j, message in failed.items():
            errors[int(ok[j])] = message
            lat[ok[j]] = np.nan
    anchored = None
    if len(ok) and degraded and anchor:  # most probes slow: a few slow components, or a slow replica?
        probes = [cover.probes[i] for i in ok.tolist()]
        anchored = anchor_sweep(rule, _judged(lat, ok, errors, interleave).tolist(), probes, cover.gpus)
    if anchored is not None:
        baseline, threshold, degraded = anchored.baseline_ms, anchored.threshold_ms, False
        suspects = {int(ok[j]) for j in anchored.suspects}
    between: list[int] = []
    extra: dict[int, tuple[float, ...]] = {}
    if len(ok) and not degraded and baseline is not None and threshold is not None:  # both set whenever ok
        b, t = baseline, math.log(threshold / baseline)
        median = np.full(len(lat), np.nan)  # NaN for an errored probe
        median[ok] = probe_latencies_ms(lat[ok])
        with np.errstate(divide="ignore"):  # a superset of the probes above t/2; decided exactly below
            near = np.flatnonzero(np.log(median / b) > t / 2 - 1e-6).tolist()
        between = [i for i in near if i not in suspects and probe_zone(math.log(float(median[i]) / b), t) != "pass"]
        again, failed = measure(between, 2 * repeats)
        for j, i in enumerate(between):
            if j in failed:  # undecided and not re-measured: an error, it exonerates nothing (as judge_probe)
                errors[i] = failed[j]
                lat[i] = np.nan
                continue
            extra[i] = tuple(again[j].tolist())
            if probe_zone(math.log(probe_latency_ms(lat[i].tolist() + list(extra[i])) / b), t, remeasured=True) == "fail":
                suspects.add(i)
    slow = np.zeros(len(members), dtype=bool)
    slow[sorted(suspects)] = True
    return Phase1Result(
        gpus=cover.gpus,
        probe_size=cover.probe_size,
        cover_method=cover.method,
        records=Phase1Records(members, lat, slow, extra, errors),
        baseline_ms=baseline,
        threshold_ms=threshold,
        suspect_probes=tuple(sorted(suspects)),
        replica_degraded=degraded,
        errors=len(errors),
        remeasured=len(between) + resweeps * len(ok),
        repeats=repeats,
        anchored=anchored is not None,
    )


def _members(cover: Cover) -> np.ndarray:
    """The cover's probes as one ``(P, w)`` integer array of GPU ids, ascending within a row
    (``cover.members``), a probe of fewer GPUs padded with ``-1``."""
    return cover.members if cover.members is not None else padded_members(cover.probes)


def _judged(lat: np.ndarray, ok: np.ndarray, errors: Mapping[int, str], interleave: bool) -> np.ndarray:
    """The latencies the rule judges: the measured rows of ``lat`` (ms), round-detrended when
    the repeats were taken in rounds."""
    rows = lat[ok] if errors else lat
    return detrend_rounds(rows) if interleave else rows


def run_phase2(
    executor: ProbeExecutor,
    phase1: Phase1Result,
    *,
    method: DrilldownMethod | str = DEFAULT_DRILLDOWN,
    repeats: int = 1,
    rule: SuspectRule | None = None,
    recheck_explained: bool = True,
    reference: bool | None = None,
    topology: ReplicaTopology | None = None,
    alpha: float | None = None,
    min_slowdown: float | None = None,
    phase2_budget: int | None = None,
    seed: int = 0,
) -> Localization:
    """Drill into the suspects of ``phase1`` and return the verdicts.

    The binary drill-downs measure every Phase 2 probe ``repeats`` times and judge it by
    :func:`judge_probe` against Phase 1's baseline and threshold (the same rule, the same
    sweep), so they do not re-apply ``rule``.

    Args:
        executor: the executor Phase 1 ran on.
        phase1: the sweep to drill into.
        method: ``"sequential"`` (default, :data:`~faultsense_pipelines.replica.vocabulary.DEFAULT_DRILLDOWN`):
            anytime-valid paired claims under one error budget a sweep
            (:func:`~faultsense_pipelines.localize.sequential.wiring.run_sequential_phase2`,
            docs/verdicts.md). It reads every Phase 1 probe against a time-local baseline, so
            it runs whatever the suspect rule found, also on a sweep the rule called degraded
            (which stays ``replica_degraded`` unless it confirms a component). ``"adaptive"``: exonerate, then halve,
            trusting each probe's pass or fail (exact on noise-free probes); ``"paper"``: the
            paper's Algorithm 2.
        repeats: measurements per Phase 2 probe.
        rule: see above; the sequential drill-down takes its ``min_slowdown`` (a fleet's floor,
            if above :data:`~faultsense_pipelines.localize.sequential.wiring.DEFAULT_MIN_SLOWDOWN`) as the smallest
            slowdown that is a fault, unless ``min_slowdown`` is given.
        recheck_explained: adaptive only: re-test suspect groups explained by a slow GPU
            (exact; about (n-1)/(k-1) probes per slow GPU). See
            :func:`~faultsense_pipelines.localize.drilldown.adaptive.adaptive_drilldown`.
        reference: judge each Phase 2 probe against a healthy Phase 1 probe measured in
            alternation with it (the passing probe nearest the baseline; see
            :func:`judge_probe`) instead of against the Phase 1 baseline alone. ``None``
            (default): when ``repeats >= 2``, i.e. on executors noisy enough to need repeats.
            It doubles the Phase 2 measurements; reference runs are not recorded.
        alpha: ``sequential`` only: expected healthy components confirmed in the sweep, at
            most (default :data:`~.sequential.wiring.DEFAULT_ALPHA`; docs/verdicts.md).
        min_slowdown: ``sequential`` only: smallest slowdown a verdict claims (default: the
            floor of ``rule``, a fleet's ``min_slowdown``, and at least 1.2).
        phase2_budget: ``sequential`` only: Phase 2 probes, at most (default
            :func:`~.sequential.drilldown.default_budget`).
        seed: ``sequential`` only: seed of the measurement orders and draws.
        topology: where the GPUs sit; ``sequential`` then pairs probes of one shape and
            claims NICs, NVSwitches and switches too (docs/verdicts.md); the others ignore it.

    Returns:
        A :class:`Localization`; with no suspect, or a degraded replica, it has no Phase 2
        probe and no verdict. An ``anchored`` sweep starts Phase 2 with the probes of
        :func:`~faultsense_pipelines.localize.anchor.healthy_cross_probes` (recorded as Phase 2);
        when their slowness needs too many slow links (:func:`~faultsense_pipelines.localize.anchor.refutes_anchor`)
        the fast cluster was not a healthy baseline, and the result is Phase 1 judged
        ``replica_degraded`` (not anchored, no suspect) with those probes and no verdict.
        So is a sweep whose passing Phase 2 probes show a fast minority
        (:func:`_fast_minority`): Phase 1 took a slow majority for its baseline.
    """
    _check(executor, phase1.gpus, repeats)
    # the replica's floor (a fleet's min_slowdown) is the smallest slowdown that is a fault
    floor = max(DEFAULT_MIN_SLOWDOWN, rule.min_slowdown if isinstance(rule, FloorRule) else DEFAULT_MIN_SLOWDOWN)
    method = DrilldownMethod.parse(method, "method")
    if method == DrilldownMethod.SEQUENTIAL:
        claim_records, verdicts = run_sequential_phase2(
            executor,
            phase1,
            repeats=repeats,
            seed=seed,
            alpha=DEFAULT_ALPHA if alpha is None else alpha,
            min_slowdown=floor if min_slowdown is None else min_slowdown,
            budget=phase2_budget,
            topology=topology,
        )
        # a slow majority the rule saw stays the sweep's result unless a claim found its cause
        found = any(v.status == Status.CONFIRMED for v in verdicts)
        read = replace(phase1, replica_degraded=False) if phase1.replica_degraded and found else phase1
        return Localization(read, claim_records, verdicts, topology)
    if not phase1.needs_drilldown or phase1.threshold_ms is None or phase1.baseline_ms is None:
        return Localization(phase1, (), ())
    baseline, threshold = phase1.baseline_ms, phase1.threshold_ms
    records: list[ProbeRecord] = []
    ref = _reference_probe(phase1) if (repeats >= 2 if reference is None else reference) else None

    def oracle(gpus: tuple[int, ...]) -> bool | None:
        m, outcome = judge_probe(executor, gpus, repeats, baseline, threshold, ref)
        records.append(_record(2, len(records), m, Outcome(outcome)))
        return None if outcome == Outcome.ERROR else outcome == Outcome.FAIL

    passed = [r.gpus for r in phase1.records if r.outcome == Outcome.PASS]
    failed = [r.gpus for r in phase1.records if r.outcome == Outcome.FAIL]
    if phase1.anchored:  # few links exonerated: probe the fast cluster's GPUs together first
        cross = [(gpus, oracle(gpus)) for gpus in healthy_cross_probes(passed, phase1.probe_size)]
        if refutes_anchor(passed, [gpus for gpus, _ in cross], [slow for _, slow in cross]):
            return Localization(_degraded(phase1), tuple(records), ())
        passed += [gpus for gpus, slow in cross if slow is False]
        failed += [gpus for gpus, slow in cross if slow]
    first = len(records)
    result = drilldown(phase1.gpus, phase1.probe_size, passed, failed, oracle, method, recheck_explained=recheck_explained)
    if _fast_minority(records, math.log(threshold / baseline)):
        return Localization(_degraded(phase1), tuple(records), ())
    verdicts = tuple(_verdict(f, records[first:], baseline) for f in result.findings)
    return Localization(phase1, tuple(records), verdicts)


def _fast_minority(records: list[ProbeRecord], t: float) -> bool:
    """Two passing Phase 2 probes as far below the others as a suspect is above the baseline.

    Phase 1's rule applied to Phase 2 (:meth:`RobustRule.judge`): Phase 2 probes are padded
    with GPUs Phase 1 called healthy, so their passing ones sit at the healthy latency.
    When some of them are faster than the median of the passing ones by ``t`` (the slow
    threshold, log), most "healthy" GPUs were slow too: Phase 1 took a slow majority
    (several GPUs a little slow) for the baseline. Measured in one phase, so machine load
    that drifted since Phase 1 moves them all alike.
    """
    x = [math.log(r.latency_ms) for r in records if r.outcome == Outcome.PASS and r.latency_ms]
    if len(x) < 3:
        return False
    middle = statistics.median(x)
    return sum(v < middle - t for v in x) >= 2


def localize(
    executor: ProbeExecutor,
    cover: Cover,
    *,
    repeats: int = 1,
    rule: SuspectRule | None = None,
    method: DrilldownMethod | str = DEFAULT_DRILLDOWN,
    recheck_explained: bool = True,
    interleave: bool = True,
    reference: bool | None = None,
    anchor: bool = True,
    topology: ReplicaTopology | None = None,
    alpha: float | None = None,
    min_slowdown: float | None = None,
    phase2_budget: int | None = None,
    seed: int = 0,
) -> Localization:
    """Phase 1 then, if it found suspects, Phase 2 on one replica (see :func:`run_phase1`,
    :func:`run_phase2`); with a ``topology`` that places GPUs on nodes, each verdict's ``node``
    is set (:meth:`~.verdicts.Localization.placed`)."""
    phase1 = run_phase1(executor, cover, repeats=repeats, rule=rule, interleave=interleave, anchor=anchor)
    loc = run_phase2(
        executor,
        phase1,
        method=method,
        repeats=repeats,
        rule=rule,
        recheck_explained=recheck_explained,
        reference=reference,
        topology=topology,
        alpha=alpha,
        min_slowdown=min_slowdown,
        phase2_budget=phase2_budget,
        seed=seed,
    )
    return loc.placed(topology)  # each verdict names the node it sits on, where the topology says


def _degraded(phase1: Phase1Result) -> Phase1Result:
    """``phase1`` judged ``replica_degraded`` after all: no suspect, every measured probe passes."""
    return replace(phase1, records=phase1.records.passed(), suspect_probes=(), replica_degraded=True, anchored=False)


def _check(executor: ProbeExecutor, gpus: int, repeats: int) -> None:
    if executor.gpus != gpus:
        raise ValueError(f"executor drives {executor.gpus} GPUs but the plan has gpus={gpus}")
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")


def _reference_probe(phase1: Phase1Result) -> tuple[int, ...] | None:
    """The passing Phase 1 probe whose latency is nearest the baseline (``None`` if none passed)."""
    baseline = phase1.baseline_ms
    passed = [(r.latency_ms, r.gpus) for r in phase1.records if r.outcome == Outcome.PASS and r.latency_ms is not None]
    if not passed or not baseline:
        return None
    return min(passed, key=lambda p: abs(math.log(p[0] / baseline)))[1]


def _record(phase: int, index: int, m: ProbeMeasurement, outcome: Outcome) -> ProbeRecord:
    return ProbeRecord(phase, index, tuple(sorted(m.gpus)), tuple(m.latencies_ms), m.error, outcome)


def _verdict(f: Finding, records: list[ProbeRecord], baseline_ms: float | None) -> Verdict:
    slowdown = None
    if f.evidence is not None and baseline_ms:
        latency = records[f.evidence].latency_ms
        slowdown = None if latency is None else latency / baseline_ms
    return Verdict(f.kind, f.gpu, f.peer_gpu, f.status, slowdown, 2, f.tests_used)
