"""The Phase 1/2 driver over an executor: records, errors, degraded replicas, reproducibility."""

from __future__ import annotations

import pickle
from functools import partial

import pytest

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import Phase1Result, run_phase1
from faultsense_pipelines.localize import localize as _localize
from faultsense_pipelines.localize import run_phase2 as _run_phase2
from faultsense_pipelines.replica.executor import ExecutorError, ProbeExecutor, ProbeMeasurement
from faultsense_pipelines.replica.faults import GpuFault, LinkFault
from faultsense_pipelines.replica.vocabulary import DrilldownMethod
from faultsense_pipelines.sim.simulator import SimulatedReplica

#: these tests are of the adaptive drill-down (exact on noise-free probes), not the default one
localize = partial(_localize, method=DrilldownMethod.ADAPTIVE)
run_phase2 = partial(_run_phase2, method=DrilldownMethod.ADAPTIVE)


class FakeFlakyExecutor:
    """A simulated replica whose probes over some GPU sets cannot be measured (test double)."""

    name = "fake-flaky"

    def __init__(self, replica: SimulatedReplica, broken: set[tuple[int, ...]], raise_instead: bool = False):
        self.replica, self.gpus, self.broken, self.raise_instead = replica, replica.gpus, broken, raise_instead

    def run(self, gpus, repeats=1):
        probe = tuple(sorted(gpus))
        if probe in self.broken:
            if self.raise_instead:
                raise ExecutorError("worker crashed")
            return ProbeMeasurement(probe, (), error="timeout")
        return self.replica.run(probe, repeats)

    def close(self):
        pass


def test_simulated_replica_is_a_probe_executor_and_is_reproducible():
    a = SimulatedReplica(16, [GpuFault(3, 1.5)], noise_sigma=0.03, seed=11)
    b = SimulatedReplica(16, [GpuFault(3, 1.5)], noise_sigma=0.03, seed=11)
    assert isinstance(a, ProbeExecutor) and a.name == "simulated"
    assert [a.run([0, 1, 3], 3) for _ in range(5)] == [b.run([0, 1, 3], 3) for _ in range(5)]
    assert a.slowdown([0, 3]) == 1.5 and a.slowdown([0, 1]) == 1.0


def test_a_probe_takes_the_worst_slowdown_it_touches():
    r = SimulatedReplica(8, [GpuFault(1, 1.5), LinkFault((2, 3), 2.5)], base_ms=10.0)
    assert r.run([1, 2, 3]).latencies_ms == (25.0,)
    assert r.run([1, 2]).latencies_ms == (15.0,)
    assert r.run([2, 4]).latencies_ms == (10.0,)


@pytest.mark.parametrize("bad", [dict(gpus=0), dict(noise_sigma=-0.1), dict(base_ms=0.0), dict(faults=[GpuFault(9, 2.0)])])
def test_simulated_replica_rejects_bad_arguments(bad):
    kwargs = dict(gpus=8) | bad
    with pytest.raises(ValueError):
        SimulatedReplica(**kwargs)


def test_simulated_replica_rejects_unknown_gpus_in_a_probe():
    with pytest.raises(ValueError, match="outside"):
        SimulatedReplica(8).run([1, 8])


@pytest.mark.parametrize("raise_instead", [False, True])
def test_errored_probes_blame_and_exonerate_nothing(raise_instead):
    cover = plan_cover(8, 4, "greedy")
    replica = SimulatedReplica(8, [LinkFault((3, 4), 1.5)])
    executor = FakeFlakyExecutor(replica, {cover.probes[5]}, raise_instead)  # the only probe with (3, 4)
    loc = localize(executor, cover)
    assert loc.phase1.errors == 1
    assert [r.outcome for r in loc.phase1.records].count("error") == 1
    assert loc.phase1.records[5].latencies_ms == () and loc.phase1.records[5].error
    assert loc.phase1.suspect_probes == () and loc.verdicts == ()  # seen only in an errored probe


def test_a_healthy_replica_needs_no_drilldown():
    p1 = run_phase1(SimulatedReplica(32, noise_sigma=0.02, seed=3), plan_cover(32, 4, "greedy"), repeats=3)
    assert isinstance(p1, Phase1Result) and not p1.needs_drilldown
    assert all(len(r.latencies_ms) == 3 and r.outcome == "pass" for r in p1.records)
    loc = run_phase2(SimulatedReplica(32), p1)
    assert loc.probes_phase2 == 0 and loc.verdicts == ()
    assert pickle.loads(pickle.dumps(p1)) == p1


def test_a_replica_where_most_probes_are_slow_is_reported_degraded_without_verdicts():
    faults = [GpuFault(g, 1.5 + g / 10) for g in range(3)]  # only probe (4, 5, 6, 7) is fast
    loc = localize(SimulatedReplica(8, faults), plan_cover(8, 4, "greedy"))
    assert loc.replica_degraded and loc.verdicts == () and loc.probes_phase2 == 0


def test_phase2_records_are_numbered_and_judged_against_the_phase1_threshold():
    loc = localize(SimulatedReplica(32, [LinkFault((5, 17), 1.7)]), plan_cover(32, 4, "greedy"))
    assert [r.probe_index for r in loc.phase2_records] == list(range(loc.probes_phase2))
    for r in loc.phase2_records:
        assert r.phase == 2 and len(r.gpus) == 4
        half = (loc.phase1.threshold_ms * loc.phase1.baseline_ms) ** 0.5  # t/2 in log terms
        cut = half if len(r.latencies_ms) > 1 else loc.phase1.threshold_ms  # re-measured: 3 latencies
        assert (r.outcome == "fail") == (r.latency_ms > cut)
    (verdict,) = loc.verdicts
    assert (verdict.gpu, verdict.peer_gpu, verdict.status) == (5, 17, "confirmed")
    assert verdict.slowdown == pytest.approx(1.7) and verdict.probes_used >= 1


def test_executor_and_cover_must_agree_on_the_replica_size():
    with pytest.raises(ValueError, match="gpus"):
        localize(SimulatedReplica(16), plan_cover(8, 4, "greedy"))


def test_a_probe_between_the_two_thresholds_is_measured_again_before_it_is_judged():
    from faultsense_pipelines.measure.repeats import judge_probe

    replica = SimulatedReplica(8, [GpuFault(1, 1.06)], base_ms=10.0)  # log 1.06 is in (t/2, t] for t = log 1.1
    m, outcome = judge_probe(replica, (0, 1), 2, baseline_ms=10.0, threshold_ms=11.0)
    assert outcome == "fail" and len(m.latencies_ms) == 6  # 2 + 2 x 2 repeats
    m, outcome = judge_probe(replica, (0, 2), 2, baseline_ms=10.0, threshold_ms=11.0)
    assert outcome == "pass" and len(m.latencies_ms) == 2
    m, outcome = judge_probe(SimulatedReplica(8, [GpuFault(1, 1.2)], base_ms=10.0), (1, 2), 1, 10.0, 11.0)
    assert outcome == "fail" and len(m.latencies_ms) == 1


def test_noise_free_slowdowns_between_the_root_of_the_threshold_and_it_are_found_after_remeasuring():
    loc = localize(SimulatedReplica(32, [GpuFault(7, 1.07)]), plan_cover(32, 4, "greedy"))  # sqrt(1.1) < 1.07 < 1.1
    assert loc.faulty_gpus == [7]
    assert loc.phase1.remeasured > 0


class FailsWhenMeasuredAgain:
    """A replica whose probes over ``gpu`` can be measured once; measuring them again times out."""

    name = "fails-when-measured-again"

    def __init__(self, replica: SimulatedReplica, gpu: int):
        self.replica, self.gpus, self.gpu, self.seen = replica, replica.gpus, gpu, set()

    def run(self, gpus, repeats=1):
        probe = tuple(sorted(gpus))
        if self.gpu in probe and probe in self.seen:
            return ProbeMeasurement(probe, (), error="timeout")
        self.seen.add(probe)
        return self.replica.run(probe, repeats)


def test_an_undecided_phase1_probe_whose_remeasurement_fails_is_an_error_and_exonerates_nothing():
    # GPU 7 slowed x1.07: its probes land between the root of the threshold and the threshold
    # and are measured again; that fails, so they are errors (as in Phase 2), never passes
    cover = plan_cover(32, 4, "greedy")
    phase1 = run_phase1(FailsWhenMeasuredAgain(SimulatedReplica(32, [GpuFault(7, 1.07)]), 7), cover)
    with_7 = [r for r in phase1.records if 7 in r.gpus]
    assert with_7 and all(r.outcome == "error" and r.error == "timeout" for r in with_7)
    assert phase1.errors == len(with_7) and phase1.remeasured == len(with_7)
    assert all(r.outcome == "pass" for r in phase1.records if 7 not in r.gpus)


def test_verdicts_name_the_node_they_sit_on_when_the_topology_places_gpus() -> None:
    from faultsense_pipelines.replica.topology import ReplicaTopology

    topology = ReplicaTopology(32, gpus_per_node=8, node_names=("a17", "a18", "a19", "a20"))
    replica = SimulatedReplica(32, [GpuFault(9, 2.0), LinkFault((5, 17), 1.8)])
    loc = localize(replica, plan_cover(32, 4, "greedy"), topology=topology)
    # by hand: GPU 9 is on node 9 // 8 = 1 (a18); link 5-17 joins node 0 (a17) and node 2 (a19)
    nodes = {v.component: v.node for v in loc.verdicts if v.status == "confirmed"}
    assert nodes == {"gpu:9": "a18", "link:5-17": "a17,a19"}
    assert {v["component"]: v["node"] for v in loc.to_dict()["verdicts"] if v["component"] in nodes} == nodes
    assert all(v.node is None for v in localize(replica, plan_cover(32, 4, "greedy")).verdicts)  # no topology: unknown


def test_a_sequential_round_whose_executor_raises_is_an_error_row_not_a_crash():
    # GPU 5 is 2x slow; every Phase 2 probe holding GPU 9 raises ExecutorError (a worker that
    # crashes whenever it runs): the sweep still ends, those rounds are error rows, and GPU 5 is
    # confirmed by rounds that never hold GPU 9 -- or left unconfirmed, never a crash
    replica = SimulatedReplica(16, [GpuFault(5, 2.0)], noise_sigma=0.01, seed=4)
    cover = plan_cover(16, 4)

    class CrashesOnNine(FakeFlakyExecutor):
        phase2 = False

        def run(self, gpus, repeats=1):
            if self.phase2 and 9 in gpus:
                raise ExecutorError("worker 9 crashed")
            return self.replica.run(tuple(sorted(gpus)), repeats)

    executor = CrashesOnNine(replica, set())
    phase1 = run_phase1(executor, cover, repeats=3)
    executor.phase2 = True
    loc = _run_phase2(executor, phase1, method=DrilldownMethod.SEQUENTIAL, repeats=3)
    errors = [r for r in loc.phase2_records if r.error is not None]
    assert errors and all(r.error == "worker 9 crashed" and r.outcome == "error" for r in errors)
    assert not [r for r in loc.phase2_records if r.error is None and 9 in r.gpus]
    assert {v.component for v in loc.verdicts if v.status == "confirmed"} <= {"gpu:5"}
