"""The sequential drill-down: its test's guarantee, checked exactly or by brute force.

Latencies here come from small generators written in this file (not the project's
simulator): symmetric heavy-tailed draws, shared drift, stalls, and a replica whose probe
latency is the worst slowdown among the GPUs and links it holds.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence

import numpy as np
import pytest

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import localize
from faultsense_pipelines.localize.sequential import (
    ErrorBudget,
    Layout,
    PairedTest,
    claims,
    default_budget,
    rounds_lower_bound,
    sequential_drilldown,
    shape,
    shaped_reference,
)
from faultsense_pipelines.localize.sequential.budget import ProbeBudget
from faultsense_pipelines.localize.sequential.claims import _Context
from faultsense_pipelines.localize.sequential.drilldown import shared_read_cost
from faultsense_pipelines.localize.sequential.eprocess import STRATEGIES, mann_whitney_null, round_factors
from faultsense_pipelines.sim.scenario import parse_scenario
from tests.localize.rounds import shuffled_round


@pytest.mark.parametrize("r", [1, 2, 3, 4])
def test_mann_whitney_null_equals_enumerating_every_order(r: int) -> None:
    counts = np.zeros(r * r + 1)
    for test_ranks in itertools.combinations(range(2 * r), r):
        ref_ranks = [x for x in range(2 * r) if x not in test_ranks]
        counts[sum(t > q for t in test_ranks for q in ref_ranks)] += 1
    assert np.allclose(mann_whitney_null(r), counts / math.comb(2 * r, r))


@pytest.mark.parametrize("r", [1, 2, 3])
def test_every_round_factor_has_null_mean_at_most_one(r: int) -> None:
    p0 = mann_whitney_null(r)
    factors = round_factors(np.arange(r * r + 1), r)  # (strategies, r*r + 1)
    assert np.allclose(factors @ p0, 1.0)
    assert (np.diff(factors, axis=1) >= -1e-12).all()  # nondecreasing: valid for slowdowns below theta
    assert (factors > 0).all()


def test_ville_bound_holds_exactly_for_one_measurement_rounds() -> None:
    # r = 1: under the null each round's count is 0 or 1 with probability 1/2; enumerate every
    # sequence of 14 rounds and add up the probability that the mixture ever reaches 1/a
    a, rounds = 0.05, 14
    reached = 0
    for signs in itertools.product((0, 1), repeat=rounds):
        t = PairedTest(math.log(1.2), a)
        for s in signs:  # a count of s at theta0 and at every theta: test above or below
            t.add([2.0 if s else 1.0], [1.0 if s else 2.0])
            if t.evalue() >= 1 / a:
                reached += 1
                break
    assert reached / 2**rounds <= a


def _symmetric_round(rng: np.random.Generator, r: int, slowdown: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """2r slots of heavy-tailed, drifting, stalling noise; labels assigned in random order."""
    slots = np.exp(0.08 * rng.standard_t(2, size=2 * r) + np.cumsum(rng.normal(0, 0.2, size=2 * r)))
    slots *= np.where(rng.random(2 * r) < 0.05, rng.uniform(1.5, 6.0, size=2 * r), 1.0)
    order = rng.permutation(2 * r)
    return slowdown * slots[order[:r]], slots[order[r:]]


def _stopped(seed: int, r: int, theta0: float, slowdown: float, stop: str, a: float, trials: int) -> int:
    """Of ``trials`` tests at ``theta0`` and level ``a``, each fed up to 60 wild rounds of
    ``_symmetric_round`` with the test side scaled by ``slowdown``, how many ever had the
    property ``stop`` (``"detected"`` or ``"rejected"``)."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(trials):
        t = PairedTest(theta0, a)
        for _ in range(60):
            t.add(*_symmetric_round(rng, r, slowdown))
            if getattr(t, stop):
                hits += 1
                break
    return hits


@pytest.mark.parametrize("r", [1, 3])
def test_healthy_pairs_are_blamed_at_most_at_the_level_under_wild_noise(r: int) -> None:
    # theta = 0: even "slower at all" is never shown for a healthy pair
    a, trials = 0.05, 400
    blamed = _stopped(1, r, math.log(1.2), 1.0, "detected", a, trials)
    # binomial(400, 0.05): mean 20, sd 4.4; the design bound is a, checked with 3 sd of room
    assert blamed <= trials * a + 3 * math.sqrt(trials * a * (1 - a))


@pytest.mark.parametrize("r", [1, 3])
def test_a_negative_theta_tests_the_reverse_null_at_its_level_under_wild_noise(r: int) -> None:
    # theta0 = -log 1.2: the null "T is at least 1.2x faster than R", on its boundary (T
    # exactly 1/1.2 of R, wild exchangeable noise): rejected at most at the level
    a, trials = 0.05, 400
    rejected = _stopped(7, r, -math.log(1.2), 1 / 1.2, "rejected", a, trials)
    assert rejected <= trials * a + 3 * math.sqrt(trials * a * (1 - a))


def test_a_negative_theta_rejects_equal_probes_and_clears_a_slower_reference() -> None:
    rng = np.random.default_rng(8)
    same, slower = PairedTest(-math.log(1.2), 0.001), PairedTest(-math.log(1.2), 0.001)
    for _ in range(30):
        z = rng.normal(0, 0.02, size=12)
        same.add(np.exp(z[:3]), np.exp(z[3:6]))  # T no faster than R: not 1.2x faster
        slower.add(np.exp(z[6:9]), 1.5 * np.exp(z[9:]))  # R 1.5x slower: the null holds
    assert same.rejected and not same.cleared
    assert slower.cleared and not slower.rejected and slower.evalue_now() < 1e-6
    # the datum divides T's latencies by exp(theta0): here multiplies them by 1.2
    t = PairedTest(-math.log(1.2), 0.01)
    t.add([1.0], [1.1])  # 1.2 > 1.1: the count is 1, a shift bet's win
    assert t.evalue() > 1.0
    for bad in (0.0, math.inf, math.nan):
        with pytest.raises(ValueError):
            PairedTest(bad, 0.01)


def test_a_slowdown_below_min_slowdown_is_not_confirmed_but_its_interval_says_so() -> None:
    rng = np.random.default_rng(2)
    t = PairedTest(math.log(1.2), 0.001)
    for _ in range(60):
        z = rng.normal(0, 0.01, size=6)
        t.add(1.1 * np.exp(z[:3]), np.exp(z[3:]))
    low, high = t.interval()
    assert not t.rejected and t.detected and t.cleared
    assert 1.05 <= low <= 1.1 <= high <= 1.15


def test_scaling_every_latency_changes_nothing() -> None:
    rng = np.random.default_rng(3)
    rounds = [_symmetric_round(rng, 3, 1.4) for _ in range(12)]
    a, b = PairedTest(math.log(1.2), 0.01), PairedTest(math.log(1.2), 0.01)
    for x, y in rounds:
        a.add(x, y)
        b.add(x * 37.5, y * 37.5)
    assert a.evalue() == b.evalue() and a.interval() == b.interval()


def test_a_confirmed_claim_never_has_an_interval_below_min_slowdown() -> None:
    rng = np.random.default_rng(4)
    for slowdown in (1.25, 1.4, 2.0):
        t = PairedTest(math.log(1.2), 0.01)
        while not t.rejected:
            z = rng.normal(0, 0.02, size=2)
            t.add([slowdown * math.exp(z[0])], [math.exp(z[1])])
        assert t.interval()[0] >= 1.2 - 1e-9


def test_noise_free_rejection_takes_what_the_bound_and_the_mixture_allow() -> None:
    a = 1e-3
    t = PairedTest(math.log(1.2), a)
    rounds = 0
    while not t.rejected:
        t.add([3.0], [1.0])
        rounds += 1
    # no statistic of one measurement a side can beat doubling a round; the mixture's best bet
    # (stake 0.95 on the extreme) grows 1.95x a round and is one of len(STRATEGIES) averaged
    assert rounds >= rounds_lower_bound(a, 1) == 10
    assert rounds <= math.ceil(math.log(len(STRATEGIES) / a) / math.log(1.95))


def test_error_budget_never_spends_more_than_alpha() -> None:
    w = ErrorBudget(0.01)
    total = sum(w.open() for _ in range(10_000))
    assert total == pytest.approx(0.01 * (1 - 1 / 10_001))


def test_shape_counts_nodes_and_pair_kinds() -> None:
    lay = Layout((0, 0, 1, 1, 2, 2), (0, 0, 1))  # nodes 0 and 1 under switch 0
    assert shape([0, 1, 2, 4], lay) == ((2, 1, 1), (1, 2, 3))


# --- the drill-down on a replica of this file's own making ---------------------------------


class _Replica:
    """Probe latency = 10 ms x worst slowdown held x lognormal noise x an optional stall."""

    def __init__(
        self, slow_gpus: dict[int, float], slow_links: dict[tuple[int, int], float], sigma: float, seed: int, stalls: float = 0.0
    ):
        self.slow_gpus, self.slow_links, self.sigma, self.stalls = slow_gpus, slow_links, sigma, stalls
        self.rng = np.random.default_rng(seed)
        self.order = random.Random(seed)

    def latency(self, gpus: tuple[int, ...]) -> float:
        s = max(
            [1.0]
            + [self.slow_gpus.get(g, 1.0) for g in gpus]
            + [v for (a, b), v in self.slow_links.items() if a in gpus and b in gpus]
        )
        stall = self.rng.uniform(1.5, 5.0) if self.rng.random() < self.stalls else 1.0
        return 10.0 * s * math.exp(self.sigma * self.rng.standard_t(3)) * stall

    def round(self, probes: Sequence[tuple[int, ...]], r: int = 1) -> tuple[tuple[float, ...], ...]:
        return shuffled_round(self.latency, self.order, probes, r)


def _phase1(rep: _Replica, n: int, k: int) -> list[tuple[tuple[int, ...], float | None]]:
    """A simple cover: every GPU pair in some probe (n = 16, k = 4: the affine plane of order 4)."""
    probes = [tuple(sorted(p)) for p in _affine_plane_4()]
    lat = [rep.latency(p) for p in probes]
    base = float(np.median(lat))
    return [(p, math.log(x / base)) for p, x in zip(probes, lat)]


def _affine_plane_4() -> list[list[int]]:
    # points (x, y) of GF(4)^2, id 4x + y; lines y = m x + c and x = c (20 lines of 4 points)
    mul = [[0, 0, 0, 0], [0, 1, 2, 3], [0, 2, 3, 1], [0, 3, 1, 2]]
    lines = [[4 * x + (mul[m][x] ^ c) for x in range(4)] for m in range(4) for c in range(4)]
    return lines + [[4 * c + y for y in range(4)] for c in range(4)]


def test_the_cover_of_this_file_holds_every_pair() -> None:
    pairs = {(a, b) for p in _affine_plane_4() for a, b in itertools.combinations(sorted(p), 2)}
    assert len(pairs) == 16 * 15 // 2


def _localize(rep: _Replica, suspect_excess: float = 0.1, **kw: object) -> tuple[set[tuple[int, int | None]], int]:
    phase1 = _phase1(rep, 16, 4)
    suspects = [i for i, (_, x) in enumerate(phase1) if x is not None and x > suspect_excess]
    res = sequential_drilldown(16, 4, phase1, suspects, rep.round, sigma=0.02, budget=400, seed=0, **kw)  # type: ignore[arg-type]
    found = {(c.gpu, c.peer_gpu) for c in res.claims if c.status == "confirmed"}
    return found, res.probes


def test_a_slow_gpu_and_a_slow_link_are_confirmed_and_nothing_else() -> None:
    for seed in range(3):
        found, probes = _localize(_Replica({5: 1.8}, {(2, 9): 1.6}, 0.02, seed))
        assert found == {(5, None), (2, 9)}
        assert probes <= 400


def test_a_healthy_replica_with_false_suspects_blames_nothing() -> None:
    # every probe is "suspect": the drill-down must still blame no one under heavy tails and stalls
    for seed in range(5):
        rep = _Replica({}, {}, 0.05, seed, stalls=0.05)
        phase1 = _phase1(rep, 16, 4)
        res = sequential_drilldown(16, 4, phase1, range(len(phase1)), rep.round, sigma=0.05, budget=300, seed=seed)
        assert not [c for c in res.claims if c.status == "confirmed"]
        assert res.probes <= 300


def test_too_noisy_a_sweep_is_stopped_by_the_gate_before_any_probe() -> None:
    rep = _Replica({5: 1.3}, {}, 0.6, 0)
    phase1 = _phase1(rep, 16, 4)
    res = sequential_drilldown(16, 4, phase1, [0, 1], rep.round, sigma=0.6, budget=100, seed=0)
    assert res.probes == 0 and res.gate is not None and "too noisy" in res.gate
    assert all(c.status == "inconclusive" for c in res.claims)


def test_default_budget_is_phase1_or_four_minimal_claims() -> None:
    assert default_budget(1000, 0.01, 1) == 1000
    # the first four claims' levels 0.01 / (j (j + 1)): log2(200, 600, 1200, 2000) -> 8, 10, 11, 11 rounds
    assert [rounds_lower_bound(0.01 / (j * (j + 1)), 1) for j in range(1, 5)] == [8, 10, 11, 11]
    assert default_budget(6, 0.01, 1) == 2 * 2 * (8 + 10 + 11 + 11) == 160
    # five measurements a side: one round could reach 1/0.005 < C(10, 5) = 252, but the
    # budget still allows 8 rounds per sub-test
    assert rounds_lower_bound(0.005, 5) == 1 and default_budget(6, 0.01, 5) == 128
    assert default_budget(6, 1e-6, 1) == 2 * 2 * (21 + 23 + 24 + 25)  # log2(2e6, 6e6, 1.2e7, 2e7) = 20.9, 22.5, 23.5, 24.3


def test_a_gpu_slow_but_below_min_slowdown_is_reported_inconclusive_never_silently_healthy() -> None:
    # GPU 5 is 1.8x slow; the claim "at least 3x" must clear, and the verdict must say it is
    # slow by an interval that holds 1.8 and lies below 3 -- not drop it as healthy
    for seed in range(3):
        rep = _Replica({5: 1.8}, {}, 0.02, seed)
        phase1 = _phase1(rep, 16, 4)
        suspects = [i for i, (_, x) in enumerate(phase1) if x is not None and x > 0.3]
        res = sequential_drilldown(16, 4, phase1, suspects, rep.round, sigma=0.02, budget=400, seed=seed, min_slowdown=3.0)
        (gpu5,) = [c for c in res.claims if (c.gpu, c.peer_gpu) == (5, None)]
        assert gpu5.status == "inconclusive" and gpu5.interval is not None
        assert 1.0 < gpu5.interval[0] <= 1.8 <= gpu5.interval[1] < 3.0
        assert gpu5.reason is not None and "below min_slowdown 3" in gpu5.reason
        assert not [c for c in res.claims if c.status == "confirmed"]


def test_a_cleared_claim_on_a_healthy_gpu_stays_without_a_verdict() -> None:
    # a healthy GPU the search was pointed at: cleared, and no "slow" verdict is made of noise
    rep = _Replica({}, {}, 0.02, 4)
    phase1 = _phase1(rep, 16, 4)
    res = sequential_drilldown(16, 4, phase1, [0, 4, 8], rep.round, sigma=0.02, budget=400, seed=4)
    assert not [c for c in res.claims if c.status is not None]


# --- nodes: healthy probes spanning more nodes are slower ----------------------------------


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(
    "faults, truth",
    [([], set()), ([{"link": [3, 21], "slowdown": 1.5}], {"link:3-21"}), ([{"gpu": 9, "slowdown": 1.5}], {"gpu:9"})],
)
def test_a_node_gap_in_healthy_latency_blames_nothing_and_hides_no_fault(seed: int, faults: list, truth: set) -> None:
    # 8 nodes of 4 GPUs; a healthy probe is 5% slower per node it spans beyond its first, so a
    # cover's probes differ by up to 1.05**3 with nothing faulty: the verdicts are the injection
    sc = parse_scenario(
        {
            "gpus": 32,
            "probe_size": 4,
            "faults": faults,
            "noise": {"sigma": 0.02, "node_gap": 0.05},
            "topology": {"gpus_per_node": 4},
            "seed": seed,
            "repeats": 3,
        }
    )
    loc = localize(sc.replica(), plan_cover(32, 4), repeats=3, method="sequential", topology=sc.topology, seed=seed)
    assert {v.component for v in loc.verdicts if v.status == "confirmed"} == truth
    reads = shared_read_cost(6) * len(sc.topology.shared_components())  # one quick read of each, at most
    assert loc.probes_phase2 <= default_budget(loc.probes_phase1, 0.01, 3) + reads


@pytest.mark.parametrize("seed", range(3))
def test_a_link_hidden_behind_a_slow_gpu_is_found_when_a_read_fills_a_whole_node(seed: int) -> None:
    # 4 nodes of 4 GPUs; GPU 5 (node 1) 2x slow and link 1-9 (nodes 0 and 2) 1.8x. Phase 1's
    # only probe holding link 1-9 also holds GPU 5, so the link is searched after GPU 5 is
    # confirmed, in GPUs 1, 9, 13; padding them fills node 0 (0, 1, 2, 3), whose reference
    # must be a whole other node, and node 1 holds GPU 5, nodes 2 and 3 the GPUs under
    # search: the reference comes from the whole trusted pool (the search reads, the claims
    # decide). The truth is the injection.
    sc = parse_scenario(
        {
            "gpus": 16,
            "probe_size": 4,
            "faults": [{"gpu": 5, "slowdown": 2.0}, {"link": [1, 9], "slowdown": 1.8}],
            "noise": {"sigma": 0.01},
            "topology": {"gpus_per_node": 4},
            "seed": seed,
        }
    )
    loc = localize(sc.replica(), plan_cover(16, 4), repeats=3, method="sequential", topology=sc.topology, seed=seed)
    assert {v.component: v.status for v in loc.verdicts} == {"gpu:5": "confirmed", "link:1-9": "confirmed"}


def test_a_shaped_reference_moves_a_whole_node_when_single_swaps_cannot() -> None:
    # 4 nodes of 8 GPUs; the test holds 5 GPUs of node 0 (only 3 left there) and one GPU of
    # nodes 1, 2, 3: swapping GPU by GPU fails, moving node 0's five to a free node works
    layout = Layout(tuple(g // 8 for g in range(32)))
    test = (0, 1, 2, 3, 4, 8, 16, 24)
    pool = list(range(32))
    ref = shaped_reference(test, pool, layout, random.Random(0))
    assert ref is not None and not set(ref) & set(test)
    assert shape(ref, layout) == shape(test, layout) == ((5, 1, 1, 1), (10, 18, 0))
    # with nodes 1-3 each missing GPUs, no node can take five: no reference
    assert shaped_reference(test, [5, 6, 7, 9, 10, 17, 18, 25, 26], layout, random.Random(0)) is None


def test_shaped_references_keep_the_shape_on_random_layouts() -> None:
    rng = random.Random(7)
    for _ in range(300):
        per_node, nodes = rng.choice([2, 4, 8]), rng.choice([2, 3, 4, 6])
        switches = rng.choice([1, 2])
        layout = Layout(tuple(g // per_node for g in range(per_node * nodes)), tuple(v % switches for v in range(nodes)))
        n = per_node * nodes
        test = tuple(sorted(rng.sample(range(n), rng.randint(1, min(8, n // 2)))))
        pool = rng.sample(range(n), rng.randint(0, n))
        ref = shaped_reference(test, pool, layout, rng)
        if ref is not None:
            assert shape(ref, layout) == shape(test, layout)
            assert set(ref) <= set(pool) - set(test) and len(set(ref)) == len(test)


@pytest.mark.parametrize("seed", range(3))
def test_a_slightly_slow_link_on_a_quiet_replica_is_confirmed_or_reported_never_silently_healthy(seed: int) -> None:
    # a downtrained lane: one link 1.1x slow, noise sigma 0.01 (about 10 sigma per measurement)
    sc = parse_scenario(
        {"gpus": 64, "probe_size": 8, "faults": [{"link": [3, 40], "slowdown": 1.1}], "noise": {"sigma": 0.01}, "seed": seed}
    )
    cover = plan_cover(64, 8)
    found = localize(sc.replica(), cover, method="sequential", seed=seed, min_slowdown=1.05)
    assert [(v.component, v.status) for v in found.verdicts] == [("link:3-40", "confirmed")]
    assert found.verdicts[0].slowdown == pytest.approx(1.1, abs=0.02)
    # at the default min_slowdown (1.2) the claim cannot be confirmed; it is reported as slow
    # by an interval around 1.1 that lies below 1.2
    sc = parse_scenario(
        {"gpus": 64, "probe_size": 8, "faults": [{"link": [3, 40], "slowdown": 1.1}], "noise": {"sigma": 0.01}, "seed": seed}
    )
    default = localize(sc.replica(), cover, method="sequential", seed=seed)
    assert [(v.component, v.status) for v in default.verdicts] == [("link:3-40", "inconclusive")]
    assert default.verdicts[0].reason is not None and "below min_slowdown 1.2" in default.verdicts[0].reason


def test_a_budget_too_small_for_every_suspect_probe_leaves_their_gpus_inconclusive_and_says_why() -> None:
    # a slow GPU and a slow link; 64 probes settle the GPU but not the search of the link's probe
    rep = _Replica({5: 1.8}, {(2, 9): 1.6}, 0.02, 0)
    phase1 = _phase1(rep, 16, 4)
    suspects = [i for i, (_, x) in enumerate(phase1) if x is not None and x > 0.1]
    res = sequential_drilldown(16, 4, phase1, suspects, rep.round, sigma=0.02, budget=64, seed=0)
    assert res.probes <= 64
    confirmed = {(c.gpu, c.peer_gpu) for c in res.claims if c.status == "confirmed"}
    assert (2, 9) not in confirmed
    unreached = {c.gpu for c in res.claims if c.reason and "Phase 2 budget (64 probes) did not reach" in c.reason}
    assert {2, 9} <= unreached  # the link's ends are named, never silently healthy
    # a budget below one claim's cost stops before any probe and says it is the budget, not the noise
    res = sequential_drilldown(16, 4, phase1, suspects, rep.round, sigma=0.02, budget=10, seed=0)
    assert res.probes == 0 and res.gate is not None and res.gate.startswith("a Phase 2 budget of 10 probes cannot settle")


@pytest.mark.parametrize("seed", range(3))
def test_a_tiny_replica_names_two_slow_links_at_one_gpu(seed: int) -> None:
    # n = 8, k = 4: a probe under search holds half the replica, so its search reads need
    # references that may share GPUs with it; both links and nothing else, well within 3 x 28
    sc = parse_scenario(
        {
            "gpus": 8,
            "probe_size": 4,
            "faults": [{"link": [0, 3], "slowdown": 1.5}, {"link": [0, 6], "slowdown": 1.5}],
            "noise": {"sigma": 0.02},
            "seed": seed,
        }
    )
    loc = localize(sc.replica(), plan_cover(8, 4), repeats=3, method="sequential", seed=seed)
    assert {v.component for v in loc.verdicts if v.status == "confirmed"} == {"link:0-3", "link:0-6"}
    assert loc.probes_phase2 <= 3 * 28


def test_a_tiny_replica_reads_each_open_link_on_its_own_and_the_slow_ones_twice() -> None:
    # noise-free, n = 8, k = 4, links 0-3 and 0-6 1.5x slow: the cover's probes (0,1,2,3) and
    # (0,1,6,7) are slow; the four others pass and clear their pairs, which leaves 8 open
    # links, (0|1) x (2|3) and (0|1) x (6|7). Each is read on its own (a two-GPU probe, as the
    # claims of a replica this small), a probe's links together, in two groups of four beside
    # one measurement each of a clean reference outside them (4 and 5, cleared together by
    # the passing probe (0,1,4,5)); the two that read slow are read once more
    # beside it: 5 + 5 + 3 probes; then the two link claims, and nothing else
    cover = plan_cover(8, 4)
    assert sorted(cover.probes) == sorted([(0, 1, 2, 3), (4, 5, 6, 7), (0, 1, 4, 5), (2, 3, 6, 7), (0, 1, 6, 7), (2, 3, 4, 5)])
    sc = parse_scenario(
        {"gpus": 8, "probe_size": 4, "faults": [{"link": [0, 3], "slowdown": 1.5}, {"link": [0, 6], "slowdown": 1.5}]}
    )
    loc = localize(sc.replica(), cover, repeats=3, method="sequential", seed=0)
    reads = [(r.gpus, r.outcome) for r in loc.phase2_records[:13]]
    assert reads == [
        *[((0, 2), "pass"), ((0, 3), "fail"), ((1, 2), "pass"), ((1, 3), "pass"), ((4, 5), "pass")],
        *[((0, 6), "fail"), ((0, 7), "pass"), ((1, 6), "pass"), ((1, 7), "pass"), ((4, 5), "pass")],
        *[((0, 3), "fail"), ((0, 6), "fail"), ((4, 5), "pass")],
    ]
    claims = [v for v in loc.verdicts if v.probes_used]
    assert {v.component for v in claims} == {"link:0-3", "link:0-6"} and {v.status for v in claims} == {"confirmed"}
    assert loc.probes_phase2 == 13 + sum(v.probes_used for v in claims)


def test_a_link_claim_swaps_in_gpus_whose_path_to_the_kept_end_phase1_cleared() -> None:
    # noise-free, n = 8, claims of two GPUs: links 0-3 and 0-6 slow. The sub-test that keeps 0
    # and swaps 3 out must not swap 6 in ({0, 6} is as slow as {0, 3}: no evidence, and a
    # loss for the bet). Given the pairs the passing probes cleared, 0's references are 1, 4
    # and 5, and the claim takes the rounds of a lone clean signal; without them, more
    rep = _Replica({}, {(0, 3): 1.5, (0, 6): 1.5}, 0.0, 0)
    passing = [(4, 5, 6, 7), (0, 1, 4, 5), (2, 3, 6, 7), (2, 3, 4, 5)]
    cleared = {e for p in passing for e in itertools.combinations(p, 2)}

    def rounds(given: set[tuple[int, int]]) -> tuple[str | None, int]:
        ctx = _Context(2, Layout.flat(8), rep.round, ProbeBudget(400), random.Random(1), math.log(1.2), 0.01, 64)
        res = claims.test_link(ctx, 0, 3, 0.005, [1, 2, 4, 5, 6, 7], given)
        return res.status, res.rounds

    t = PairedTest(math.log(1.2), 0.005)
    while not t.rejected:
        t.add([1.5], [1.0])
    assert rounds(cleared) == ("confirmed", 2 * t.rounds)
    _, slower = rounds(set())
    assert slower > 2 * t.rounds


def test_suspects_that_do_not_read_slow_again_yield_the_budget_to_one_that_does() -> None:
    # n = 16, k = 4, link 2-9 1.8x slow; eight healthy Phase 1 probes stalled 3x (slower than
    # the link's) make nine suspects, more than 100 probes can search (a search: a claim of
    # ~40 probes and its reads). One fresh read of each (nine probes beside three measurements
    # of a reference) puts the link's probe first: it is confirmed; the stalled ones read
    # healthy again, the budget does not reach them, and they get no verdict at all (GPUs
    # the stalls put in most suspect probes are claimed first and cleared: no verdict either)
    rep = _Replica({}, {(2, 9): 1.8}, 0.01, 0)
    phase1 = _phase1(rep, 16, 4)
    (slow,) = [i for i, (p, _) in enumerate(phase1) if {2, 9} <= set(p)]
    stalled = [i for i, (p, _) in enumerate(phase1) if not {2, 9} & set(p)][:8]
    for i in stalled:
        phase1[i] = (phase1[i][0], math.log(3.0))
    res = sequential_drilldown(16, 4, phase1, [slow, *stalled], rep.round, sigma=0.01, budget=100, seed=0)
    assert [(c.gpu, c.peer_gpu, c.status) for c in res.claims if c.status is not None] == [(2, 9, "confirmed")]


def test_a_gpu_no_claim_tested_is_inconclusive_without_a_confidence() -> None:
    # a Phase 2 budget of 0: the gate names the GPUs of the suspect probes inconclusive, and a
    # verdict no test stood behind states no confidence (not 0.0)
    sc = parse_scenario({"gpus": 32, "probe_size": 4, "faults": [{"gpu": 9, "slowdown": 2.0}], "noise": {"sigma": 0.02}})
    loc = localize(sc.replica(), plan_cover(32, 4), repeats=3, method="sequential", phase2_budget=0)
    assert loc.probes_phase2 == 0 and loc.verdicts
    assert {v.status for v in loc.verdicts} == {"inconclusive"} and {v.confidence for v in loc.verdicts} == {None}
    assert any(v.component == "gpu:9" for v in loc.verdicts)


class _MissesFirstReads(_Replica):
    """A slow link whose first ``hide`` rounds holding it read healthy (a search read that
    noise made miss), every later one slow."""

    def __init__(self, link: tuple[int, int], slowdown: float, hide: int) -> None:
        super().__init__({}, {link: slowdown}, 0.01, 0)
        self.link, self.hide = link, hide

    def round(self, probes: Sequence[tuple[int, ...]], r: int = 1) -> tuple[tuple[float, ...], ...]:
        if self.hide > 0 and any(set(self.link) <= set(p) for p in probes[:-1]):
            self.hide -= 1
            return shuffled_round(lambda g: 10.0, self.order, probes, r)
        return super().round(probes, r)


def test_a_slow_probe_whose_search_read_nothing_is_searched_once_more() -> None:
    # link 2-9 (1.8x) is in one Phase 1 probe; the first read holding it reads healthy, so the
    # first search of that probe proposes nothing. The budget is far from spent: the probe is
    # searched again on fresh reads and the link confirmed; nothing else is.
    rep = _MissesFirstReads((2, 9), 1.8, hide=1)
    phase1 = _phase1(rep, 16, 4)
    (slow,) = [i for i, (p, _) in enumerate(phase1) if {2, 9} <= set(p)]
    phase1[slow] = (phase1[slow][0], math.log(1.8))  # Phase 1 saw it slow
    res = sequential_drilldown(16, 4, phase1, [slow], rep.round, sigma=0.01, budget=200, seed=0)
    assert rep.hide == 0  # the first read was hidden
    assert {(c.gpu, c.peer_gpu) for c in res.claims if c.status == "confirmed"} == {(2, 9)}


def test_two_slow_gpus_are_both_confirmed_when_each_could_pad_the_others_claim() -> None:
    # noise-free n = 25, k = 4: GPUs 16 (2.76x) and 18 (2.39x) slow. Phase 1 points at both;
    # with the other slow GPU among a claim's pads both sides of its rounds were slow, and
    # neither claim settled within the default budget. The truth is the injection.
    from faultsense_pipelines.replica.faults import GpuFault
    from faultsense_pipelines.sim.simulator import SimulatedReplica

    replica = SimulatedReplica(25, [GpuFault(18, 2.39), GpuFault(16, 2.76)], noise_sigma=0.0, seed=0)
    loc = localize(replica, plan_cover(25, 4), repeats=1, method="sequential")
    assert {v.component for v in loc.verdicts if v.status == "confirmed"} == {"gpu:16", "gpu:18"}
    assert loc.probes_phase2 <= default_budget(loc.probes_phase1, 0.01, 1)


def test_the_paths_a_slow_gpu_hid_are_read_once_each_in_groups_sharing_a_reference() -> None:
    # noise-free, GPU 5 of 300 2x slow, k = 8, three measurements a probe: its claim spends
    # what its verdict says; the other seven GPUs of each of its 45 Phase 1 probes are read,
    # padded to eight, in batches of 16, 16 and 13 against one reference each, measured in
    # groups of four beside one measurement of it: 45 reads and 4 + 4 + 4 reference
    # measurements, where paired reads would spend 90. Every reference is clean: each pair
    # of its GPUs was in a Phase 1 probe that passed
    from faultsense_pipelines.replica.faults import GpuFault
    from faultsense_pipelines.sim.simulator import SimulatedReplica

    cover = plan_cover(300, 8)
    loc = localize(SimulatedReplica(300, [GpuFault(5, 2.0)], noise_sigma=0.0, seed=0), cover, repeats=3, method="sequential")
    (gpu,) = loc.verdicts
    assert (gpu.component, gpu.status) == ("gpu:5", "confirmed")
    pieces = [set(p) - {5} for p in cover.probes if 5 in p]
    assert len(pieces) == 45
    reads = [set(r.gpus) for r in loc.phase2_records[gpu.probes_used :]]
    assert all(any(p <= r for r in reads) for p in pieces) and 5 not in set().union(*reads)
    cleared = {e for p in cover.probes if 5 not in p for e in itertools.combinations(sorted(p), 2)}
    references = [r for r in reads if not any(p <= r for p in pieces)]
    assert all(e in cleared for r in references for e in itertools.combinations(sorted(r), 2))
    assert (len(reads), len(references)) == (45 + 12, 12) == (loc.probes_phase2 - gpu.probes_used, 12)


def test_a_slow_probe_left_when_the_budget_runs_out_names_its_gpus_inconclusive() -> None:
    # n = 8, k = 4, links 2-5 and 2-6 1.6x, a Phase 2 budget of 50: the claim on 2-6 takes it
    # all; the slow probe (2, 3, 4, 5) that holds the other link was read link by link but
    # never searched again: its GPUs are inconclusive, "did not reach", never silently healthy
    sc = parse_scenario(
        {
            "gpus": 8,
            "probe_size": 4,
            "faults": [{"link": [2, 5], "slowdown": 1.6}, {"link": [2, 6], "slowdown": 1.6}],
            "noise": {"sigma": 0.02},
        }
    )
    loc = localize(sc.replica(), plan_cover(8, 4), repeats=1, method="sequential", seed=0, phase2_budget=50)
    assert loc.probes_phase2 <= 50 and not [v for v in loc.verdicts if v.status == "confirmed"]
    left = {v.component for v in loc.verdicts if v.reason and "Phase 2 budget (50 probes) did not reach" in v.reason}
    assert {"gpu:2", "gpu:5"} <= left


def test_a_slow_probe_phase2_cannot_read_names_its_gpus_inconclusive() -> None:
    # three GPUs, k = 2, link 0-1 2x slow: the slow probe (0, 1) has no reference of two GPUs
    # outside it (only GPU 2 is left): nothing can be read, nothing is claimed, and its GPUs
    # are inconclusive with the reason, never silently healthy
    sc = parse_scenario({"gpus": 3, "probe_size": 2, "faults": [{"link": [0, 1], "slowdown": 2.0}]})
    loc = localize(sc.replica(), plan_cover(3, 2), repeats=1, method="sequential", seed=0)
    assert loc.probes_phase2 == 0
    assert {(v.component, v.status) for v in loc.verdicts} == {("gpu:0", "inconclusive"), ("gpu:1", "inconclusive")}
    assert all(v.reason and "could not read" in v.reason for v in loc.verdicts)


@pytest.mark.parametrize("seed", range(3))
def test_cleared_pairs_answer_as_the_set_of_pairs_passing_probes_held(seed: int) -> None:
    # brute force: list every pair of every passing probe; the lookup must agree on every
    # pair of the replica (a cover of 64 GPUs, a random third of its probes suspect or unmeasured)
    from faultsense_pipelines.localize.sequential.drilldown import ClearedPairs

    rng = random.Random(seed)
    probes = plan_cover(64, 8).probes
    phase1 = [(tuple(p), None if rng.random() < 0.1 else 0.0) for p in probes]
    suspects = {i for i in range(len(probes)) if rng.random() < 0.25}
    listed = {
        e for i, (p, x) in enumerate(phase1) if x is not None and i not in suspects for e in itertools.combinations(sorted(p), 2)
    }
    cleared = ClearedPairs(phase1, suspects)
    assert all((e in cleared) == (e in listed) for e in itertools.combinations(range(64), 2))
    assert len(listed) < 64 * 63 // 2  # some pairs are open: the check is not vacuous


def test_the_link_between_two_slow_gpus_of_one_small_probe_is_masked() -> None:
    # noise-free, n = 16, k = 4 (the probes read link by link), GPUs 5 and 6 2x slow: the
    # cover holds the pair (5, 6) in one probe; both GPUs are confirmed, and their link, which
    # no probe can judge without a slow GPU in it, is reported masked
    from faultsense_pipelines.replica.faults import GpuFault
    from faultsense_pipelines.sim.simulator import SimulatedReplica

    replica = SimulatedReplica(16, [GpuFault(5, 2.0), GpuFault(6, 2.0)], noise_sigma=0.0, seed=0)
    loc = localize(replica, plan_cover(16, 4), repeats=3, method="sequential")
    assert {(v.component, v.status) for v in loc.verdicts} >= {
        ("gpu:5", "confirmed"),
        ("gpu:6", "confirmed"),
        ("link:5-6", "masked"),
    }
