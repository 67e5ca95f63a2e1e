"""Localization bookkeeping in arrays gives what the per-probe Python objects gave.

* ``SimulatedReplica.run_many`` returns exactly the measurements of ``run`` called probe by
  probe (same seed: same noise draws, latencies and ``probes_run``);
* ``Knowledge`` (the drill-down's state) exonerates exactly the GPUs and links of the passing
  probes, compared with a brute-force set of link tuples, and counts each GPU's passing and
  failing probes.
"""

from __future__ import annotations

import random
from itertools import combinations

import pytest

from faultsense_pipelines.localize.drilldown.common import Knowledge
from faultsense_pipelines.measure.batch import measure_all
from faultsense_pipelines.measure.rounds import measure_rounds
from faultsense_pipelines.replica.faults import GpuFault, LinkFault
from faultsense_pipelines.sim.simulator import SimulatedReplica


def _random_probes(rng: random.Random, n: int, count: int, k: int) -> list[tuple[int, ...]]:
    return [tuple(rng.sample(range(n), rng.randrange(1, k + 1))) for _ in range(count)]


@pytest.mark.parametrize(("sigma", "repeats"), [(0.0, 1), (0.05, 1), (0.05, 3)])
def test_run_many_is_run_probe_by_probe(sigma, repeats):
    rng = random.Random(repeats + int(sigma * 100))
    faults = [GpuFault(gpu=3, slowdown=1.5), LinkFault(link=(7, 20), slowdown=1.8)]
    probes = _random_probes(rng, 40, 200, 8)
    one, many = SimulatedReplica(40, faults, sigma, seed=9), SimulatedReplica(40, faults, sigma, seed=9)
    expected = [one.run(p, repeats) for p in probes]
    assert many.run_many(probes, repeats) == expected
    assert many.probes_run == one.probes_run == len(probes)
    # the slow GPU and the slow link show in the noise-free means: x1.5 with GPU 3, x1.8 with both of 7, 20
    if sigma == 0.0:
        for p, m in zip(probes, expected, strict=True):
            slow = max(1.5 if 3 in p else 1.0, 1.8 if {7, 20} <= set(p) else 1.0)
            assert m.latencies_ms == (20.0 * slow,) * repeats


def test_phase1_measurement_takes_the_batch_path_with_the_same_draws():
    rng = random.Random(4)
    probes = _random_probes(rng, 30, 50, 6)
    plain = SimulatedReplica(30, [GpuFault(gpu=5, slowdown=2.0)], 0.03, seed=2)
    batch = SimulatedReplica(30, [GpuFault(gpu=5, slowdown=2.0)], 0.03, seed=2)
    assert measure_all(batch, probes, 2) == [plain.run(p, 2) for p in probes]
    # rounds: every probe once, then every probe again (round-major draws)
    plain, batch = SimulatedReplica(30, (), 0.03, seed=3), SimulatedReplica(30, (), 0.03, seed=3)
    by_round = [[plain.run(p, 1).latencies_ms[0] for p in probes] for _ in range(3)]
    got = measure_rounds(batch, probes, 3)
    assert [m.latencies_ms for m in got] == [tuple(by_round[r][i] for r in range(3)) for i in range(len(probes))]


def test_knowledge_exonerates_the_links_of_passing_probes_as_a_set_of_tuples_would():
    rng = random.Random(8)
    n = 25
    passed = [*_random_probes(rng, n, 30, 5), (4, 4, 9)]  # a GPU named twice counts once
    failed = _random_probes(rng, n, 6, 5)
    kn = Knowledge(n, 5, passed, lambda gpus: False, failed)
    ok_links = {e for p in passed for e in combinations(sorted(set(p)), 2)}
    assert kn.ok_gpu == {g for p in passed for g in p}
    for a, b in combinations(range(n), 2):
        assert bool(kn.ok_link[a, b]) == bool(kn.ok_link[b, a]) == ((a, b) in ok_links)
        assert kn.candidate_link(a, b) == ((a, b) not in ok_links)
    assert [int(kn.passes[g]) for g in range(n)] == [sum(g in p for p in passed) for g in range(n)]
    assert [int(kn.fails[g]) for g in range(n)] == [sum(g in p for p in failed) for g in range(n)]
    # a Phase 2 probe that passes exonerates its links too
    fresh = next(e for e in combinations(range(n), 2) if e not in ok_links)
    kn.exonerate(fresh)
    assert kn.ok_link[fresh] and not kn.candidate_link(*fresh)
