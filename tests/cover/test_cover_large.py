"""Large stored covers (k = 8, n = 112..312): every pair covered, within 1.10 x Schönheim, used by ``best``."""

from __future__ import annotations

import json
from math import ceil

import pytest

from faultsense_pipelines.cover import plan_cover, table
from faultsense_pipelines.cover.rounds import ordered_rounds
from tests.cover_checks import first_fit_rounds, uncovered

pytestmark = pytest.mark.scale  # every stored large cover, n up to 325

ENTRIES = {(c.k, c.n): c for c in table.read_table(table.table_path("large"), validate=False)}
STORED = sorted(ENTRIES)


def _schonheim(n: int, k: int) -> int:
    """L(n, k) computed here, independently of cover.bounds."""
    return ceil(n / k * ceil((n - 1) / (k - 1)))


def test_the_large_table_holds_the_sizes_where_constructions_missed_the_target():
    # n = 112, 113, 173..176 were the k = 8 sizes >= 100 above 1.10 x L (bench/results/cover_every.csv)
    assert {(8, 112), (8, 113), (8, 173), (8, 174), (8, 175), (8, 176)} <= set(STORED)


@pytest.mark.parametrize("k,n", STORED)
def test_a_stored_large_cover_covers_every_pair_within_the_probe_target(k, n):
    probes = ENTRIES[(k, n)].probes
    assert all(len(set(p)) == len(p) <= k and min(p) >= 0 and max(p) < n for p in probes)
    assert uncovered(probes, n) == set()
    assert len(probes) <= 1.10 * _schonheim(n, k)


@pytest.mark.parametrize("k,n", STORED)
def test_a_stored_large_cover_is_listed_round_by_round_within_its_stored_rounds(k, n):
    entry = ENTRIES[(k, n)]
    probes = entry.probes
    assert entry.first_fit_rounds is not None and first_fit_rounds(probes) <= entry.first_fit_rounds
    assert len(ordered_rounds(probes, n)) == first_fit_rounds(probes)


@pytest.mark.parametrize("k,n", STORED)
def test_best_plans_no_more_probes_or_rounds_than_the_stored_large_cover(k, n):
    cover = plan_cover(n, k)
    entry = ENTRIES[(k, n)]
    assert entry.first_fit_rounds is not None
    assert len(cover.probes) <= len(entry.probes)
    assert len(cover.rounds) <= entry.first_fit_rounds
    assert uncovered(cover.probes, n) == set()
    for r in cover.rounds:  # GPU-disjoint rounds
        gpus = [g for i in r for g in cover.probes[i]]
        assert len(gpus) == len(set(gpus))


def test_a_corrupted_large_cover_is_ignored(tmp_path, monkeypatch):
    probes = table.encode_probes(ENTRIES[(8, 112)].probes)
    broken = {"format": table.FORMAT, "covers": [{"n": 112, "k": 8, "first_fit_rounds": 99, "probes": probes[:-1]}]}
    path = tmp_path / "large.json"  # one probe fewer: some pair is left uncovered
    path.write_text(json.dumps(broken))
    monkeypatch.setattr(table, "TABLE_DIR", tmp_path)
    table.clear_cache()
    try:
        assert uncovered(table.decode_probes(probes[:-1]), 112)  # the premise: it is not a cover
        assert table.large_cover(112, 8) is None
    finally:
        monkeypatch.undo()
        table.clear_cache()


def test_probe_hex_encoding_round_trips():
    probes = [(0, 7, 200, 255), (3, 4)]
    assert table.decode_probes(table.encode_probes(probes)) == ((0, 7, 200, 255), (3, 4))
    wide = [(0, 255, 256, 299)]
    assert table.decode_probes(table.encode_probes(wide, id_bytes=2), id_bytes=2) == ((0, 255, 256, 299),)


def test_the_n300_cover_keeps_the_probe_count_and_meets_the_rounds_target():
    # issue 2: rounds <= 1.5 x ceil(299 / 7) = 64.5; the TD(8,37)+4 cover it replaces had 1681 probes
    probes = ENTRIES[(8, 300)].probes
    assert len(probes) <= 1681
    assert first_fit_rounds(probes) <= 1.5 * ceil(299 / 7)


def test_the_n275_cover_meets_the_probe_and_the_rounds_targets():
    # issue 2: probes <= 1.10 x L(275, 8) = 1512.5 and rounds <= 1.5 x ceil(274 / 7) = 60
    probes = ENTRIES[(8, 275)].probes
    assert len(probes) <= 1.10 * _schonheim(275, 8)
    assert first_fit_rounds(probes) <= 1.5 * ceil(274 / 7)


def test_the_n175_cover_meets_the_probe_and_the_rounds_targets():
    # issue 2: probes <= 1.10 x L(175, 8) = 601.7 and rounds <= 1.5 x ceil(174 / 7) = 37.5
    probes = ENTRIES[(8, 175)].probes
    assert len(probes) <= 1.10 * _schonheim(175, 8)
    assert first_fit_rounds(probes) <= 1.5 * ceil(174 / 7)


SQUEEZED = sorted(n for (k, n), entry in ENTRIES.items() if k == 8 and entry.recipe is not None)


def test_the_squeezed_covers_include_the_benchmark_sizes_175_and_275():
    assert {175, 275} <= set(SQUEEZED)


@pytest.mark.parametrize("n", SQUEEZED)
def test_a_squeezed_cover_meets_the_rounds_target_and_names_its_own_size_in_its_recipe(n):
    # tools/cover_search/schedule_anneal.py stores a cover only for the rounds target: <= 1.5 x ceil((n-1)/(k-1))
    entry = ENTRIES[(8, n)]
    assert first_fit_rounds(entry.probes) <= 1.5 * ceil((n - 1) / 7)
    assert entry.tool == "schedule_anneal" and entry.recipe is not None and entry.recipe.split()[0] == str(n)
