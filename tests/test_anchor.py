"""Most probes slow: a few slow components are localized, a uniform shift or a slow replica is not."""

from __future__ import annotations

import random
from functools import partial

import pytest

from faultsense_pipelines.cover import Cover, plan_cover
from faultsense_pipelines.localize import localize as _localize
from faultsense_pipelines.localize.anchor import anchor_sweep, explains_slow_probes, healthy_cross_probes
from faultsense_pipelines.localize.suspects import MedianRatioRule, RobustRule, fast_cluster_verdict
from faultsense_pipelines.replica.faults import GpuFault, LinkFault
from faultsense_pipelines.replica.vocabulary import DrilldownMethod
from faultsense_pipelines.sim.simulator import SimulatedReplica

#: these tests are of the adaptive drill-down (exact on noise-free probes), not the default one
localize = partial(_localize, method=DrilldownMethod.ADAPTIVE)

RULES = [RobustRule(), MedianRatioRule(1.2)]

#: A 13-probe cover of 25 GPUs by probes of 8 (Schönheim's bound L(25, 8) = 13), pinned here
#: so the hand-worked numbers below do not move with the cover search.
COVER_25_8 = Cover(
    gpus=25,
    probe_size=8,
    method="best",
    probes=(
        (1, 8, 12, 15, 17, 18, 20, 23),
        (1, 2, 6, 10, 12, 21, 22, 24),
        (5, 6, 14, 15, 16, 20, 21, 24),
        (2, 5, 9, 13, 16, 17, 18, 22),
        (0, 9, 10, 12, 13, 15, 19, 20),
        (3, 6, 10, 11, 12, 14, 17, 18),
        (3, 8, 9, 11, 13, 21, 23, 24),
        (4, 5, 7, 8, 10, 12, 16, 23),
        (0, 1, 3, 5, 11, 16, 18, 19),
        (1, 4, 5, 6, 7, 9, 13, 14),
        (0, 2, 6, 8, 14, 19, 22, 23),
        (2, 3, 4, 7, 11, 15, 20, 22),
        (0, 4, 7, 17, 18, 19, 21, 24),
    ),
    rounds=tuple((i,) for i in range(13)),
    lower_bound=13,
)
SLOW_GPUS = {5: 2.15, 7: 2.27, 9: 2.52, 10: 2.37}


def test_the_pinned_cover_covers_every_pair_of_25_gpus():
    pairs = {(a, b) for p in COVER_25_8.probes for a in p for b in p if a < b}
    assert len(pairs) == 25 * 24 // 2


@pytest.mark.parametrize("rule", RULES, ids=["robust", "paper"])
@pytest.mark.parametrize("method", ["adaptive", "paper"])
def test_four_slow_gpus_at_n25_k8_are_found_exactly_although_most_probes_are_slow(rule, method):
    """Hand-worked: GPUs 5, 7, 9, 10 slow; only probes 0 and 10 avoid all four.

    So 11 of 13 probes are slow, the median probe is slow and either rule alone gives up
    (``replica_degraded``). The two fast probes read exactly 20 ms, the slowest fast probe
    and the fastest slow one are 1.0x and 2.15x apart (>= t: decisive). They hold
    {1, 8, 12, 15, 17, 18, 20, 23} | {0, 2, 6, 8, 14, 19, 22, 23} = 14 GPUs (8 + 8, less 8
    and 23 counted twice) > 25 / 2, leaving 11 candidate GPUs {3, 4, 5, 7, 9, 10, 11, 13,
    16, 21, 24}; every slow probe holds one of 5, 7, 9, 10. So the fast cluster is taken as
    healthy, and Phase 2 judged against its 20 ms confirms exactly the four.
    """
    faults = [GpuFault(g, s) for g, s in SLOW_GPUS.items()]
    replica = SimulatedReplica(25, faults)
    latencies = [[replica.slowdown(p) * 20.0] for p in COVER_25_8.probes]
    assert [i for i, v in enumerate(latencies) if v == [20.0]] == [0, 10]
    assert rule.judge(latencies).replica_degraded
    loc = localize(SimulatedReplica(25, faults), COVER_25_8, rule=rule, method=method)
    assert loc.phase1.anchored and not loc.replica_degraded
    assert loc.phase1.suspect_probes == tuple(i for i in range(13) if i not in (0, 10))
    assert loc.phase1.baseline_ms == pytest.approx(20.0)
    assert loc.faulty_gpus == [5, 7, 9, 10]
    assert loc.faulty_links == [] and not [v for v in loc.verdicts if v.status == "inconclusive"]
    assert loc.to_dict()["anchored"] is True


@pytest.mark.parametrize("rule", RULES, ids=["robust", "paper"])
def test_a_uniform_1_5x_shift_of_every_gpu_creates_no_suspect_and_is_not_degraded(rule):
    faults = [GpuFault(g, 1.5) for g in range(32)]
    loc = localize(SimulatedReplica(32, faults), plan_cover(32, 4), rule=rule)
    assert loc.phase1.suspect_probes == () and not loc.replica_degraded and not loc.phase1.anchored
    assert loc.verdicts == () and loc.probes_phase2 == 0
    assert loc.phase1.baseline_ms == pytest.approx(1.5 * 20.0)


@pytest.mark.parametrize("rule", RULES, ids=["robust", "paper"])
@pytest.mark.parametrize("seed", range(10))
def test_every_gpu_slowed_by_its_own_random_factor_is_reported_degraded(rule, seed):
    # probes read the worst of 4 factors in [1.3, 3]: a continuum from ~1.6x to 3x with no
    # tight group of fast probes standing apart, so no fast cluster speaks for the replica
    rng = random.Random(seed)
    faults = [GpuFault(g, rng.uniform(1.3, 3.0)) for g in range(32)]
    loc = localize(SimulatedReplica(32, faults), plan_cover(32, 4), rule=rule)
    assert loc.replica_degraded and not loc.phase1.anchored
    assert loc.verdicts == () and loc.probes_phase2 == 0


def test_a_fast_cluster_of_too_few_gpus_keeps_the_replica_degraded():
    # n=8, k=4: GPUs 0, 1, 2 slow; only probe (4, 5, 6, 7) is fast and vouches for 4 = n/2 GPUs
    probes = [(0, 1, 2, 3), (4, 5, 6, 7), (0, 1, 4, 5), (2, 3, 6, 7), (0, 1, 6, 7), (2, 3, 4, 5)]
    assert not explains_slow_probes(8, probes, [0, 2, 3, 4, 5])
    lat = [[30.0], [20.0], [32.0], [34.0], [32.0], [34.0]]
    assert anchor_sweep(MedianRatioRule(), lat, probes, 8) is None


def test_a_slow_probe_made_only_of_exonerated_components_refutes_the_fast_cluster():
    probes = [(0, 1, 2), (2, 3, 4), (0, 1, 3), (0, 2, 3)]  # (0, 2, 3): its GPUs and links passed
    assert not explains_slow_probes(5, probes, [3])
    assert explains_slow_probes(5, probes, [2])  # (0, 1, 3): link (1, 3) is a candidate


def test_the_fast_cluster_ignores_a_uniform_factor_and_needs_a_decisive_gap():
    lat = [[20.0], [20.0], [20.0], [44.0], [30.0], [52.0]]
    v = fast_cluster_verdict(MedianRatioRule(1.2).judge, lat, 0.18)
    assert v is not None and v.suspects == (3, 4, 5) and v.baseline_ms == 20.0
    shifted = fast_cluster_verdict(MedianRatioRule(1.2).judge, [[3 * x[0]] for x in lat], 0.18)
    assert shifted is not None and shifted.suspects == v.suspects
    # a continuum 20, 22, 24.2, ... (x1.1 each): no gap as wide as the threshold
    continuum = [[20.0 * 1.1**i] for i in range(8)]
    assert fast_cluster_verdict(MedianRatioRule(1.2).judge, continuum, 0.18) is None
    assert RobustRule().anchor(continuum) is None


def test_one_fast_probe_is_no_cluster():
    assert fast_cluster_verdict(MedianRatioRule(1.2).judge, [[20.0], [40.0], [40.0], [44.0]], 0.18) is None


def test_cross_probes_cover_every_link_between_exonerated_gpus_with_k_gpus_each():
    passed = [(1, 8, 12, 15, 17, 18, 20, 23), (0, 2, 6, 8, 14, 19, 22, 23)]
    probes = healthy_cross_probes(passed, 8)
    exonerated = sorted(set().union(*map(set, passed)))
    covered = {(a, b) for p in (*passed, *probes) for a in p for b in p if a < b}
    assert all((a, b) in covered for a in exonerated for b in exonerated if a < b)
    assert all(len(p) == 8 and set(p) <= set(exonerated) for p in probes)


def test_a_slow_link_between_two_fast_probes_is_found_by_the_cross_probes():
    # GPUs 5, 7, 9, 10 slow as above, and link (1, 0) -- between the two fast probes -- slow
    faults = [GpuFault(g, s) for g, s in SLOW_GPUS.items()] + [LinkFault((0, 1), 1.8)]
    loc = localize(SimulatedReplica(25, faults), COVER_25_8)
    assert loc.phase1.anchored
    assert loc.faulty_gpus == [5, 7, 9, 10] and loc.faulty_links == [[0, 1]]


def test_two_probes_as_far_below_the_baseline_as_a_suspect_is_above_it_make_the_baseline_untrustworthy():
    """A newcomer's counterexample (n=25, k=8, slow GPUs 0, 3, 15, 24 at 1.907, 2.431, 1.45,
    1.402 on the 15-probe cover): only two probes avoid every slow GPU (20 ms), the median
    probe holds the 1.402x GPU (28.04 ms). Judged against that median, 20 ms is 0.338 below it
    in log, just short of the old 1.5 t = 0.342 and only two probes, so the sweep passed as
    healthy-majority and silently missed GPUs 15 and 24. Faults only slow probes down: two
    probes each faster than the baseline by the suspect margin t prove the baseline slow."""
    latencies = [[20.0]] * 2 + [[28.04]] * 3 + [[29.0]] * 3 + [[38.14]] * 3 + [[48.62]] * 4
    assert RobustRule().judge(latencies).replica_degraded
    anchored = RobustRule().anchor(latencies)
    assert anchored is not None and anchored.baseline_ms == pytest.approx(20.0)


def test_the_newcomers_four_slow_gpus_are_found_exactly_on_the_default_cover():
    faults = [GpuFault(0, 1.907), GpuFault(3, 2.431), GpuFault(15, 1.45), GpuFault(24, 1.402)]
    loc = localize(SimulatedReplica(25, faults), plan_cover(25, 8))
    assert list(loc.faulty_gpus) == [0, 3, 15, 24] and not loc.faulty_links and not loc.replica_degraded
