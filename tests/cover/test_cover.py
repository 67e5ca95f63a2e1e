"""Phase 1 covers: every GPU and every GPU pair covered, near Schönheim's bound, GPU-disjoint rounds."""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faultsense_pipelines.cover import plan_cover, schonheim_bound
from faultsense_pipelines.cover.best import best_cover, clear_caches
from faultsense_pipelines.cover.greedy import greedy_cover
from tests.cover_checks import uncovered
from tests.hypothesis_profiles import examples


def _assert_valid(cover) -> None:
    n, k = cover.gpus, cover.probe_size
    assert uncovered(cover.probes, n) == set()
    assert set().union(*map(set, cover.probes)) == set(range(n))
    for p in cover.probes:
        assert len(set(p)) == len(p) <= k
        assert all(0 <= g < n for g in p)
    flat = sorted(i for r in cover.rounds for i in r)
    assert flat == list(range(len(cover.probes))), "rounds must partition the probes"
    for r in cover.rounds:
        gpus = [g for i in r for g in cover.probes[i]]
        assert len(gpus) == len(set(gpus)), f"round {r} reuses a GPU"


def test_greedy_n8_k4_is_six_probes_covering_all_28_pairs():
    # hand-worked in the paper's Figure 2c: 28 pairs, 6 pairs per probe -> at least 5, greedy needs 6
    probes = greedy_cover(8, 4)
    assert len(probes) == 6
    assert len(set(combinations(range(8), 2))) == 28
    assert uncovered(probes, 8) == set()
    assert schonheim_bound(8, 4) == 6


@settings(max_examples=examples(60), deadline=None)
@given(n=st.integers(2, 70), k=st.integers(2, 9), method=st.sampled_from(["greedy", "best"]))
def test_every_cover_covers_every_gpu_and_pair_with_disjoint_rounds(n, k, method):
    k = min(k, n)
    cover = plan_cover(n, k, method)
    _assert_valid(cover)
    assert len(cover.probes) >= cover.lower_bound  # Schönheim's bound is a theorem


@settings(max_examples=examples(40), deadline=None)
@given(n=st.integers(2, 120), k=st.sampled_from([3, 4, 5, 6, 8]))
def test_best_never_needs_more_probes_than_greedy(n, k):
    k = min(k, n)
    assert len(best_cover(n, k)) <= len(greedy_cover(n, k))


@pytest.mark.parametrize(
    ("n", "k", "design_blocks"),
    [
        (13, 4, 13),  # projective plane PG(2, 3)
        (16, 4, 20),  # affine plane AG(2, 4)
        (25, 4, 50),  # difference family in Z_5 x Z_5
        (37, 4, 111),  # cyclic difference family in Z_37
        (28, 4, 63),  # Denniston arc of degree 4 in PG(2, 8)
        (40, 4, 130),  # lines of PG(3, 3)
        (57, 8, 57),  # projective plane PG(2, 7)
        (64, 8, 72),  # affine plane AG(2, 8)
        (120, 8, 255),  # Denniston arc of degree 8 in PG(2, 16)
        (31, 6, 31),  # projective plane PG(2, 5)
    ],
)
def test_best_meets_the_bound_exactly_where_a_steiner_system_exists(n, k, design_blocks):
    # a Steiner system S(2, k, n) has n(n-1)/(k(k-1)) blocks, which is Schönheim's bound
    assert design_blocks == n * (n - 1) // (k * (k - 1)) == schonheim_bound(n, k)
    cover = plan_cover(n, k, "best")
    assert len(cover.probes) == design_blocks
    _assert_valid(cover)


def test_resolvable_designs_run_in_as_many_rounds_as_a_gpu_has_probes():
    # AG(2, 8): each GPU is on 9 lines; the 9 parallel classes are 9 rounds of 8 disjoint probes
    cover = plan_cover(64, 8, "best")
    assert len(cover.rounds) == 9
    assert all(len(r) == 8 for r in cover.rounds)


@pytest.mark.parametrize(("n", "k"), [(100, 4), (150, 8), (37, 5)])
def test_best_is_deterministic_for_a_given_size(n, k):
    first = best_cover(n, k)
    clear_caches()
    assert best_cover(n, k) == first


def test_best_probes_are_full_size_where_their_round_has_idle_gpus():
    cover = plan_cover(100, 8, "best")
    for r in cover.rounds:
        used = sum(len(cover.probes[i]) for i in r)
        short = [i for i in r if len(cover.probes[i]) < 8]
        assert not short or used == 100, "a short probe left while idle GPUs remain in its round"


@pytest.mark.parametrize(
    ("n", "k", "method", "named"),
    [(1, 2, "best", "gpus"), (8, 1, "best", "probe_size"), (4, 5, "greedy", "probe_size=5"), (8, 4, "fast", "'fast'")],
)
def test_bad_cover_arguments_raise_value_error_naming_the_value(n, k, method, named):
    with pytest.raises(ValueError, match=named):
        plan_cover(n, k, method)


@pytest.mark.parametrize(("n", "rounds"), [(8, 7), (7, 7), (12, 11)])
def test_probe_size_two_tests_every_pair_once_in_a_round_robin(n, rounds):
    # a 1-factorisation of K_n: n-1 rounds for even n, n for odd n (each GPU idles once)
    cover = plan_cover(n, 2, "best")
    assert len(cover.probes) == n * (n - 1) // 2
    assert len(cover.rounds) == rounds
    _assert_valid(cover)


def test_trading_probes_for_rounds_never_crosses_the_k4_probe_target():
    # n=35, k=4: the fewest-probe cover is within 1.05 x L(35, 4) = 1.05 x 105 but misses the
    # rounds target; the planner must keep the probe target rather than buy rounds above it
    cover = plan_cover(35, 4, "best")
    _assert_valid(cover)
    assert len(cover.probes) <= 1.05 * schonheim_bound(35, 4)
