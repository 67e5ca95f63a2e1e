"""Building blocks of the best cover: finite fields, designs, refinement, local search, rounds."""

from __future__ import annotations

import random
from collections import Counter
from itertools import combinations

import numpy as np
import pytest

from faultsense_pipelines.cover.designs import (
    affine_geometry,
    denniston_design,
    difference_family_design,
    max_td_groups,
    projective_geometry,
    transversal_design,
)
from faultsense_pipelines.cover.fields import galois_field, macneish_ring
from faultsense_pipelines.cover.refine import fill_to_size, merge_small, remove_redundant, truncate, uncovered_pairs
from faultsense_pipelines.cover.rounds import dsatur_rounds, ordered_rounds, plan_rounds
from tools.cover_search.anneal import anneal_cover, shrink_cover


def _pair_multiplicity(blocks) -> Counter:
    return Counter(pair for b in blocks for pair in combinations(sorted(b), 2))


@pytest.mark.parametrize("q", [2, 3, 4, 5, 8, 9, 16, 25, 27])
def test_galois_field_tables_satisfy_the_field_axioms(q):
    F = galois_field(q)
    x = np.arange(q)
    assert (F.add[x, 0] == x).all() and (F.mul[x, 1] == x).all()
    assert (F.add == F.add.T).all() and (F.mul == F.mul.T).all()
    assert all((F.mul[a, 1:] != 0).all() and sorted(F.mul[a, 1:]) == list(range(1, q)) for a in range(1, q))
    for a, b, c in random.Random(q).choices(list(combinations(range(q), 3)) or [(0, 1, 1)], k=50):
        assert F.mul[a, F.add[b, c]] == F.add[F.mul[a, b], F.mul[a, c]]
        assert F.mul[a, F.mul[b, c]] == F.mul[F.mul[a, b], c]
        assert F.add[a, F.add[b, c]] == F.add[F.add[a, b], c]


@pytest.mark.parametrize(
    ("design", "v", "k"),
    [
        (lambda: projective_geometry(2, 4), 21, 5),
        (lambda: projective_geometry(3, 2), 15, 3),
        (lambda: affine_geometry(2, 9), 81, 9),
        (lambda: affine_geometry(3, 3), 27, 3),
        (lambda: denniston_design(4, 2), 52, 4),
        (lambda: denniston_design(3, 1), 10, 2),  # a hyperoval of PG(2, 8)
        (lambda: difference_family_design(25), 25, 4),
        (lambda: difference_family_design(37), 37, 4),
    ],
)
def test_designs_cover_every_pair_exactly_once(design, v, k):
    D = design()
    assert D.points == v and {len(b) for b in D.blocks} == {k}
    mult = _pair_multiplicity(D.blocks)
    assert set(mult) == set(combinations(range(v), 2)) and set(mult.values()) == {1}


def test_affine_parallel_classes_partition_the_points():
    D = affine_geometry(2, 7)
    assert len(D.classes) == 8
    for cls in D.classes:
        assert sorted(p for i in cls for p in D.blocks[i]) == list(range(49))


@pytest.mark.parametrize(("k", "m"), [(4, 5), (8, 7), (8, 9), (4, 12), (5, 20), (3, 10), (6, 16)])
def test_transversal_design_covers_cross_group_pairs_exactly_once(k, m):
    D = transversal_design(k, m)
    assert len(D.blocks) == m * m
    mult = _pair_multiplicity(D.blocks)
    cross = {(a, b) for a, b in combinations(range(k * m), 2) if a // m != b // m}
    assert set(mult) == cross and set(mult.values()) == {1}
    for cls in D.classes:
        assert sorted(p for i in cls for p in D.blocks[i]) == list(range(k * m))


def test_macneish_bound_limits_the_groups():
    # 12 = 4 * 3: two MOLS of order 3 at most from MacNeish, so TD(4, 12) but not TD(5, 12)
    assert max_td_groups(12) == 4 and len(macneish_ring(12).distinct) == 3
    with pytest.raises(ValueError, match="TD"):
        transversal_design(5, 12)


def test_truncating_a_design_keeps_every_pair_of_the_survivors():
    D = projective_geometry(2, 7)
    blocks = truncate(D.blocks, 57, 50)
    assert uncovered_pairs(blocks, 50) == 0
    assert all(2 <= len(b) <= 8 and max(b) < 50 for b in blocks)


def test_redundant_probes_are_dropped_and_coverage_kept():
    blocks = [*list(projective_geometry(2, 3).blocks), (0, 1, 2), (3, 4)]
    kept = remove_redundant(blocks, 13)
    assert len(kept) == 13 and uncovered_pairs(kept, 13) == 0


def test_merging_short_probes_keeps_their_pairs():
    blocks = [(0, 1), (2, 3), (1, 4), (5, 6, 7), (8, 9, 10, 11)]
    merged = merge_small(blocks, 4)
    assert all(len(b) <= 4 for b in merged) and len(merged) < len(blocks)
    assert set(_pair_multiplicity(blocks)) <= set(_pair_multiplicity(merged))


def test_filling_uses_only_idle_gpus_of_the_round():
    blocks = [(0, 1), (2, 3, 4), (5, 6)]
    rounds = [[0, 1], [2]]
    filled = fill_to_size(blocks, rounds, 7, 3)
    for r in rounds:
        gpus = [g for i in r for g in filled[i]]
        assert len(gpus) == len(set(gpus))
    assert [len(b) for b in filled] == [3, 3, 3]


def test_annealing_finds_an_optimal_small_cover_reproducibly():
    # C(10, 4, 2) = 9 (Mills): Schönheim's 8 cannot be met, 9 can
    start = [random.Random(3).sample(range(10), 4) for _ in range(9)]
    a = anneal_cover(10, 4, start, seed=5, iterations=40000)
    assert a is not None and uncovered_pairs(a, 10) == 0
    assert a == anneal_cover(10, 4, start, seed=5, iterations=40000)


def test_shrinking_never_breaks_coverage():
    cover = [tuple(b) for b in combinations(range(7), 3)][:30]
    small = shrink_cover(7, 3, cover, floor=7, iterations=5000)
    assert uncovered_pairs(small, 7) == 0 and len(small) <= 30


@pytest.mark.parametrize("scheduler", [ordered_rounds, dsatur_rounds, plan_rounds])
def test_round_schedulers_partition_probes_into_gpu_disjoint_rounds(scheduler):
    probes = [tuple(b) for b in projective_geometry(2, 4).blocks]
    rounds = scheduler(probes, 21)
    assert sorted(i for r in rounds for i in r) == list(range(len(probes)))
    for r in rounds:
        gpus = [g for i in r for g in probes[i]]
        assert len(gpus) == len(set(gpus))
    # lines of a projective plane pairwise meet: every probe needs its own round
    assert len(rounds) == 21


def test_stored_small_covers_cover_every_pair_within_the_bound():
    from faultsense_pipelines.cover.bounds import schonheim_bound
    from faultsense_pipelines.cover.table import read_table, table_path

    stored = read_table(table_path("small"), validate=False)
    assert stored, "the small-cover table is empty"
    for c in stored:
        blocks, n, k = c.probes, c.n, c.k
        assert c.hole == 0 and c.rounds is None
        assert uncovered_pairs(blocks, n) == 0, (n, k)
        assert all(len(set(b)) == len(b) <= k and min(b) >= 0 and max(b) < n for b in blocks)
        assert len(blocks) >= schonheim_bound(n, k)


def test_a_stored_cover_that_misses_a_pair_is_ignored(tmp_path, monkeypatch):
    from faultsense_pipelines.cover import table

    bad = tmp_path / "small.json"
    bad.write_text(
        '{"format": "faultsense-covers/1", "covers": [{"n": 8, "k": 4, "probes": ["00010203", "04050607"]},'
        ' {"n": 5, "k": 4, "probes": ["00010203", "00010204", "01020304"]}]}'
    )
    assert [(c.n, c.k) for c in table.read_table(bad)] == [(5, 4)]  # (8, 4) misses every pair across the halves
    monkeypatch.setattr(table, "TABLE_DIR", tmp_path)
    table.clear_cache()
    try:
        assert table.tabled_cover(8, 4) is None
        assert table.tabled_cover(5, 4) is not None
    finally:
        monkeypatch.undo()
        table.clear_cache()
