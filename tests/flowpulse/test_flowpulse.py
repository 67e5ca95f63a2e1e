"""FlowPulse detection on simulated sprayed fat trees: the issue's acceptance cases."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from faultsense_pipelines.flowpulse.counters import validate_counters
from faultsense_pipelines.flowpulse.model import loss_from_shares, share_under_loss, spray_shares
from faultsense_pipelines.flowpulse.scan import ScanConfig, scan
from faultsense_pipelines.flowpulse.simulate import LossyLink, RingAllReduce, counters_frame, ring_traffic, simulate
from faultsense_pipelines.flowpulse.topology import fat_tree

# 4 leaves x 8 spines x 8 hosts, a 4 GiB all-reduce per iteration: ~250k packets per uplink.
COLLECTIVE = RingAllReduce(channels=8, buffer_bytes=4 * 2**30)
START = 30


def _frame(topo, iterations=70, lossy=(), seed=0, switches=None, collective=COLLECTIVE):
    counters = simulate(topo, iterations, collective=collective, lossy=lossy, seed=seed)
    return validate_counters(counters_frame(counters, switches)), counters


def _links(faults):
    return {frozenset((f.switch, f.peer)) for f in faults}


def test_one_percent_drop_on_one_leaf_spine_link_is_found_and_no_other_link():
    topo = fat_tree(4, 8, 8)
    frame, _ = _frame(topo, lossy=[LossyLink(1, 2, 0.01, "both", START)], seed=1)
    faults = scan(frame, topo)
    assert _links(faults) == {frozenset(("leaf01", "spine02"))}
    # both receiving ends saw it: the leaf (spine->leaf direction) and the spine (leaf->spine)
    assert {(f.switch, f.port) for f in faults} == {("leaf01", "up02"), ("spine02", "down01")}
    for f in faults:
        assert START <= f.first_iteration <= START + 1
        assert f.loss_estimate == pytest.approx(0.01, rel=0.2)


def test_down_link_with_traffic_respread_over_other_spines_raises_no_alarm_anywhere():
    topo = fat_tree(4, 8, 8, down=[(1, 3), (2, 6)])
    frame, counters = _frame(topo, iterations=120, seed=2)
    # the down links carry nothing; the leaf's other uplinks carry more than a healthy leaf's
    assert counters.up_tx[:, 1, 3].sum() == 0 and counters.down_rx[:, 2, 6].sum() == 0
    assert counters.up_tx[:, 1, 0].mean() > 1.1 * counters.up_tx[:, 0, 0].mean()
    assert scan(frame, topo) == []


def test_detection_works_from_leaf_counters_alone():
    topo = fat_tree(4, 8, 8)
    frame, _ = _frame(topo, lossy=[LossyLink(2, 5, 0.01, "down", START)], seed=3, switches=topo.leaves)
    assert set(frame["switch"]) == set(topo.leaves)
    faults = scan(frame, topo)
    assert [(f.switch, f.port, f.peer) for f in faults] == [("leaf02", "up05", "spine05")]
    assert faults[0].first_iteration == pytest.approx(START, abs=1)


def test_uplink_loss_echo_at_the_next_leaf_is_dropped_when_the_spine_reports():
    topo = fat_tree(4, 8, 8)
    lossy = [LossyLink(1, 2, 0.02, "up", START)]
    frame, _ = _frame(topo, lossy=lossy, seed=4)
    assert [(f.switch, f.port, f.peer_observed) for f in scan(frame, topo)] == [("spine02", "down01", True)]
    # from leaf counters alone the deficit shows at the ring successor's port from that spine,
    # and nothing can tell that echo from a loss on spine02 -> leaf02: a suspect, not confirmed
    leaves_only, _ = _frame(topo, lossy=lossy, seed=4, switches=topo.leaves)
    assert [(f.switch, f.peer, f.peer_observed) for f in scan(leaves_only, topo)] == [("leaf02", "spine02", False)]


def test_analytic_model_finds_a_loss_present_from_the_first_iteration():
    topo = fat_tree(4, 8, 8)
    frame, _ = _frame(topo, iterations=30, lossy=[LossyLink(0, 7, 0.01, "down", 0)], seed=5)
    faults = scan(frame, topo, ScanConfig(model="analytic"))
    assert [(f.switch, f.port, f.first_iteration) for f in faults] == [("leaf00", "up07", 0)]
    # the learned (default) model cross-checks the analytic shares, which hold here whatever the
    # traffic (no down link: every leaf gets 1/8 from each spine), so it finds the loss from 0 too
    learned = scan(frame, topo, ScanConfig(model="learned"))
    assert [(f.switch, f.port, f.first_iteration) for f in learned] == [("leaf00", "up07", 0)]
    assert learned[0].loss_estimate == pytest.approx(0.01, rel=0.2)


def test_analytic_ring_model_takes_down_links_elsewhere_into_account():
    topo = fat_tree(4, 8, 8, down=[(1, 3)])
    frame, _ = _frame(topo, iterations=40, lossy=[LossyLink(3, 5, 0.01, "down", 0)], seed=13)
    ring = scan(frame, topo, ScanConfig(model="analytic", traffic="ring"))
    assert [(f.switch, f.port, f.first_iteration) for f in ring] == [("leaf03", "up05", 0)]
    # assuming uniform traffic, spine 3 expects packets from leaf 0, but leaf 0 only sends to
    # leaf 1, which has no link to spine 3: that port never carries a packet and is not judged
    # (it used to be a false alarm with loss 100%); the other spines still get more from leaves 0
    # and 1 than uniform traffic says, so the others look short: wrong-model false alarms
    # (share models alone: with both ends of every link reporting, the links are judged by their
    # own tx and rx, which no traffic model enters, so the wrong model is never asked)
    uniform = scan(frame, topo, ScanConfig(model="analytic", traffic="uniform", pairs=False))
    assert ("spine03", "down00") not in {(f.switch, f.port) for f in uniform}
    assert any(f.switch.startswith("spine") for f in uniform)
    both_ends = scan(frame, topo, ScanConfig(model="analytic", traffic="uniform"))
    assert [(f.switch, f.port, f.first_iteration) for f in both_ends] == [("leaf03", "up05", 0)]
    # the default model uses the analytic shares only where they do not depend on the traffic
    # and the counts agree, so the wrong assumption costs it nothing
    assert all(f.switch == "leaf03" for f in scan(frame, topo, ScanConfig(traffic="uniform")))


@pytest.mark.parametrize("rate", [0.005, 0.02, 0.05])
def test_loss_estimate_is_close_to_the_injected_rate(rate):
    topo = fat_tree(4, 8, 8)
    big = RingAllReduce(channels=8, buffer_bytes=16 * 2**30)  # ~1M packets per uplink per iteration
    frame, _ = _frame(topo, iterations=90, lossy=[LossyLink(3, 1, rate, "down", START)], seed=6, collective=big)
    (fault,) = scan(frame, topo)
    assert (fault.switch, fault.peer) == ("leaf03", "spine01")
    assert fault.loss_estimate == pytest.approx(rate, rel=0.15)


@pytest.mark.parametrize("seed", [10, 11, 12])
def test_healthy_runs_raise_no_alarm_with_either_model(seed):
    topo = fat_tree(4, 8, 8)
    frame, _ = _frame(topo, iterations=200, seed=seed)
    assert scan(frame, topo) == []
    assert scan(frame, topo, ScanConfig(model="analytic")) == []


def test_analytic_shares_match_the_simulated_shares_with_down_links():
    topo = fat_tree(4, 6, 2, down=[(0, 1), (1, 4), (3, 4)])
    counters = simulate(topo, 200, collective=COLLECTIVE, seed=7)
    traffic, _ = ring_traffic(4, 2, COLLECTIVE)
    leaf_in, spine_in = spray_shares(topo.live_matrix(), traffic)
    rx = counters.down_rx.sum(axis=0)
    np.testing.assert_allclose(rx / rx.sum(axis=1, keepdims=True), leaf_in, atol=2e-4)
    at_spine = counters.up_rx.sum(axis=0).T
    observed = at_spine / np.maximum(at_spine.sum(axis=1, keepdims=True), 1)
    np.testing.assert_allclose(observed, spine_in, atol=2e-4)
    # hand-worked: leaf 1 receives from leaf 0 only; spines 1 (down at leaf 0) and 4 (down at
    # leaf 1) carry none of it, so leaf 1 gets a quarter from each of spines 0, 2, 3, 5
    np.testing.assert_allclose(leaf_in[1], [0.25, 0, 0.25, 0.25, 0, 0.25])


def test_simulated_share_of_a_lossy_port_follows_the_resprayed_loss_formula():
    topo = fat_tree(2, 4, 1)
    counters = simulate(topo, 200, collective=COLLECTIVE, lossy=[LossyLink(1, 0, 0.05, "down")], seed=8)
    rx = counters.down_rx[:, 1, :].sum(axis=0)
    assert rx[0] / rx.sum() == pytest.approx(share_under_loss(0.25, 0.05), abs=3e-4)
    # every packet is delivered in the end: what leaf 1 received equals what leaf 0 meant to send
    traffic, _ = ring_traffic(2, 1, COLLECTIVE)
    assert (counters.down_rx[:, 1, :].sum(axis=1) == traffic[0, 1]).all()


@given(st.floats(0.01, 0.99), st.floats(0.0, 0.5))
def test_loss_from_shares_inverts_share_under_loss(share, loss):
    assert float(loss_from_shares(share, share_under_loss(share, loss))) == pytest.approx(loss, abs=1e-9)


def test_same_seed_gives_the_same_counters():
    topo = fat_tree(2, 4, 2)
    a = simulate(topo, 5, collective=COLLECTIVE, seed=9)
    b = simulate(topo, 5, collective=COLLECTIVE, seed=9)
    assert (a.down_rx == b.down_rx).all() and (a.up_tx == b.up_tx).all()


def test_simulated_ingress_equals_the_ingress_cut_from_the_counters_frame():
    from faultsense_pipelines.flowpulse.counters import ingress_packets
    from faultsense_pipelines.flowpulse.simulate import simulated_ingress

    topo = fat_tree(3, 4, 2, down=[(0, 1)])
    counters = simulate(topo, 4, collective=COLLECTIVE, seed=1)
    direct = simulated_ingress(counters)
    cut = ingress_packets(validate_counters(counters_frame(counters)), topo)
    assert [d.switch for d in direct] == [c.switch for c in cut]
    for d, c in zip(direct, cut, strict=True):
        assert d.ports == c.ports and d.peers == c.peers and (d.up == c.up).all()
        assert (d.packets == c.packets).all()


@given(st.lists(st.integers(0, 2000), min_size=3, max_size=30), st.floats(0.001, 0.2))
def test_vectorized_cusum_equals_the_recursive_definition_over_binomial_log_likelihood_ratios(counts, design_loss):
    from faultsense_pipelines.flowpulse.detect import binomial_llr, cusum_statistic

    x = np.array(counts)
    n = x + 1000  # port 0 varies, port 1 sends 1000; shares 1/2 each
    stat = cusum_statistic(binomial_llr(x, n, 0.5, share_under_loss(0.5, design_loss))[:, None])[:, 0]
    p1 = 0.5 * (1 - design_loss) / (1 - 0.5 * design_loss)
    s = 0.0
    for t, (a, m) in enumerate(zip(x, n, strict=True)):
        llr = a * np.log(p1 / 0.5) + (m - a) * np.log((1 - p1) / 0.5)  # Binomial(m, p1) vs Binomial(m, 1/2)
        s = max(0.0, s + llr)
        assert stat[t] == pytest.approx(s, abs=1e-6)


@given(st.lists(st.floats(0.0, 10.0), min_size=1, max_size=40), st.floats(0.5, 9.5))
def test_first_alarm_and_start_match_a_scan_of_the_statistic(values, threshold):
    from faultsense_pipelines.flowpulse.detect import first_alarms

    stat = np.array(values)[:, None]
    alarm, start = first_alarms(stat, threshold)
    hits = [t for t, v in enumerate(values) if v >= threshold]
    if not hits:
        assert (alarm[0], start[0]) == (-1, -1)
        return
    zeros = [t for t in range(hits[0]) if values[t] <= 0]
    assert (alarm[0], start[0]) == (hits[0], (zeros[-1] + 1) if zeros else 0)


def test_a_spine_alarm_explains_only_overlapping_not_weaker_echoes_on_other_links():
    from faultsense_pipelines.flowpulse.scan import LinkFault, drop_echoes

    upstream = LinkFault("spine09", "down05", "leaf05", 200, 210, 0.004)
    echo = LinkFault("leaf06", "up09", "spine09", 230, 240, 0.005)  # spans miss by 20 < 50
    later = LinkFault("leaf07", "up09", "spine09", 900, 905, 0.004)  # a separate loss, much later
    strong = LinkFault("leaf08", "up09", "spine09", 205, 207, 0.05)  # 10x the spine's loss
    reverse = LinkFault("leaf05", "up09", "spine09", 200, 209, 0.004)  # the same link's other direction
    kept = drop_echoes([upstream, echo, later, strong, reverse], {"spine09", "leaf05", "leaf06", "leaf07", "leaf08"})
    assert kept == [upstream, later, strong, reverse]
    # without the spine's counters nothing is explained
    assert drop_echoes([echo], {"leaf06"}) == [echo]


# The issue's fabric: 16 leaves x 8 spines x 8 hosts, 8 rings, ~123k packets per link per iteration.
ISSUE_COLLECTIVE = RingAllReduce(channels=8, buffer_bytes=int(123_000 * 8 * 4096 * 128 / 254))


def test_a_loss_inside_the_first_twenty_iterations_is_dated_at_its_start_and_not_halved():
    """Leaf counters only, 1% spine->leaf from iteration 10 (was: first 21, loss 0.0056)."""
    topo = fat_tree(16, 8, 8)
    frame, _ = _frame(topo, 60, [LossyLink(3, 5, 0.01, "down", 10)], seed=5, switches=topo.leaves, collective=ISSUE_COLLECTIVE)
    (fault,) = scan(frame, topo)
    assert (fault.switch, fault.peer) == ("leaf03", "spine05")
    assert abs(fault.first_iteration - 10) <= 1
    assert fault.loss_estimate == pytest.approx(0.01, rel=0.2)


def test_half_percent_from_iteration_twenty_is_found_within_sixty_iterations():
    """0.5% from iteration 20 at ~123k packets (was: not found; the oracle needs ~17)."""
    topo = fat_tree(16, 8, 8)
    frame, _ = _frame(topo, 60, [LossyLink(6, 2, 0.005, "down", 20)], seed=8, collective=ISSUE_COLLECTIVE)
    (fault,) = scan(frame, topo)
    assert (fault.switch, fault.peer) == ("leaf06", "spine02")
    # at 1.8 standard deviations an iteration even the likelihood-ratio change point is within 1
    # iteration in only ~79% of runs (2,000 Gaussian runs, bench/results/flowpulse.md); 90% within 3
    assert abs(fault.first_iteration - 20) <= 5 and fault.detected_iteration - 20 < 17 * 1.5
    assert fault.loss_estimate == pytest.approx(0.005, rel=0.2)


def test_with_down_links_the_learned_reference_finds_an_early_loss_without_absorbing_it():
    """Marked down links make the analytic shares traffic-dependent: the learned path judges, from row 2 on."""
    topo = fat_tree(4, 8, 8, down=[(0, 3)])
    big = RingAllReduce(channels=8, buffer_bytes=16 * 2**30)
    frame, _ = _frame(topo, 50, [LossyLink(2, 6, 0.01, "down", 8)], seed=9, collective=big)
    (fault,) = scan(frame, topo, ScanConfig(traffic="uniform"))
    assert (fault.switch, fault.peer) == ("leaf02", "spine06")
    assert abs(fault.first_iteration - 8) <= 1
    assert fault.loss_estimate == pytest.approx(0.01, rel=0.2)


def test_a_down_link_the_topology_does_not_mark_raises_no_alarm():
    actual = fat_tree(4, 8, 8, down=[(1, 3)])
    counters = simulate(actual, 150, collective=COLLECTIVE, seed=14)
    frame = validate_counters(counters_frame(counters))
    claimed = fat_tree(4, 8, 8)  # says every link is up
    # the port that never carried a packet is taken as down; the spines that now get more from
    # leaves 0 and 1 than the analytic shares say fail the cross-check and learn their shares
    assert scan(frame, claimed) == []
