"""Planning at awkward replica sizes: a valid cover and valid rounds, checked by brute force.

Large covers (more than 20,000 probes in Schönheim's bound) keep their construction's
rounds and skip the passes that cannot win; whatever the path, every GPU and every GPU pair
must be in a probe, and every probe must run in exactly one round of GPU-disjoint probes.
"""

from __future__ import annotations

from itertools import combinations
from math import ceil

import numpy as np
import pytest

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.cover.bounds import is_large_cover


def _schonheim(n: int, k: int) -> int:
    """L(n, k) = ceil(n/k ceil((n-1)/(k-1))), written out here, independently of cover.bounds."""
    return ceil(n / k * ceil((n - 1) / (k - 1)))


def _missing_pairs(probes, n: int) -> int:
    """Brute force: GPU pairs of 0..n-1 in no probe, as a count (pair codes a * n + b, a < b)."""
    covered = {a * n + b for p in probes for a, b in combinations(sorted(set(p)), 2)}
    return n * (n - 1) // 2 - len(covered)


def _missing_pairs_matrix(probes, n: int) -> int:
    """The same count for large n: an n x n boolean matrix marked probe by probe."""
    seen = np.zeros((n, n), dtype=bool)
    for p in probes:
        idx = np.fromiter(p, dtype=np.int64)
        seen[np.ix_(idx, idx)] = True
    return int((~np.triu(seen, 1))[np.triu_indices(n, 1)].sum())


def _assert_valid_rounds(probes, rounds, n: int) -> None:
    """Every probe in exactly one round; within a round no GPU twice; ids in 0..n-1."""
    assert sorted(i for r in rounds for i in r) == list(range(len(probes))), "each probe in exactly one round"
    for r in rounds:
        gpus = [g for i in r for g in probes[i]]
        assert len(gpus) == len(set(gpus)), f"a round runs a GPU twice: {r[:5]}..."
    assert all(0 <= g < n for p in probes for g in p)


def test_the_large_cover_threshold_is_schonheims_bound_above_20000_probes():
    # hand-worked: L(1024, 8) = 128 * 147 = 18,816; L(1100, 8) = ceil(137.5 * 157) = 21,588;
    # L(500, 4) = 125 * 167 = 20,875; L(2048, 8) = 256 * 293 = 75,008
    assert _schonheim(1024, 8) == 18_816 and _schonheim(1100, 8) == 21_588
    assert not is_large_cover(1024, 8)
    assert is_large_cover(1100, 8) and is_large_cover(500, 4) and is_large_cover(2048, 8)


@pytest.mark.parametrize(("n", "k"), [(1100, 8), (500, 4), pytest.param(1000, 8, marks=pytest.mark.slow)])
def test_planning_at_an_awkward_n_gives_a_valid_cover_in_valid_rounds(n, k):
    cover = plan_cover(n, k)
    probes = cover.probes
    assert all(len(set(p)) == len(p) <= k for p in probes)
    assert {g for p in probes for g in p} == set(range(n)), "every GPU in a probe"
    assert _missing_pairs(probes, n) == 0, "every GPU pair in a probe"
    _assert_valid_rounds(probes, cover.rounds, n)
    # the probe target (1.10 x L) and the rounds target (1.5 x ceil((n-1)/(k-1))) still hold
    assert len(probes) <= 1.10 * _schonheim(n, k)
    assert len(cover.rounds) <= 1.5 * ceil((n - 1) / (k - 1))


@pytest.mark.slow
@pytest.mark.parametrize("n", [4000, 4096])
def test_planning_thousands_of_gpus_gives_a_valid_cover_in_valid_rounds(n):
    k = 8
    cover = plan_cover(n, k)
    probes = cover.probes
    assert all(len(set(p)) == len(p) <= k for p in probes)
    assert _missing_pairs_matrix(probes, n) == 0
    _assert_valid_rounds(probes, cover.rounds, n)
    assert _schonheim(n, k) <= len(probes) <= 1.10 * _schonheim(n, k)
    # a GPU in r probes needs r rounds: no schedule beats the most probes one GPU is in
    most = int(np.bincount(np.fromiter((g for p in probes for g in p), dtype=np.int64), minlength=n).max())
    assert most <= len(cover.rounds) <= 1.5 * ceil((n - 1) / (k - 1))
