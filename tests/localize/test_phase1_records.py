"""One Phase 1 container: :class:`Phase1Records` holds every probe, errored ones as rows.

The expected records are written out by hand (or built one object per probe), independent of
the arrays the container keeps.
"""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import Phase1Records, Phase1Result, ProbeRecord, run_phase1
from faultsense_pipelines.replica.executor import ProbeMeasurement
from faultsense_pipelines.sim.simulator import SimulatedReplica


class ErrorsOn:
    """A noise-free replica (10 ms a probe) whose probes over ``gpu`` time out."""

    name = "errors-on"

    def __init__(self, gpus: int, gpu: int) -> None:
        self.gpus, self.gpu = gpus, gpu

    def run(self, gpus, repeats=1):
        probe = tuple(sorted(gpus))
        if self.gpu in probe:
            return ProbeMeasurement(probe, (), error="timeout")
        return ProbeMeasurement(probe, (10.0,) * repeats)

    def close(self) -> None:
        pass


def test_a_sweep_with_errors_keeps_them_as_rows_of_the_one_container() -> None:
    cover = plan_cover(8, 4, "greedy")
    p1 = run_phase1(ErrorsOn(8, 3), cover, repeats=2)
    assert type(p1.records) is Phase1Records
    expected = [
        ProbeRecord(1, i, p, (), "timeout", "error") if 3 in p else ProbeRecord(1, i, p, (10.0, 10.0), None, "pass")
        for i, p in enumerate(cover.probes)
    ]
    assert list(p1.records) == expected and p1.records == tuple(expected)
    assert p1.errors == sum(3 in p for p in cover.probes) > 0
    assert p1.records.first_latencies(2) == [[] if 3 in p else [10.0, 10.0] for p in cover.probes]
    assert pickle.loads(pickle.dumps(p1)) == p1


def test_records_given_one_object_per_probe_become_the_container_and_read_back_the_same() -> None:
    records = (
        ProbeRecord(1, 0, (0, 1, 2), (10.0, 11.0), None, "pass"),
        ProbeRecord(1, 1, (3, 4), (30.0,), None, "fail"),  # fewer GPUs and fewer latencies
        ProbeRecord(1, 2, (0, 3, 4), (), "worker died", "error"),
    )
    p1 = Phase1Result(5, 3, "greedy", records, 10.0, 12.0, (1,), False, 1)
    assert type(p1.records) is Phase1Records
    assert tuple(p1.records) == records and p1.records[1] == records[1] and p1.records[-1] == records[2]
    assert p1.records.first_latencies(1) == [[10.0], [30.0], []]
    assert list(p1.records.passed())[1] == ProbeRecord(1, 1, (3, 4), (30.0,), None, "pass")


@pytest.mark.parametrize(
    ("record", "words"),
    [
        (ProbeRecord(2, 0, (0, 1), (1.0,), None, "pass"), "records[0] is not of phase 1"),
        (ProbeRecord(1, 5, (0, 1), (1.0,), None, "pass"), "records[0] has probe_index 5"),
        (ProbeRecord(1, 0, (0, 1), (), "timeout", "pass"), "records[0] has an error but not outcome"),
        (ProbeRecord(1, 0, (0, 1), (1.0,), "timeout", "error"), "records[0] is an error with a latency"),
        (ProbeRecord(1, 0, (0, 1), (float("nan"),), None, "pass"), "records[0] has a NaN latency"),
    ],
)
def test_a_record_the_container_cannot_hold_is_named(record: ProbeRecord, words: str) -> None:
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]")):
        Phase1Records.of([record])


def test_an_older_pickle_with_a_tuple_of_records_loads_as_the_container() -> None:
    p1 = run_phase1(SimulatedReplica(8, noise_sigma=0.02, seed=1), plan_cover(8, 4), repeats=3)
    as_tuple = tuple(p1.records)
    old = pickle.loads(pickle.dumps(p1))
    object.__setattr__(old, "records", as_tuple)  # what an output pickled before the container held
    loaded = pickle.loads(pickle.dumps(old))
    assert type(loaded.records) is Phase1Records and tuple(loaded.records) == as_tuple and loaded == p1
    assert np.array_equal(loaded.records.members, np.asarray([r.gpus for r in as_tuple]))


class OneLatencyAlways(ErrorsOn):
    """Returns one latency whatever ``repeats`` asks for (a broken executor)."""

    def run(self, gpus, repeats=1):
        return ProbeMeasurement(tuple(sorted(gpus)), (10.0,))


def test_an_executor_that_returns_the_wrong_number_of_latencies_is_named() -> None:
    with pytest.raises(ValueError, match=r"executor errors-on returned 1 latencies for probe \[0, 1, 2, 3\], asked for 2"):
        run_phase1(OneLatencyAlways(8, 99), plan_cover(8, 4, "greedy"), repeats=2, interleave=False)
