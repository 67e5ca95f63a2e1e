"""Shared-component claims of the sequential drill-down: NIC, NVSwitch, leaf switch.

The replica is written here (not the project's simulator): 64 GPUs on 8 nodes of 8, two
nodes a leaf switch; a probe's latency is 10 ms x the worst slowdown among the GPUs, links
and shared components it holds (:meth:`ReplicaTopology.holds`, itself checked against the
arithmetic rules in tests/test_topology_graph.py) x a healthy gap per extra node spanned x
Student-t noise, and a round's ``2r`` measurements come in a random order.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

import numpy as np
import pytest

from faultsense_pipelines.localize.sequential import Layout, claims, sequential_drilldown
from faultsense_pipelines.localize.sequential.budget import ErrorBudget, ProbeBudget
from faultsense_pipelines.localize.sequential.claims import _Context, shared_draws, shared_halves
from faultsense_pipelines.localize.sequential.drilldown import shared_proposals
from faultsense_pipelines.localize.sequential.pairing import shape
from faultsense_pipelines.localize.sequential.wiring import layout_of
from faultsense_pipelines.replica.topology import Component, ReplicaTopology, gpu_component
from faultsense_pipelines.replica.vocabulary import ComponentKind, Status
from tests.localize.rounds import shuffled_round

TOPO = ReplicaTopology(64, gpus_per_node=8, nodes_per_switch=2)
LAYOUT = layout_of(64, TOPO)


class _Replica:
    """Worst held slowdown x (1 + gap) per extra node spanned x exp(sigma t3) noise."""

    def __init__(
        self, slow: dict[Component, float], sigma: float, seed: int, gap: float = 0.0, topo: ReplicaTopology = TOPO
    ) -> None:
        self.slow, self.sigma, self.gap, self.topo = slow, sigma, gap, topo
        self.rng = np.random.default_rng(seed)
        self.order = random.Random(seed)

    def latency(self, gpus: tuple[int, ...]) -> float:
        s = max([1.0] + [v for c, v in self.slow.items() if self.topo.holds(c, gpus)])
        spans = len({self.topo.node(g) for g in gpus})
        return 10.0 * s * (1 + self.gap) ** (spans - 1) * math.exp(self.sigma * self.rng.standard_t(3))

    def round(self, probes: Sequence[tuple[int, ...]], r: int = 3) -> tuple[tuple[float, ...], ...]:
        return shuffled_round(self.latency, self.order, probes, r)


def _ctx(rep: _Replica, seed: int, budget: int = 400, k: int = 8) -> _Context:
    return _Context(k, LAYOUT, rep.round, ProbeBudget(budget), random.Random(seed), math.log(1.2), 0.01, 64)


def _others_equal(test: tuple[int, ...], ref: tuple[int, ...], differing: set[Component]) -> bool:
    """Every shared component other than ``differing`` is held by both probes or by neither."""
    return all(TOPO.holds(c, test) == TOPO.holds(c, ref) for c in TOPO.shared_components() if c not in differing)


def test_halves_split_a_nic_by_gpu_and_a_switch_by_whole_node() -> None:
    rng = random.Random(0)
    a, b = shared_halves(TOPO.nic(3), LAYOUT, rng)  # type: ignore[misc]
    assert len(a) == len(b) == 4 and set(a) | set(b) == set(range(24, 32)) and not set(a) & set(b)
    a, b = shared_halves(TOPO.switch(1), LAYOUT, rng)  # type: ignore[misc]
    assert {LAYOUT.node[g] for g in a} | {LAYOUT.node[g] for g in b} == {2, 3}
    assert len({LAYOUT.node[g] for g in a}) == len({LAYOUT.node[g] for g in b}) == 1
    assert shared_halves(ReplicaTopology(8, gpus_per_node=2).nvswitch(0), Layout((0, 0, 1, 1, 2, 2, 3, 3)), rng) is None


@pytest.mark.parametrize("which", ["nic", "nvswitch", "switch"])
def test_every_round_differs_only_in_the_component_and_its_counterpart(which: str) -> None:
    c = {"nic": TOPO.nic(3), "nvswitch": TOPO.nvswitch(3), "switch": TOPO.switch(1)}[which]
    ctx = _ctx(_Replica({}, 0.0, 0), 1)
    draws = shared_draws(ctx, c, list(range(64)))
    assert len(draws) == 2
    for draw in draws:
        for _ in range(40):
            test, ref = draw(ctx)  # type: ignore[misc]
            assert shape(test, LAYOUT) == shape(ref, LAYOUT) and len(test) == len(ref)
            assert TOPO.holds(c, test) and not TOPO.holds(c, ref)
            swapped = set(test) ^ set(ref)
            if which == "nvswitch":  # two GPUs of node 3 against two GPUs of one other node, alone
                assert len(test) == 2 and {TOPO.node(g) for g in test} == {3} and len({TOPO.node(g) for g in ref}) == 1
                counterpart = TOPO.nvswitch(TOPO.node(ref[0]))
            else:
                (a,) = set(test) - set(ref)
                (a2,) = set(ref) - set(test)
                assert swapped == {a, a2} and a in draw.half  # type: ignore[attr-defined]
                if which == "nic":
                    assert TOPO.node(a2) != 3 and LAYOUT.switch_of(a2) == LAYOUT.switch_of(a)
                    counterpart = TOPO.nic(TOPO.node(a2))
                else:
                    assert LAYOUT.switch_of(a2) != 1
                    counterpart = TOPO.switch(LAYOUT.switch_of(a2))
            # the switches' own NICs differ too for a switch claim (a's node and a2's)
            differing = {c, counterpart}
            if which == "switch":
                differing |= {TOPO.nic(TOPO.node(g)) for g in swapped}
            assert _others_equal(test, ref, differing), (test, ref)


@pytest.mark.parametrize("which", ["nic", "nvswitch", "switch"])
def test_a_slow_component_is_confirmed(which: str) -> None:
    c = {"nic": TOPO.nic(3), "nvswitch": TOPO.nvswitch(5), "switch": TOPO.switch(1)}[which]
    for seed in range(3):
        res = claims.test_shared(_ctx(_Replica({c: 1.5}, 0.03, seed), seed), c, 0.005, list(range(64)))
        assert res.status == "confirmed" and res.shared == c, res.reason
        assert res.interval is not None and res.interval[0] >= 1.2


def test_one_slow_gpu_does_not_confirm_its_nic_or_switch_or_nvswitch() -> None:
    # a 3x GPU on node 3 sits in one half only: the other half's sub-test is a true null
    for seed in range(6):
        rep = _Replica({gpu_component(26): 3.0}, 0.05, seed)
        for c in (TOPO.nic(3), TOPO.switch(1), TOPO.nvswitch(3)):
            res = claims.test_shared(_ctx(rep, seed), c, 0.005, list(range(64)))
            assert res.status != "confirmed", (c, res)


def test_a_large_healthy_node_gap_proposes_and_blames_no_shared_component() -> None:
    # inter-node probes 30% slower per extra node with nothing faulty: the contrast proposes
    # every NIC and switch; their shape-matched claims blame none
    from faultsense_pipelines.cover import plan_cover

    cover = plan_cover(64, 8)
    for seed in range(3):
        rep = _Replica({}, 0.05, seed, gap=0.3)
        lat = [rep.latency(tuple(p)) for p in cover.probes]
        typical = float(np.median(lat))
        raw = [math.log(x / typical) for x in lat]
        phase1 = [(tuple(p), 0.0) for p in cover.probes]
        proposed = shared_proposals(TOPO, LAYOUT, phase1, set(), raw=raw, contrast=math.log(1.2) / 2)
        assert proposed, "the gap should look like a slow NIC to Phase 1"
        res = sequential_drilldown(
            64, 8, phase1, [], rep.round, sigma=0.05, budget=400, layout=LAYOUT, seed=seed, topology=TOPO, shared=proposed
        )
        assert not [c for c in res.claims if c.status == "confirmed"]
        assert res.probes <= 400


@pytest.mark.parametrize("seed", range(3))
def test_the_drilldown_names_a_slow_nic_and_a_slow_gpu_beside_it(seed: int) -> None:
    from faultsense_pipelines.cover import plan_cover

    cover = plan_cover(64, 8)
    nic, gpu = TOPO.nic(3), gpu_component(60)
    rep = _Replica({nic: 1.5, gpu: 1.8}, 0.02, seed)
    lat = [float(np.median([rep.latency(tuple(p)) for _ in range(3)])) for p in cover.probes]
    typical = float(np.median(lat))
    raw = [math.log(x / typical) for x in lat]
    fast = float(np.median(sorted(lat)[:8]))  # the rule's anchor: the fast cluster
    phase1 = [(tuple(p), math.log(x / fast)) for p, x in zip(cover.probes, lat, strict=True)]
    suspects = [i for i, (_, x) in enumerate(phase1) if x is not None and x > math.log(1.2)]
    shared = shared_proposals(TOPO, LAYOUT, phase1, set(suspects), raw=raw, contrast=math.log(1.2) / 2)
    res = sequential_drilldown(
        64,
        8,
        phase1,
        suspects,
        rep.round,
        sigma=0.02,
        budget=400,
        repeats=3,
        layout=LAYOUT,
        seed=seed,
        topology=TOPO,
        shared=shared,
    )
    confirmed = {(c.kind, c.gpu, c.shared) for c in res.claims if c.status == "confirmed"}
    assert ("nic", None, nic) in confirmed
    assert confirmed <= {("nic", None, nic), ("gpu", 60, None)}


RAIL = ReplicaTopology(64, gpus_per_node=8, rails=True)
RAIL_LAYOUT = layout_of(64, RAIL)


def _rail_sweep(
    slow: dict[Component, float], seed: int, gap: float = 0.0, pointed: int | None = None
) -> tuple[list[claims.ClaimResult], int]:
    """Phase 1 on the best cover of a rail-optimized replica (median of three), then the
    drill-down: its claims and the probes it spent. With ``pointed``, the suspects are the
    probes that run that GPU (as if Phase 1 had pointed at it)."""
    from faultsense_pipelines.cover import plan_cover

    cover = plan_cover(64, 8)
    rep = _Replica(slow, 0.02, seed, gap=gap, topo=RAIL)
    lat = [float(np.median([rep.latency(tuple(p)) for _ in range(3)])) for p in cover.probes]
    fast = float(np.median(sorted(lat)[:8]))
    phase1 = [(tuple(p), math.log(x / fast)) for p, x in zip(cover.probes, lat, strict=True)]
    suspects = [i for i, (_, x) in enumerate(phase1) if x is not None and x > math.log(1.2)]
    if pointed is not None:
        suspects = [i for i, (p, _) in enumerate(phase1) if pointed in p]
    res = sequential_drilldown(
        64, 8, phase1, suspects, rep.round, sigma=0.02, budget=400, repeats=3, layout=RAIL_LAYOUT, seed=seed, topology=RAIL
    )
    assert res.probes <= 400
    return list(res.claims), res.probes


@pytest.mark.parametrize("seed", range(3))
def test_a_slow_rail_nic_is_named_and_its_gpu_is_not_confirmed(seed: int) -> None:
    nic = RAIL.nic(3, 5)  # GPU 29's inter-node paths, 1.5x; inside node 3 it is healthy
    found, _ = _rail_sweep({nic: 1.5}, seed)
    confirmed = [c for c in found if c.status == "confirmed"]
    assert [(c.kind, c.shared) for c in confirmed] == [("nic", nic)], found
    (row,) = confirmed
    assert RAIL.name(row.shared) == "nic:node3/rail5"  # type: ignore[arg-type]
    gpu = [c for c in found if c.kind == "gpu" and c.gpu == 29]
    assert gpu and gpu[0].status == "inconclusive" and "its rail NIC nic:node3/rail5 is confirmed" in (gpu[0].reason or "")
    # two levels of the wallet: the GPU claim's and the reverse test's
    assert 0.0 < row.confidence < 1.0 and row.level > gpu[0].level


@pytest.mark.parametrize("seed", range(3))
def test_a_slow_gpu_on_a_rail_replica_stays_a_confirmed_gpu(seed: int) -> None:
    found, _ = _rail_sweep({gpu_component(29): 1.5}, seed)
    confirmed = [(c.kind, c.gpu) for c in found if c.status == "confirmed"]
    assert confirmed == [("gpu", 29)], found
    (row,) = [c for c in found if c.status == "confirmed"]
    assert row.reason is None or "or its rail NIC" not in row.reason  # shown slow inside its node


@pytest.mark.parametrize("seed", range(2))
def test_a_healthy_rail_replica_blames_nothing(seed: int) -> None:
    # a 10% healthy gap per extra node spanned: Phase 1 (no shape correction here) flags most
    # cross-node probes (a fresh read of each, shape-matched, finds most healthy again);
    # Phase 1 pointing at GPU 29 opens its claim; nothing is confirmed
    gapped, pointed = _rail_sweep({}, seed, gap=0.1)[0], _rail_sweep({}, seed, pointed=29)[0]
    assert pointed
    for found in (gapped, pointed):
        assert not [c for c in found if c.status == "confirmed"]
        assert not [c for c in found if c.kind == "nic"]


def test_the_rail_nic_verdict_by_hand() -> None:
    """Seed 0 of the rail NIC case, by hand. The GPU claim (level alpha / 2 = 0.005) rejects
    after three rounds of each sub-test, every round's count at its maximum 9 (every test
    measurement above every reference one at r = 3): the mixture of the shift bets (factors
    1.5, 1.9) and the extreme bets (1 + 0.5 x 19, 1 + 0.95 x 19; P(S = 9) = 1/20) is
    (1.5^3 + 1.9^3 + 10.5^3 + 19.05^3) / 4 = 2020.3 >= 200, after two rounds only 119.8. The
    reverse test (level alpha / 6) sees the healthy GPU inside its node: ``{h} | Q`` times 1.2
    above ``{29} | Q`` in every pair, the same three rounds to 2020.3 >= 600. The NIC's level
    is 0.005 + 0.01 / 6, its confidence the smaller of 1 - 0.01 / (0.005 x 2020.3) and
    1 - 0.01 / (0.01 / 6 x 2020.3) = 0.99703."""
    found, spent = _rail_sweep({RAIL.nic(3, 5): 1.5}, 0)
    e = (1.5**3 + 1.9**3 + 10.5**3 + 19.05**3) / 4
    assert e == pytest.approx(2020.3, abs=0.05) and (1.5**2 + 1.9**2 + 10.5**2 + 19.05**2) / 4 < 200
    gpu, nic = found
    assert gpu.level == pytest.approx(0.005) and gpu.rounds == 6 and gpu.evalue == pytest.approx(e)
    assert nic.level == pytest.approx(0.005 + 0.01 / 6) and nic.rounds == 9 and nic.evalue == pytest.approx(e)
    assert nic.confidence == pytest.approx(1 - 0.01 / (0.01 / 6 * e)) == pytest.approx(0.99703, abs=1e-5)
    assert spent >= 2 * 9  # the claims' 9 rounds of two probes, plus the search's reads


def test_the_reverse_test_of_a_gpu_too_few_on_its_node_keeps_both_names() -> None:
    # two GPUs a node: no probe of two inside it without g; no level is opened
    topo = ReplicaTopology(16, gpus_per_node=2, rails=True)
    lay = layout_of(16, topo)
    ctx = _Context(2, lay, _Replica({}, 0.02, 0, topo=topo).round, ProbeBudget(100), random.Random(0), math.log(1.2), 0.01, 64)
    gpu = claims.ClaimResult(ComponentKind.GPU, 5, None, Status.CONFIRMED, 0.005, 300.0, 0.99, 1.5, (1.3, 1.7), 6, None, ())
    wallet = ErrorBudget(0.01)
    row, nic = claims.test_rail_nic(ctx, gpu, wallet, list(range(16)), "nic:node2/rail1")
    assert nic is None and row.status == "confirmed" and wallet.opened == 0
    assert row.reason is not None and row.reason.startswith("gpu:5 or its rail NIC nic:node2/rail1")


def test_a_reverse_test_cut_short_by_the_budget_keeps_both_names() -> None:
    # GPU 29 slow 1.5x everywhere, a confirmed GPU claim, two rounds of budget left: neither
    # side of the reverse test decides, the GPU stays confirmed and names its rail NIC too
    rep = _Replica({gpu_component(29): 1.5}, 0.02, 0, topo=RAIL)
    ctx = _Context(8, RAIL_LAYOUT, rep.round, ProbeBudget(4), random.Random(0), math.log(1.2), 0.01, 64)
    gpu = claims.ClaimResult(ComponentKind.GPU, 29, None, Status.CONFIRMED, 0.005, 300.0, 0.99, 1.5, (1.3, 1.7), 6, None, ())
    wallet = ErrorBudget(0.01)
    wallet.open()
    row, nic = claims.test_rail_nic(ctx, gpu, wallet, list(range(64)), "nic:node3/rail5")
    assert nic is None and row.status == "confirmed" and wallet.opened == 2 and ctx.budget.left == 0
    assert row.reason is not None and row.reason.startswith("gpu:29 or its rail NIC nic:node3/rail5 (inside its node")
    assert "Phase 2 budget spent after 2 rounds" in row.reason


def test_a_gpu_exactly_min_slowdown_slow_names_its_rail_nic_at_most_at_the_level() -> None:
    # the reverse test's null on its boundary: GPU 29 1.2x slow in every probe, inside its
    # node too, under heavy-tailed noise; a wrongly named NIC needs the reverse test to reject
    # "29 is at least 1.2x slower than h inside node 3", which it does at most at its level
    a, trials = 0.05, 300
    named = 0
    gpu = claims.ClaimResult(ComponentKind.GPU, 29, None, Status.CONFIRMED, 0.005, 300.0, 0.99, 1.2, (1.2, 1.3), 6, None, ())
    for seed in range(trials):
        rep = _Replica({gpu_component(29): 1.2}, 0.08, seed, topo=RAIL)
        ctx = _Context(8, RAIL_LAYOUT, rep.round, ProbeBudget(2 * 40), random.Random(seed), math.log(1.2), 0.01, 40)
        wallet = ErrorBudget(2 * a)  # the reverse test's level: 2a / 2 = a
        _, nic = claims.test_rail_nic(ctx, gpu, wallet, list(range(64)), "nic:node3/rail5")
        named += nic is not None
    # 6 of 300 with these seeds; binomial(300, 0.05): mean 15, the bound checked with 3 sd of room
    assert named <= trials * a + 3 * math.sqrt(trials * a * (1 - a))
