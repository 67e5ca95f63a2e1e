"""Which executors run a batch, and the one adapter for those that cannot.

``measure_all`` and ``measure_rounds`` take every executor through ``batched``: the
simulator measures a batch in one call (it says so by implementing ``BatchExecutor`` and
``ArrayExecutor``); any other executor is measured probe by probe, an ``ExecutorError`` being
that probe's error row. The expected values are worked out by hand from a counting executor.
"""

from __future__ import annotations

from collections.abc import Sequence

from faultsense_pipelines.localize.suspects import FloorRule, MedianRatioRule, RobustRule
from faultsense_pipelines.measure.batch import batched, measure_all
from faultsense_pipelines.measure.rounds import measure_pair, measure_rounds
from faultsense_pipelines.replica.executor import ArrayExecutor, BatchExecutor, ExecutorError, ProbeExecutor, ProbeMeasurement
from faultsense_pipelines.sim.simulator import SimulatedReplica


class CountingExecutor:
    """A plain executor: the i-th call returns latency i ms per repeat; GPU 7 raises."""

    name = "counting"
    gpus = 8

    def __init__(self) -> None:
        self.calls: list[tuple[tuple[int, ...], int]] = []

    def run(self, gpus: Sequence[int], repeats: int = 1) -> ProbeMeasurement:
        self.calls.append((tuple(gpus), repeats))
        if 7 in gpus:
            raise ExecutorError("worker 7 is gone")
        return ProbeMeasurement(tuple(sorted(gpus)), (float(len(self.calls)),) * repeats)

    def close(self) -> None:
        pass


def test_the_simulator_runs_arrays_and_a_plain_executor_is_adapted() -> None:
    sim = SimulatedReplica(8, (), 0.0, seed=1)
    assert isinstance(sim, ArrayExecutor) and isinstance(sim, BatchExecutor) and batched(sim) is sim
    plain = CountingExecutor()
    assert isinstance(plain, ProbeExecutor) and not isinstance(plain, BatchExecutor)
    adapted = batched(plain)
    assert isinstance(adapted, BatchExecutor) and adapted.name == "counting" and adapted.gpus == 8


def test_a_plain_executor_measured_all_at_once_is_measured_one_by_one_with_errors_as_rows() -> None:
    plain = CountingExecutor()
    got = measure_all(plain, [(0, 1), (6, 7), (2, 3)], 2)
    assert got == [
        ProbeMeasurement((0, 1), (1.0, 1.0)),
        ProbeMeasurement((6, 7), (), error="worker 7 is gone"),
        ProbeMeasurement((2, 3), (3.0, 3.0)),
    ]
    assert plain.calls == [((0, 1), 2), ((6, 7), 2), ((2, 3), 2)]


def test_rounds_on_a_plain_executor_skip_a_probe_after_its_error() -> None:
    plain = CountingExecutor()
    got = measure_rounds(plain, [(0, 1), (6, 7), (2, 3)], 2)
    # round 1: calls 1, 2 (error), 3; round 2: calls 4, 5 (the failed probe is not run again)
    assert got == [
        ProbeMeasurement((0, 1), (1.0, 4.0)),
        ProbeMeasurement((6, 7), (), error="worker 7 is gone"),
        ProbeMeasurement((2, 3), (3.0, 5.0)),
    ]
    assert [c[0] for c in plain.calls] == [(0, 1), (6, 7), (2, 3), (0, 1), (2, 3)]


def test_a_pair_alternates_and_stops_at_the_first_error() -> None:
    plain = CountingExecutor()
    test, ref = measure_pair(plain, (0, 1), (2, 3), 3)
    assert (test.latencies_ms, ref.latencies_ms) == ((1.0, 4.0, 5.0), (2.0, 3.0, 6.0))  # T R, R T, T R
    test, ref = measure_pair(CountingExecutor(), (0, 1), (6, 7), 3)
    assert test.latencies_ms == (1.0,) and ref.error == "worker 7 is gone"


def test_the_robust_rule_states_its_floor_and_the_ratio_rule_has_none() -> None:
    assert isinstance(RobustRule(min_slowdown=1.3), FloorRule)
    assert not isinstance(MedianRatioRule(1.2), FloorRule)
