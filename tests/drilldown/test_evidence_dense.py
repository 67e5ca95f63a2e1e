"""The evidence drill-down where faults are dense (n = 25, k = 8, noise-free): cases of the
paper's noise-free grid (bench/bench_evidence_noise_free.py) that it once left inconclusive, and
the recalibration of the noise scale from the paired tests that fixed the first of them."""

from __future__ import annotations

import math
import random

import pytest

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import localize
from faultsense_pipelines.localize.evidence.drilldown import (
    CALIBRATION_PAIRS,
    EvidenceModel,
    ProbeIndex,
    _recalibrate,
    _State,
)
from faultsense_pipelines.replica.faults import GpuFault, LinkFault
from faultsense_pipelines.sim.simulator import SimulatedReplica


def _confirmed(loc) -> set[tuple[str, int, int | None]]:
    return {(v.component_kind.value, v.gpu, v.peer_gpu) for v in loc.verdicts if v.status == "confirmed"}


def test_four_slow_gpus_among_25_are_all_confirmed_and_nothing_else():
    """Four slow GPUs among 25 at k = 8: 13 of the cover's 15 probes are slow, so Phase 1's
    moving baseline swings between slow and healthy probes and reads a noise scale of 0.32
    (the replica is noise-free). With it, 24 pairs at d = 0 cannot clear a healthy GPU, every
    GPU left open leaves the padding pool, and the pool ran dry: 2 of 4 found. The paired
    tests' own spread (zero) overrules it, and GPUs left open before a fault was found are
    tested again."""
    faults = [GpuFault(4, 2.43), GpuFault(13, 2.31), GpuFault(22, 2.64), GpuFault(9, 2.67)]
    loc = localize(SimulatedReplica(25, faults), plan_cover(25, 8, "best"), method="evidence")
    assert _confirmed(loc) == {("gpu", 4, None), ("gpu", 9, None), ("gpu", 13, None), ("gpu", 22, None)}
    assert not [v for v in loc.verdicts if v.status == "inconclusive"]


def test_a_slow_link_is_found_when_a_gpu_of_both_slow_probes_keeps_drawing_its_far_end():
    """Links (0, 17) and (2, 12) slow two probes that share GPUs 1, 12 and 24. The GPU stage
    tests GPU 12, and the padding draws GPU 2 into 6 of its 25 tests, each slow: an
    intermittent GPU 12 (slow in a quarter of its tests) scored 6 x 2.75 - 19 x 0.69 = 3.3,
    left GPU 12 open leaning faulty, and an open GPU leaning faulty explains both probes, so
    neither link was searched. At its budget the link (12, 2) is weighed against the GPU
    (it explains the six at least as well), its pairs stop counting, the other 19 clear GPU
    12, and the units find both links."""
    faults = [LinkFault((0, 17), 2.01), LinkFault((2, 12), 2.55)]
    loc = localize(SimulatedReplica(25, faults), plan_cover(25, 8, "best"), method="evidence")
    assert _confirmed(loc) == {("link", 0, 17), ("link", 2, 12)}


def _state(sigma: float) -> _State:
    model = EvidenceModel(sigma=sigma, effect=math.log(1.2))
    index = ProbeIndex.build(8, [((0, 1, 2, 3), 0.0)])
    return _State(8, 4, model, lambda t, r: 0.0, random.Random(0), [0.0] * 8, set(), index)


def test_recalibration_replaces_a_phase1_scale_the_pairs_show_is_four_times_too_wide():
    """Hand-worked: with one repeat the pair scale is sqrt(2) x sigma, and a pair scale is the
    20% quantile of |d| over 0.2767 (t_3's 60th percentile). Twelve pairs, |d| = 0.001 in
    eleven and a contaminated 0.9: the 20% quantile is 0.001, sigma = 0.001 / 0.2767 /
    sqrt(2) = 0.00256, below the 0.01 floor; 4 x 0.01 < 0.32, so Phase 1's 0.32 goes."""
    state = _state(0.32)
    state.pair_ds = [0.001, -0.001] * 5 + [0.001, 0.9]
    assert len(state.pair_ds) == CALIBRATION_PAIRS
    _recalibrate(state)
    assert state.model.sigma == pytest.approx(0.001 / 0.2767 / math.sqrt(2.0), rel=1e-3)
    assert state.phase1_sigma == 0.32


def test_recalibration_keeps_phase1s_scale_where_the_pairs_agree_or_are_too_few():
    """Pairs at |d| = 0.1: sigma = 0.1 / 0.2767 / sqrt(2) = 0.256, and 4 x 0.256 > 0.32:
    kept. Eleven pairs at zero: too few to judge, kept. A Phase 1 scale at the floor (0.02)
    against pairs at zero: 4 x 0.01 (the floor) > 0.02, kept, so a quiet replica's model
    does not change."""
    agree = _state(0.32)
    agree.pair_ds = [0.1, -0.1] * 6
    _recalibrate(agree)
    assert agree.model.sigma == 0.32
    few = _state(0.32)
    few.pair_ds = [0.0] * (CALIBRATION_PAIRS - 1)
    _recalibrate(few)
    assert few.model.sigma == 0.32
    quiet = _state(0.02)
    quiet.pair_ds = [0.0] * 24
    _recalibrate(quiet)
    assert quiet.model.sigma == 0.02


def test_two_slow_links_in_one_probe_are_both_confirmed():
    """Links (8, 18) and (16, 24) sit in one probe (n = 25, k = 4) among four slow links. Its
    unit's single hypotheses stall: GPU 16 (slow in 8 tests, fast in 4: 8 x 2.75 - 4 x 0.69
    = 19.2) outscores each link (link 8-18: 6 x 2.75 = 16.5) but slow links to its pads rival
    it, so nothing reached 0.5 and the unit ended with no verdict at all. Once they stall, the
    unit weighs two faults at once: the two links predict every slow test and no fast one."""
    faults = [LinkFault((1, 23), 2.49), LinkFault((2, 11), 2.50), LinkFault((8, 18), 2.33), LinkFault((16, 24), 1.67)]
    loc = localize(SimulatedReplica(25, faults), plan_cover(25, 4, "best"), method="evidence")
    assert _confirmed(loc) == {("link", 1, 23), ("link", 2, 11), ("link", 8, 18), ("link", 16, 24)}


def test_a_gpu_whose_padding_runs_out_lets_slow_links_to_its_pads_explain_first():
    """Links (4, 14), (5, 21), (9, 13), (17, 22) at n = 25, k = 8: GPU 14's tests with pad 4
    accuse it, and pads carrying (5, 21) slow its controls too, which sets them aside until
    too few pads are left. GPU 14 was left open leaning faulty (1.31), which closed the units
    of links (4, 14) and (5, 21). Now the link (14, 4) is weighed first: it explains the
    accusations, the rest clear GPU 14, and the units find all four links."""
    slow = (1.5404060609760342, 2.551828810522576, 2.130577444089556, 1.621092972815581)  # the grid's draw
    faults = [LinkFault(link, x) for link, x in zip(((4, 14), (5, 21), (9, 13), (17, 22)), slow, strict=True)]
    loc = localize(SimulatedReplica(25, faults), plan_cover(25, 8, "best"), method="evidence")
    assert _confirmed(loc) == {("link", 4, 14), ("link", 5, 21), ("link", 9, 13), ("link", 17, 22)}


def test_a_unit_closed_by_a_gpu_left_open_is_searched_once_a_retest_settles_that_gpu():
    """Slow GPUs 12, 23 and links (2, 20), (14, 19) at n = 25, k = 8. GPU 23 is tested while
    12 and the links are unknown: its controls are slow (their pads hold them), the pads set
    aside run out, and it stays open leaning faulty, which closes its units, the one of link
    (2, 20) among them. Once the unit stage confirms GPU 12 and link (14, 19), GPU 23 is
    tested again (confirmed), and the units it had closed are searched: link (2, 20)."""
    slow = (2.71966935097101, 2.5902000529272238, 1.9642772694781725, 2.722440661405387)  # the grid's draw
    faults = [GpuFault(12, slow[0]), GpuFault(23, slow[1]), LinkFault((2, 20), slow[2]), LinkFault((14, 19), slow[3])]
    loc = localize(SimulatedReplica(25, faults), plan_cover(25, 8, "best"), method="evidence")
    assert _confirmed(loc) == {("gpu", 12, None), ("gpu", 23, None), ("link", 2, 20), ("link", 14, 19)}


def test_the_hub_of_two_slow_links_is_cleared_and_both_links_are_found():
    """The four-link hub case (1-3, 3-5, 5-21, 6-19; n = 25, k = 8). GPU 3, the hub of links
    1-3 and 3-5, sits in both slow probes that links 5-21 and 6-19 do not explain. Every GPU
    shares some suspect probe with GPU 3, so its tests were padded with GPUs 1 and 5 and
    accused it (or its pair with a pad), and both units ended with GPU 3 inconclusive and
    links 1-3 and 3-5 not found. Once 5-21 and 6-19 explain their probes, those probes'
    other pairs no longer keep GPUs apart: pads and references come from the GPUs that
    share no unexplained suspect probe with GPU 3, and the units find both links."""
    slow = (1.6186749785460017, 2.861360749751144, 2.4364537253374623, 2.014007398868906)  # the grid's draw
    faults = [LinkFault(link, x) for link, x in zip(((1, 3), (3, 5), (5, 21), (6, 19)), slow, strict=True)]
    loc = localize(SimulatedReplica(25, faults), plan_cover(25, 8, "best"), method="evidence")
    assert _confirmed(loc) == {("link", 1, 3), ("link", 3, 5), ("link", 5, 21), ("link", 6, 19)}
    assert not [v for v in loc.verdicts if v.status == "inconclusive"]


def test_references_that_hold_an_unknown_slow_link_do_not_clear_a_slow_link():
    """Slow GPUs 12 and 9 and links (0, 4), (5, 20) at n = 25, k = 8 (the grid's draw with
    link 0-4 at 1.25 x its slowdown). With GPUs 1, 9 and 12 left open, no 8 healthy GPUs
    avoid every suspect pair, and references filled at random often held 0 and 4: tests
    holding link 5-20 (2.73x) against them read d = -0.09 and cleared it, and GPU 20 was
    confirmed in its place (a wrong blame). References are now filled with the GPUs that
    open the fewest suspect pairs, and all four faults are found."""
    faults = [
        GpuFault(12, 2.122214508424995),
        GpuFault(9, 1.6996115926789142),
        LinkFault((0, 4), 2.9781113678394453),
        LinkFault((5, 20), 2.733826923577808),
    ]
    loc = localize(SimulatedReplica(25, faults), plan_cover(25, 8, "best"), method="evidence")
    assert _confirmed(loc) == {("gpu", 9, None), ("gpu", 12, None), ("link", 0, 4), ("link", 5, 20)}


def _padding_state(probes: list[tuple[int, ...]], n: int = 10) -> _State:
    model = EvidenceModel(sigma=0.02, effect=math.log(1.2))
    suspect = tuple(frozenset(p) for p in probes)
    pairs = {(a, b) for p in suspect for a in p for b in p if a < b}
    index = ProbeIndex.build(n, [(p, 0.0) for p in probes])
    return _State(n, 4, model, lambda t, r: 0.0, random.Random(0), [0.0] * n, pairs, index, suspect_probes=suspect)


def test_a_suspect_probe_a_confirmed_fault_explains_no_longer_keeps_its_gpus_apart():
    """Hand-worked: suspect probes {0, 1, 2, 3} and {2, 4, 5}. Before anything is found both
    probes' pairs are open: 9 of them. Confirming link (0, 1) explains the first probe, so
    only {2, 4, 5}'s three pairs stay open, and GPU 2's open neighbours shrink from
    {0, 1, 3, 4, 5} to {4, 5}. The suspect pairs themselves (what the rival checks read) do
    not change."""
    state = _padding_state([(0, 1, 2, 3), (2, 4, 5)])
    assert len(state.open_pairs()[0]) == 9
    assert state.linked({2}) == {0, 1, 3, 4, 5}
    state.confirmed_links.add((0, 1))
    assert state.open_pairs()[0] == {(2, 4), (2, 5), (4, 5)}
    assert state.linked({2}) == {4, 5}
    assert state.suspect_link(0, 3)


def test_a_filled_reference_opens_the_fewest_suspect_pairs_and_never_a_confirmed_link():
    """Brute force over random small cases (every GPU preferred): each GPU of a padding or
    reference draw opens, with the GPUs drawn before it, no more open suspect pairs than any
    other GPU it could have taken (0 while GPUs without any are left), the draw never holds
    both GPUs of a confirmed link, and it is complete whenever enough GPUs remain."""
    rng = random.Random(11)
    filled = 0
    for _ in range(300):
        n = 10
        probes = [tuple(sorted(rng.sample(range(n), rng.randint(3, 6)))) for _ in range(rng.randint(3, 7))]
        state = _padding_state(probes, n)
        a, b = sorted(rng.sample(range(n), 2))
        state.confirmed_links.add((a, b))
        count = rng.randint(3, 6)
        chosen = state._spread(list(range(n)), list(range(n)), count)
        assert len(set(chosen)) == len(chosen) == count
        assert not {a, b} <= set(chosen)
        adjacency = state.open_pairs()[1]
        for i, g in enumerate(chosen):
            before = set(chosen[:i])
            allowed = [q for q in range(n) if q not in before and not any(state._closes(q, c) for c in before)]
            opened = {q: len(adjacency.get(q, set()) & before) for q in allowed}
            assert opened[g] == min(opened.values())
            filled += opened[g] > 0
    assert filled > 0  # some draws had to open pairs: the fill was exercised
