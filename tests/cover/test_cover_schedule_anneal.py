"""Offline round squeezing (tools/cover_search/schedule_anneal.py, numba): fewer rounds, or fewer probes, still a cover.

Every result is checked here by brute force (pairs) and by a first-fit written out here
(rounds), not by the module's own checks.
"""

from __future__ import annotations

import pytest

from faultsense_pipelines.cover.greedy import greedy_cover

pytest.importorskip("numba")

from tests.cover_checks import first_fit_rounds, uncovered
from tools.cover_search.schedule_anneal import squeeze_rounds


def test_greedy_cover_is_squeezed_into_fewer_rounds_with_the_same_probe_budget():
    n, k = 40, 8
    start = greedy_cover(n, k)  # 42 probes; first fit 18 rounds, the tabu schedule 17
    assert first_fit_rounds(start) >= 17  # the premise
    found = squeeze_rounds(start, n, 14, len(start), seed=0, moves=2_000_000, reheats=3)
    assert found is not None
    assert uncovered(found, n) == set()
    assert all(len(set(p)) == len(p) == k for p in found)
    assert len(found) <= len(start)
    assert first_fit_rounds(found) <= 14


def test_probes_above_the_cap_are_shed_and_the_cover_repaired():
    n, k = 40, 8
    start = greedy_cover(n, k)
    found = squeeze_rounds(start, n, 17, len(start) - 2, seed=0, moves=2_000_000, reheats=3)
    assert found is not None
    assert len(found) <= len(start) - 2
    assert uncovered(found, n) == set()
    assert first_fit_rounds(found) <= 17


def test_an_impossible_squeeze_returns_none():
    n, k = 40, 8
    # a GPU meets at most 7 others per probe, so it needs ceil(39 / 7) = 6 probes: 5 rounds cannot work
    assert squeeze_rounds(greedy_cover(n, k), n, 5, 25, seed=0, moves=200_000) is None


def test_a_cap_below_one_is_refused_and_one_above_what_the_rounds_hold_is_lowered():
    with pytest.raises(ValueError, match="cap=0"):
        squeeze_rounds(greedy_cover(40, 8), 40, 5, 0)
    # 5 rounds hold 25 probes of 8 on 40 GPUs; a cap of 60 means 25 (and 5 rounds are still too few)
    assert squeeze_rounds(greedy_cover(40, 8), 40, 5, 60, seed=0, moves=200_000) is None


def test_the_command_writes_the_cover_round_by_round_to_the_given_file(tmp_path):
    from faultsense_pipelines.cover import table
    from tools.cover_search.schedule_anneal import main

    out = tmp_path / "covers.json"
    assert main(["104", "17,16", "210", "--moves=2e6", "--write", f"--out={out}"]) == 0  # TD(8,13): 17 rounds
    (entry,) = table.read_table(out)
    assert (entry.n, entry.k, entry.recipe, entry.tool) == (104, 8, "104 17,16 210 --moves=2e6", "schedule_anneal")
    probes = entry.probes
    assert uncovered(probes, 104) == set()
    assert entry.first_fit_rounds is not None
    assert len(probes) <= 210 and first_fit_rounds(probes) <= entry.first_fit_rounds <= 16
