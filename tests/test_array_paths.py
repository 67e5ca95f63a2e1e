"""The array fast paths of a large sweep against the per-probe paths they replace.

``run_phase1`` measures a simulator's cover as one ``(P, k)`` array (``run_array``) instead of
probe by probe (the records are one container either way); ``ordered_rounds`` places long runs
of GPU-disjoint probes at once from 20,000 probes on. Each must give exactly what the per-probe path gives: the same
measurements, judgement and records, the same rounds. The per-probe path is the independent
source here (an executor without ``run_array``; the bit-mask loop on the same probes).
"""

from __future__ import annotations

import random

import pytest

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.cover.rounds import _BATCHED_FROM, ordered_rounds
from faultsense_pipelines.localize import run_phase1
from faultsense_pipelines.replica.faults import GpuFault, LinkFault
from faultsense_pipelines.sim.simulator import SimulatedReplica


class PerProbe:
    """A simulated replica seen through ``run`` and ``run_many`` only (no ``run_array``)."""

    def __init__(self, replica: SimulatedReplica) -> None:
        self._replica = replica
        self.name = replica.name
        self.gpus = replica.gpus

    def run(self, gpus, repeats=1):
        return self._replica.run(gpus, repeats)

    def run_many(self, probes, repeats=1):
        return self._replica.run_many(probes, repeats)

    def close(self) -> None:
        pass


def _replica(n: int, faults, sigma: float, seed: int) -> SimulatedReplica:
    return SimulatedReplica(n, faults, noise_sigma=sigma, seed=seed)


CASES = [
    # n, k, faults, noise sigma, repeats, interleave
    (64, 8, [GpuFault(17, 1.5)], 0.02, 3, True),
    (64, 8, [LinkFault((3, 40), 1.8)], 0.05, 1, True),
    (100, 4, [GpuFault(2, 2.0), LinkFault((10, 71), 1.4)], 0.03, 3, False),
    (32, 4, [], 0.1, 5, True),
    (25, 8, [GpuFault(g, 2.5) for g in (1, 5, 9, 13)], 0.0, 1, True),  # most probes slow
]


@pytest.mark.parametrize(("n", "k", "faults", "sigma", "repeats", "interleave"), CASES)
def test_phase1_on_arrays_equals_phase1_probe_by_probe(n, k, faults, sigma, repeats, interleave) -> None:
    cover = plan_cover(n, k)
    replica, arrays = _replica(n, faults, sigma, 7), []
    run_array = replica.run_array
    replica.run_array = lambda members, repeats=1: arrays.append(len(members)) or run_array(members, repeats)
    fast = run_phase1(replica, cover, repeats=repeats, interleave=interleave)
    slow = run_phase1(PerProbe(_replica(n, faults, sigma, 7)), cover, repeats=repeats, interleave=interleave)
    assert arrays and arrays[0] == len(cover.probes)  # the fast path was taken: the cover as one array
    assert type(fast.records) is type(slow.records)  # one container either way
    assert fast.records == slow.records
    assert [(r.phase, r.probe_index, tuple(r.gpus), r.latencies_ms, r.error, r.outcome) for r in fast.records] == [
        (r.phase, r.probe_index, tuple(r.gpus), r.latencies_ms, r.error, r.outcome) for r in slow.records
    ]
    for field in ("baseline_ms", "threshold_ms", "suspect_probes", "replica_degraded", "errors", "remeasured", "anchored"):
        assert getattr(fast, field) == getattr(slow, field), field


@pytest.mark.scale
def test_batched_first_fit_equals_the_bit_mask_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Random probe sets above the batching size, in index order and shuffled, and a real
    cover's probes: the rounds equal those of the bit-mask loop (the batching switched off)."""
    import faultsense_pipelines.cover.rounds as rounds

    rng = random.Random(5)
    sets = [[tuple(sorted(rng.sample(range(n), k))) for _ in range(_BATCHED_FROM + 500)] for n, k in ((1000, 8),)]
    sets.append(list(plan_cover(1024, 8).probes))  # 18,816 probes: GPU-disjoint runs, as in production
    sets[-1] = sets[-1] + sets[-1][: _BATCHED_FROM - len(sets[-1]) + 100]
    for probes in sets:
        n = 1 + max(max(p) for p in probes)
        for order in (None, rng.sample(range(len(probes)), len(probes))):
            fast = ordered_rounds(probes, n, order)
            with monkeypatch.context() as m:
                m.setattr(rounds, "_BATCHED_FROM", 10**12)
                assert fast == ordered_rounds(probes, n, order)
