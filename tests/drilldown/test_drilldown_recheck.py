"""Packed re-check: links hidden behind a slow GPU are judged exactly, in fewer probes."""

from __future__ import annotations

import os
from functools import cache, partial
from itertools import combinations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import localize as _localize
from faultsense_pipelines.localize.drilldown.adaptive import adaptive_drilldown
from faultsense_pipelines.localize.drilldown.recheck import plan_recheck
from faultsense_pipelines.replica.faults import GpuFault, LinkFault
from faultsense_pipelines.replica.vocabulary import DrilldownMethod
from faultsense_pipelines.sim.simulator import SimulatedReplica
from tests.hypothesis_profiles import examples

#: these tests are of the adaptive drill-down's re-check, not the default drill-down
localize = partial(_localize, method=DrilldownMethod.ADAPTIVE)

SETTINGS = settings(
    max_examples=examples(int(os.environ.get("FS_EXAMPLES", 40))), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# -- a hand-built replica: slow GPU 0 in five suspect groups of k = 4 whose links were
# all exonerated by passing probes but one per group (partial hidden cliques) -----------
K = 4
N = 24
GROUPS = [(0, 1, 2, 3), (0, 4, 5, 6), (0, 7, 8, 9), (0, 10, 11, 12), (0, 13, 14, 15)]
HIDDEN = [(1, 2), (4, 5), (7, 8), (10, 11), (13, 14)]  # behind GPU 0: probed only with it
SPARE = range(16, N)  # healthy GPUs for padding


def _passed() -> list[tuple[int, ...]]:
    """Passing probes of 4 GPUs over every pair of 1..23 except the hidden links."""
    spare = list(SPARE)
    probes = []
    for i, (a, b) in enumerate(combinations(range(1, N), 2)):
        if (a, b) in HIDDEN:
            continue
        pads = [x for x in spare[i % 8 :] + spare[: i % 8] if x not in (a, b)][:2]
        probes.append(tuple(sorted({a, b, *pads})))
    return probes


def _oracle(slow_gpus: set[int], slow_links: set[tuple[int, int]], log: list):
    def test(gpus: tuple[int, ...]) -> bool:
        log.append(gpus)
        return bool(slow_gpus & set(gpus)) or any(a in gpus and b in gpus for a, b in slow_links)

    return test


def test_hand_built_partial_cliques_are_rechecked_two_pieces_per_probe():
    # Old re-check: one probe per suspect group explained by GPU 0, i.e. 5. Packed: the
    # hidden pieces {1, 2}, {4, 5}, {7, 8}, {10, 11}, {13, 14} fit two to a probe of 4 GPUs.
    # GPU 0 is in 5 suspect groups sharing only it, so it is confirmed alone first.
    log: list = []
    r = adaptive_drilldown(N, K, _passed(), GROUPS, _oracle({0}, set(), log))
    assert [(f.kind, f.gpu, f.status) for f in r.findings] == [("gpu", 0, "confirmed")]
    confirm, recheck = log[:3], log[3:]
    assert all(0 in p for p in confirm)  # GPU 0 alone with three pairwise disjoint paddings
    pads = [set(p) - {0} for p in confirm]
    assert all(pads[i].isdisjoint(pads[j]) for i in range(3) for j in range(i + 1, 3))
    assert sorted(recheck[:2]) == [(1, 2, 4, 5), (7, 8, 10, 11)]
    assert len(recheck) == 3 and {13, 14} <= set(recheck[2]) and 0 not in recheck[2]
    assert len(recheck) < len(GROUPS)  # no more than the old one-probe-per-group re-check


def test_a_slow_link_in_a_packed_recheck_probe_is_found_and_blames_nothing_else():
    log: list = []
    r = adaptive_drilldown(N, K, _passed(), GROUPS, _oracle({0}, {(7, 8)}, log))
    found = sorted((f.kind, f.gpu, f.peer_gpu, f.status) for f in r.findings)
    assert found == [("gpu", 0, None, "confirmed"), ("link", 7, 8, "confirmed")]
    assert all(0 not in p for p in log[3:])  # re-check probes avoid the slow GPU


def test_without_recheck_the_hidden_slow_link_is_missed():
    # the paper's accounting: the reason the re-check exists
    r = adaptive_drilldown(N, K, _passed(), GROUPS, _oracle({0}, {(7, 8)}, []), recheck_explained=False)
    assert [(f.kind, f.gpu) for f in r.findings] == [("gpu", 0)]


# -- on a real cover, through the simulator ---------------------------------------------
def _hidden_behind(probes: list[tuple[int, ...]], g: int) -> list[tuple[int, int]]:
    with_g = {e for p in probes if g in p for e in combinations(sorted(set(p) - {g}), 2)}
    without_g = {e for p in probes if g not in p for e in combinations(sorted(p), 2)}
    return sorted(with_g - without_g)


@pytest.mark.parametrize(("n", "k"), [(50, 8), (60, 4)])
def test_a_slow_link_hidden_behind_a_slow_gpu_is_found_on_the_best_cover(n, k):
    cover = plan_cover(n, k)
    probes = [tuple(p) for p in cover.probes]
    hidden = _hidden_behind(probes, 7)
    e = hidden[len(hidden) // 2]
    assert all(7 in p for p in probes if e[0] in p and e[1] in p)  # Phase 1 never saw e without 7
    faults = [GpuFault(7, 1.8), LinkFault(e, 1.5)]
    loc = localize(SimulatedReplica(n, faults), cover)
    assert loc.faulty_gpus == [7]
    assert loc.faulty_links == [list(e)]
    assert not [v for v in loc.verdicts if v.status == "inconclusive"]
    missed = localize(SimulatedReplica(n, faults), cover, recheck_explained=False)
    assert missed.faulty_links == []


@cache
def _cover_probes(n: int, k: int) -> list[tuple[int, ...]]:
    return [tuple(p) for p in plan_cover(n, k).probes]


@st.composite
def hidden_scenarios(draw):
    """1..3 slow GPUs on the best cover, and 1..2 slow links each hidden behind one of them."""
    n = draw(st.sampled_from([30, 41, 57, 64]))
    k = draw(st.sampled_from([4, 8]))
    gpus = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=3, unique=True))
    probes = _cover_probes(n, k)
    hidden = sorted({e for g in gpus for e in _hidden_behind(probes, g) if not set(e) & set(gpus)})
    links = draw(st.lists(st.sampled_from(hidden), min_size=1, max_size=2, unique=True)) if hidden else []
    slow = st.floats(min_value=1.3, max_value=3.0)
    return n, k, [GpuFault(g, draw(slow)) for g in gpus] + [LinkFault(e, draw(slow)) for e in links]


@SETTINGS
@given(hidden_scenarios())
def test_noise_free_localization_finds_slow_links_hidden_behind_slow_gpus(scenario):
    n, k, faults = scenario
    loc = localize(SimulatedReplica(n, faults), plan_cover(n, k))
    if loc.replica_degraded:
        assert loc.verdicts == ()
        return
    assert loc.faulty_gpus == sorted(f.gpu for f in faults if isinstance(f, GpuFault))
    assert loc.faulty_links == sorted(list(f.link) for f in faults if isinstance(f, LinkFault))
    assert not [v for v in loc.verdicts if v.status == "inconclusive"]


# -- the planner alone ---------------------------------------------------------------------
@st.composite
def plans(draw):
    k = draw(st.integers(2, 8))
    pieces = draw(st.lists(st.sets(st.integers(0, 24), min_size=1, max_size=k), min_size=1, max_size=12))
    pairs = sorted({e for p in pieces for e in combinations(sorted(p), 2)})
    cands = draw(st.sets(st.sampled_from(pairs))) if pairs else set()
    forbidden = draw(st.sets(st.sampled_from(pairs), max_size=2)) if pairs else set()
    return pieces, cands, k, forbidden


@SETTINGS
@given(plans())
def test_recheck_plan_covers_every_candidate_in_probes_of_at_most_k_without_a_known_fault(plan):
    pieces, cands, k, forbidden = plan
    probes = plan_recheck(pieces, cands, k, forbidden)
    assert all(len(p) <= k for p in probes)
    assert not [(p, e) for p in probes for e in forbidden if set(e) <= p]
    for e in cands - forbidden:
        assert any(set(e) <= p for p in probes), e
    covered = set().union(*probes) if probes else set()
    # every GPU of a piece is planned, except an end of a known faulty link it was split off
    ends = {g for e in forbidden for g in e}
    assert set().union(*pieces) - ends <= covered
    if not forbidden:
        assert len(probes) <= len({frozenset(p) for p in pieces})  # never worse than one per piece


def test_recheck_plan_rejects_a_piece_larger_than_k_and_k_below_2():
    with pytest.raises(ValueError, match="more than k=2"):
        plan_recheck([{1, 2, 3}], [(1, 2)], 2)
    with pytest.raises(ValueError, match="k must be >= 2, got 1"):
        plan_recheck([{1}], [], 1)


@pytest.mark.parametrize(("n", "k"), [(40, 4), (40, 8)])
def test_a_slow_gpu_that_passed_one_probe_by_noise_is_reported_as_the_gpu_not_a_star_of_links(n, k):
    # GPU 5 is slow but its first Phase 1 probe passed (noise): it is exonerated, and every
    # later failure of it is first blamed on one of its links, until the star is re-tested.
    probes = [tuple(p) for p in plan_cover(n, k, "greedy").probes]
    with_5 = [p for p in probes if 5 in p]
    passed = [p for p in probes if 5 not in p] + with_5[:1]
    r = adaptive_drilldown(n, k, passed, with_5[1:], lambda gpus: 5 in gpus)
    assert [(f.kind, f.gpu, f.status) for f in r.findings] == [("gpu", 5, "confirmed")]
