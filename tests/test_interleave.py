"""Interleaved measurement: rounds in Phase 1, a healthy reference in Phase 2.

Machine load is modelled by a fake executor that multiplies a noise-free simulated replica's
latencies by a load factor that depends on when the probe runs; the expected results follow
by hand from the factor (worked in each test).
"""

from __future__ import annotations

from functools import partial

import pytest

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import localize as _localize
from faultsense_pipelines.localize import run_phase1
from faultsense_pipelines.localize import run_phase2 as _run_phase2
from faultsense_pipelines.localize.suspects import RobustRule
from faultsense_pipelines.measure.rounds import (
    detrend_rounds,
    judge_against_reference,
    measure_pair,
    measure_rounds,
    paired_log_ratio,
    reference_ratio,
)
from faultsense_pipelines.replica.executor import ExecutorError, ProbeMeasurement
from faultsense_pipelines.replica.faults import GpuFault
from faultsense_pipelines.replica.vocabulary import DrilldownMethod
from faultsense_pipelines.sim.simulator import SimulatedReplica

#: these tests are of the adaptive drill-down (exact on noise-free probes), not the default one
localize = partial(_localize, method=DrilldownMethod.ADAPTIVE)
run_phase2 = partial(_run_phase2, method=DrilldownMethod.ADAPTIVE)


class FakeLoadedExecutor:
    """A simulated replica under machine load: each ``run`` call is one time step (test double).

    ``burst`` is the set of call indices during which every latency is doubled; ``drift``
    multiplies every latency from the moment it is set.
    """

    name = "fake-loaded"

    def __init__(self, replica: SimulatedReplica, burst: set[int] = frozenset()):
        self.replica, self.gpus, self.burst = replica, replica.gpus, set(burst)
        self.calls: list[tuple[tuple[int, ...], int]] = []
        self.drift = 1.0

    def run(self, gpus, repeats=1):
        m = self.replica.run(gpus, repeats)
        factor = self.drift * (2.0 if len(self.calls) in self.burst else 1.0)
        self.calls.append((m.gpus, repeats))
        return ProbeMeasurement(m.gpus, tuple(v * factor for v in m.latencies_ms))

    def close(self):
        pass


def test_rounds_measure_every_probe_once_before_any_probe_twice():
    ex = FakeLoadedExecutor(SimulatedReplica(8))
    ms = measure_rounds(ex, [(0, 1), (2, 3), (4, 5)], 2)
    assert ex.calls == [((0, 1), 1), ((2, 3), 1), ((4, 5), 1)] * 2
    assert [len(m.latencies_ms) for m in ms] == [2, 2, 2]


def test_detrending_removes_a_round_wide_burst_and_keeps_the_ratio_between_probes():
    # round 1 is a burst (x2 on every probe); probe 1 is 3x probe 0 in every round
    lat = [[10.0, 20.0, 10.0], [30.0, 60.0, 30.0]]
    assert detrend_rounds(lat) == [[10.0, 10.0, 10.0], [30.0, 30.0, 30.0]]
    assert detrend_rounds([[v * 7 for v in row] for row in lat]) == [[70.0] * 3, [210.0] * 3]
    assert detrend_rounds([[10.0], [30.0]]) == [[10.0], [30.0]]  # one round: nothing to remove


def test_a_burst_over_one_probes_back_to_back_repeats_fakes_a_suspect_but_not_in_rounds():
    cover = plan_cover(8, 4)  # 6 probes; calls 0..4 are probe 0's five repeats back to back
    old = run_phase1(FakeLoadedExecutor(SimulatedReplica(8), burst={0}), cover, repeats=5, interleave=False)
    assert old.suspect_probes == (0,)  # the burst lands on probe 0 alone
    # in rounds the same burst hits round 0's first probe once: the median of 5 ignores it
    new = run_phase1(FakeLoadedExecutor(SimulatedReplica(8), burst={0}), cover, repeats=5)
    assert new.suspect_probes == () and not new.replica_degraded


def test_load_that_rises_after_phase1_blames_the_innocent_unless_judged_against_a_reference():
    cover = plan_cover(8, 4)
    results = {}
    for reference in (False, True):
        ex = FakeLoadedExecutor(SimulatedReplica(8, [GpuFault(2, 1.5)]))
        p1 = run_phase1(ex, cover, repeats=2)
        ex.drift = 1.3  # everything 30% slower from now on: above the 1.1 threshold
        results[reference] = run_phase2(ex, p1, repeats=2, reference=reference)
    assert results[True].faulty_gpus == [2] and results[True].faulty_links == []
    assert results[False].faulty_gpus != [2] or results[False].faulty_links  # every probe read slow


def test_judging_against_a_reference_uses_the_ratio_and_remeasures_between_thresholds():
    replica = SimulatedReplica(8, [GpuFault(1, 1.06)], base_ms=10.0)  # sqrt(1.1) < 1.06 < 1.1
    t = 0.09531017980432493  # log 1.1
    m, outcome = judge_against_reference(replica, (0, 1), (4, 5), 2, t)
    assert outcome == "fail" and len(m.latencies_ms) == 6  # 2 + 2 x 2 rounds
    m, outcome = judge_against_reference(replica, (0, 2), (4, 5), 2, t)
    assert outcome == "pass" and len(m.latencies_ms) == 2
    assert reference_ratio([30.0, 33.0, 31.0], [10.0, 11.0, 9.0]) == pytest.approx(3.1)


def test_single_repeat_localization_is_unchanged_by_the_new_defaults():
    faults = [GpuFault(5, 1.5)]
    new = localize(SimulatedReplica(32, faults), plan_cover(32, 4, "greedy"))
    old = localize(SimulatedReplica(32, faults), plan_cover(32, 4, "greedy"), interleave=False, reference=False)
    assert new == old and new.faulty_gpus == [5]


def test_a_sweep_judged_degraded_under_a_burst_is_measured_once_more_before_giving_up():
    cover = plan_cover(8, 4)  # 6 probes; in rounds, probe i of round j is call 6 j + i
    x = next(i for i, p in enumerate(cover.probes) if 2 not in p)
    ex = FakeLoadedExecutor(SimulatedReplica(8, [GpuFault(2, 1.5)]), burst={x, 6 + x})
    p1 = run_phase1(ex, cover, repeats=3)
    # first 3 rounds: probe x reads 2x in two of them, so 4 of 6 probes look slow: degraded
    first = RobustRule().judge(detrend_rounds([r.latencies_ms[:3] for r in p1.records]))
    assert first.replica_degraded
    # 3 more rounds, judged with the first: x's median is healthy again
    assert len(ex.calls) >= 36 and all(len(r.latencies_ms) == 6 for r in p1.records)
    assert not p1.replica_degraded and p1.remeasured >= 6
    assert list(p1.suspect_probes) == [i for i, p in enumerate(cover.probes) if 2 in p]


def test_a_pair_is_measured_one_measurement_each_in_turn_abba():
    ex = FakeLoadedExecutor(SimulatedReplica(8))
    measure_pair(ex, (0, 1), (2, 3), 3)
    assert [g for g, _ in ex.calls] == [(0, 1), (2, 3), (2, 3), (0, 1), (0, 1), (2, 3)]
    ex = FakeLoadedExecutor(SimulatedReplica(8))
    measure_pair(ex, (0, 1), (2, 3), 2, test_first=False)
    assert [g for g, _ in ex.calls] == [(2, 3), (0, 1), (0, 1), (2, 3)]
    assert {r for _, r in ex.calls} == {1}


def test_a_burst_beginning_inside_a_pair_moves_one_rounds_ratio_not_the_datum():
    # the load doubles from call 2 on. ABBA: test at calls 0, 3, 4 -> 20, 40, 40 ms; reference
    # at 1, 2, 5 -> 20, 40, 40 ms (the simulator's healthy probe is 20 ms): ratios 1, 1, 1
    test, ref = measure_pair(FakeLoadedExecutor(SimulatedReplica(8), burst={2, 3, 4, 5}), (0, 1), (2, 3), 3)
    assert test.latencies_ms == (20.0, 40.0, 40.0) and ref.latencies_ms == (20.0, 40.0, 40.0)
    assert paired_log_ratio(test.latencies_ms, ref.latencies_ms) == 0.0
    # back to back (test x3, then reference x3) the same burst reads as the test probe 2x fast
    ex = FakeLoadedExecutor(SimulatedReplica(8), burst={2, 3, 4, 5})
    back_to_back = [ex.run((0, 1), 1).latencies_ms[0] for _ in range(3)], [ex.run((2, 3), 1).latencies_ms[0] for _ in range(3)]
    assert reference_ratio(*back_to_back) == 0.5


class _FailsOn(FakeLoadedExecutor):
    def __init__(self, replica, bad):
        super().__init__(replica)
        self.bad = bad

    def run(self, gpus, repeats=1):
        if tuple(gpus) == self.bad:
            self.calls.append((tuple(gpus), repeats))
            raise ExecutorError("worker 2 is gone")
        return super().run(gpus, repeats)


def test_a_pair_stops_at_the_first_error_and_the_failed_probe_carries_it():
    ex = _FailsOn(SimulatedReplica(8), bad=(2, 3))
    test, ref = measure_pair(ex, (0, 1), (2, 3), 3)
    assert len(ex.calls) == 2  # test, then the reference fails: no further round
    assert test.ok and test.latencies_ms == (20.0,)
    assert not ref.ok and ref.error == "worker 2 is gone" and ref.latencies_ms == ()


def test_paired_ratio_needs_one_latency_of_each_per_round():
    with pytest.raises(ValueError, match="one latency each per round"):
        paired_log_ratio([10.0, 11.0], [10.0])
    with pytest.raises(ValueError):
        paired_log_ratio([10.0], [0.0])
    with pytest.raises(ValueError, match="repeats must be >= 1"):
        measure_pair(FakeLoadedExecutor(SimulatedReplica(8)), (0, 1), (2, 3), 0)
