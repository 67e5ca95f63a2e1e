"""Cyclic resolvable covers (tools/cover_search/cyclic.py; stored in the ``cyclic`` table):
development, difference requirements, the stored developed rounds, and their place in ``best``.

Every coverage claim is checked by brute force over all pairs, independently of the
difference bookkeeping that the search and the loader use.
"""

from __future__ import annotations

import random

import pytest

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.cover.table import cyclic_cover, lookup
from tests.cover_checks import uncovered
from tools.cover_search.cyclic import develop, unmet_differences


def _random_base(rng, m, classes, k, b):
    gpus = rng.sample(range(m * classes), b * k)
    return [gpus[j * k : (j + 1) * k] for j in range(b)]


def test_development_is_m_rounds_of_disjoint_translates():
    rounds = develop([[0, 3], [1, 5]], 3, 2)  # Z_3 x {0, 1}: GPUs 0..2 | 3..5
    # by hand: +1 sends 0->1, 3->4, 1->2, 5->3; +2 sends 0->2, 3->5, 1->0, 5->4
    assert rounds == (((0, 3), (1, 5)), ((1, 4), (2, 3)), ((2, 5), (0, 4)))
    for r in develop([[0, 1, 7], [2, 9, 13], [4, 5, 6]], 7, 2):
        assert len({g for b in r for g in b}) == 9


@pytest.mark.parametrize(
    ("base", "match"),
    [([[0, 6]], "outside 0..5"), ([[0, 1], [1, 2]], "two base probes"), ([[-1, 2]], "outside")],
)
def test_development_rejects_gpus_out_of_range_or_shared(base, match):
    with pytest.raises(ValueError, match=match):
        develop(base, 3, 2)


@pytest.mark.parametrize("seed", range(40))
def test_each_unmet_difference_leaves_exactly_its_orbit_of_pairs_uncovered(seed):
    rng = random.Random(seed)
    m, classes, k = rng.choice([(5, 3, 3), (6, 2, 4), (7, 3, 4), (8, 2, 3), (9, 2, 5)])
    b = rng.randint(1, m * classes // k)
    base = _random_base(rng, m, classes, k, b)
    unmet = unmet_differences(base, m, classes)
    missing = uncovered([p for r in develop(base, m, classes) for p in r], m * classes)
    # an orbit has m pairs, but m / 2 for the difference m / 2 inside a class (d = -d)
    orbit = [m // 2 if j == jj and 2 * d == m else m for j, jj, d in unmet]
    assert len(missing) == sum(orbit)
    for x, y in missing:  # and those pairs are the unmet ones
        jx, jy, d = x // m, y // m, (y % m - x % m) % m
        assert (jx, jy, min(d, m - d) if jx == jy else d) in unmet


def test_stored_n75_k8_cover_covers_every_pair_in_15_disjoint_rounds():
    rounds = cyclic_cover(75, 8)
    assert rounds is not None and len(rounds) == 15
    probes = [b for r in rounds for b in r]
    assert len(probes) == 135 and all(len(b) == 8 for b in probes)
    assert uncovered(probes, 75) == set()
    for r in rounds:
        assert len({g for b in r for g in b}) == 8 * len(r)
    entry = lookup("cyclic", 75, 8)  # stored developed: round t is round 0 shifted by t over Z_15
    assert entry is not None and entry.cyclic == (15, 5)
    assert rounds == develop(rounds[0], 15, 5)
    assert unmet_differences(rounds[0], 15, 5) == []


def test_best_plans_n75_k8_within_the_rounds_target_and_below_greedy():
    best, greedy = plan_cover(75, 8, "best"), plan_cover(75, 8, "greedy")
    assert len(best.rounds) <= 1.5 * -(-74 // 7)  # 16.5: the rounds target
    assert len(best.probes) < len(greedy.probes) == 136  # the paper's Algorithm 1 needs 136
    assert uncovered(best.probes, 75) == set()


def test_search_finds_a_small_base_round_whose_development_covers_every_pair():
    pytest.importorskip("numba")
    from tools.cover_search.cyclic_search import search_base_round

    unmet, base = search_base_round(7, 2, 4, 3, moves=200_000, seed=0)  # 14 GPUs, 7 rounds
    assert unmet == 0 == len(unmet_differences(base, 7, 2))
    assert uncovered([p for r in develop(base, 7, 2) for p in r], 14) == set()
    with pytest.raises(ValueError, match="b="):
        search_base_round(7, 2, 4, 4, moves=10)  # 4 probes of 4 do not fit on 14 GPUs
