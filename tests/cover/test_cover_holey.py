"""Holey covers (a group plus infinite GPUs, pairs among the infinite GPUs left out) and their use in TD
plans; Steiner systems extended by a few GPUs."""

from __future__ import annotations

import json
import random
from itertools import combinations

import pytest

from faultsense_pipelines.cover import plan_cover, schonheim_bound, table
from faultsense_pipelines.cover.best import best_cover_source
from tools.cover_search.anneal import anneal_cover
from tools.cover_search.holey import holey_floor


def _missing_required(blocks, s: int, e: int) -> set[tuple[int, int]]:
    """Brute force: pairs inside the group 0..s-1 or between it and the hole s..s+e-1 that no probe holds."""
    covered = {pair for b in blocks for pair in combinations(sorted(set(b)), 2)}
    required = {(a, b) for a, b in combinations(range(s + e), 2) if a < s}
    return required - covered


def test_annealing_with_a_hole_beats_the_full_cover():
    # H(4, 3, 3) = 6: the 6 pairs of K4, each with one of 3 hole GPUs (a proper 3-edge-colouring of
    # K4), cover all 6 + 12 required pairs; a full cover of 7 GPUs by triples needs 7 (Fano plane)
    start = [random.Random(1).sample(range(7), 3) for _ in range(6)]
    found = anneal_cover(7, 3, start, seed=2, iterations=50_000, hole=3)
    assert found is not None and len(found) == 6
    assert _missing_required(found, 4, 3) == set()
    assert anneal_cover(7, 3, start, seed=2, iterations=50_000) is None  # without the hole, 6 triples cannot cover K7


def test_stored_holey_covers_cover_every_required_pair_above_the_floor():
    stored = table.read_table(table.table_path("holey"), validate=False)
    assert stored, "the holey-cover table is empty"
    for c in stored:
        k, s, e, blocks = c.k, c.n - c.hole, c.hole, c.probes
        assert e >= 2, c.key
        assert _missing_required(blocks, s, e) == set(), c.key
        assert all(len(set(b)) == len(b) <= k and min(b) >= 0 and max(b) < s + e for b in blocks)
        assert len(blocks) >= holey_floor(s, e, k)


def test_a_stored_holey_cover_that_misses_a_pair_is_ignored(tmp_path, monkeypatch):
    bad = tmp_path / "holey.json"
    bad.write_text(
        json.dumps(
            {
                "format": table.FORMAT,
                "covers": [
                    {"n": 7, "k": 3, "hole": 3, "probes": table.encode_probes([[0, 1, 4], [2, 3, 4]])},
                    {"n": 4, "k": 3, "hole": 2, "probes": table.encode_probes([[0, 1, 2], [0, 1, 3]])},
                ],
            }
        )
    )
    monkeypatch.setattr(table, "TABLE_DIR", tmp_path)
    table.clear_cache()
    try:
        assert table.holey_cover(4, 3, 3) is None  # misses {0, 2} and more
        assert table.holey_cover(2, 2, 3) is not None  # {0,1}, {0,2}, {0,3}, {1,2}, {1,3}; {2,3} is the hole
    finally:
        monkeypatch.undo()
        table.clear_cache()


@pytest.mark.scale
@pytest.mark.parametrize("n", [162, 166, 170])
def test_td_plans_with_holey_groups_cover_every_pair_within_ten_percent_of_schonheim(n):
    cover = plan_cover(n, 8, "best")
    covered = {pair for p in cover.probes for pair in combinations(sorted(p), 2)}
    assert covered == set(combinations(range(n), 2))
    assert all(len(set(p)) == len(p) <= 8 for p in cover.probes)
    assert "holey" in best_cover_source(n, 8)
    assert len(cover.probes) <= 1.10 * schonheim_bound(n, 8)


@pytest.mark.parametrize(("n", "source"), [(121, "Denniston(4,3)+1"), (122, "Denniston(4,3)+2"), (58, "PG(2,7)+1")])
def test_a_steiner_system_plus_one_or_two_gpus_meets_schonheim(n, source):
    # S(2, 8, v) has v(v-1)/56 probes; e = 1, 2 new GPUs need ceil(v / (8 - e)) more, which is L(v + e, 8)
    cover = plan_cover(n, 8, "best")
    covered = {pair for p in cover.probes for pair in combinations(sorted(p), 2)}
    assert covered == set(combinations(range(n), 2))
    assert best_cover_source(n, 8) == source
    assert len(cover.probes) == schonheim_bound(n, 8)
