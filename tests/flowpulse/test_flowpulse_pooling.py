"""FlowPulse's learned references pooled over a leaf's symmetric ports (issue 18).

A leaf's ports from spines with identical live columns have equal shares under spraying whatever
the traffic (:func:`model.symmetric_spines`). Pooling their learned references makes each count
|G| times the packets, and a loss present from the first iteration stands out of its own pooled
reference. Expected values come from the analytic spraying model with random traffic, a
brute-force loop, and hand-worked counts.
"""

from __future__ import annotations

import numpy as np
import pytest

from faultsense_pipelines.flowpulse.detect import detect_switch_learned, pooled_shares
from faultsense_pipelines.flowpulse.model import spray_shares, symmetric_spines
from faultsense_pipelines.flowpulse.scan import ScanConfig, scan_ingress, symmetric_classes
from faultsense_pipelines.flowpulse.simulate import LossyLink, RingAllReduce, simulate, simulated_ingress
from faultsense_pipelines.flowpulse.topology import fat_tree

ISSUE_COLLECTIVE = RingAllReduce(channels=8, buffer_bytes=int(123_000 * 8 * 4096 * 128 / 254))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_spines_of_one_class_give_every_leaf_equal_shares_under_random_traffic(seed):
    rng = np.random.default_rng(seed)
    live = rng.random((6, 9)) > 0.15
    live[:, :3] = True  # three spines reach every leaf: one class at least
    labels = symmetric_spines(live)
    for _ in range(5):
        traffic = rng.random((6, 6)) * (1 - np.eye(6))
        leaf_in, _ = spray_shares(live, traffic)  # the analytic model, independent of the labels
        for s in range(9):
            for t in range(9):
                if labels[s] == labels[t]:
                    assert np.allclose(leaf_in[:, s], leaf_in[:, t], rtol=1e-12, atol=1e-15)
                else:  # different live columns: some leaf tells them apart (a live vs a down link at least)
                    assert not np.array_equal(live[:, s], live[:, t])


def test_pooled_shares_match_a_brute_force_loop():
    rng = np.random.default_rng(7)
    x = rng.integers(0, 1000, size=(12, 6)).astype(float)
    x[:, 5] = 0  # a silent port: pools with nothing
    groups = np.array([0, 0, 1, 1, 1, 1])
    starts = np.minimum(rng.integers(0, 13, size=(12, 6)), np.arange(12)[:, None])
    shares, ref = pooled_shares(x, starts, groups)
    for t in range(12):
        for j in range(6):
            k = starts[t, j]
            mates = [j] if x[:, j].sum() == 0 else [i for i in range(6) if groups[i] == groups[j] and x[:, i].sum() > 0]
            total = x[:k].sum()
            want = x[:k, mates].sum() / (len(mates) * total) if total > 0 else 0.0
            assert shares[t, j] == pytest.approx(want, rel=1e-12, abs=1e-15)
            assert ref[t, j] == pytest.approx(len(mates) * total)


def test_a_loss_from_row_zero_is_found_only_pooled_hand_worked():
    # 4 equal ports, 1e6 packets a row; port 3 loses 2% from row 0 (share 0.25 * 0.98 / 0.995):
    # per port the reference is the lossy past itself; pooled it is exactly 1/4. Flagged at row 2
    # (min_reference rows first), dated 0, loss 1 - 246232 / 251256 = 0.019996 (the other ports'
    # ratio is the common scale).
    x = np.tile([[251_256, 251_256, 251_256, 246_232]], (30, 1))
    assert detect_switch_learned(x) == []
    (alarm,) = detect_switch_learned(x, groups=np.zeros(4))
    assert (alarm.port, alarm.start, alarm.alarm) == (3, 0, 2)
    assert alarm.loss_estimate == pytest.approx(1 - 246_232 / 251_256, rel=1e-9)


def test_pooled_references_keep_healthy_multinomial_ports_quiet_and_catch_a_small_loss():
    # 16 equal ports at 130,560 packets each; a 0.25% loss shifts a port by 0.93 standard
    # deviations a row. Alone its 0.25% CUSUM needs 8 h / delta^2 = 224 reference rows; pooled
    # over 16 ports, 14.
    rng = np.random.default_rng(2026)
    n, ports, rows = 130_560 * 16, 16, 220
    healthy = rng.multinomial(n, np.full(ports, 1 / ports), size=rows)
    assert detect_switch_learned(healthy, groups=np.zeros(ports)) == []
    lossy = np.full(ports, 1.0)
    lossy[5] = 1 - 0.0025
    x = np.vstack([rng.multinomial(n, np.full(ports, 1 / ports), size=100), rng.multinomial(n, lossy / lossy.sum(), size=120)])
    alarms = detect_switch_learned(x, groups=np.zeros(ports))
    assert [a.port for a in alarms] == [5]
    assert abs(alarms[0].start - 100) <= 10 and alarms[0].alarm < 220


def test_a_class_that_does_not_fit_equal_shares_is_split():
    x = np.array([[1000, 1000, 1000, 1200], [1000, 1010, 990, 1200]] * 5)
    assert symmetric_classes(x, np.zeros(4, dtype=int)).tolist() == [1, 2, 3, 4]
    assert symmetric_classes(x, np.array([0, 0, 0, 1])).tolist() == [0, 0, 0, 1]
    # one low port (a loss) is allowed: the class stays
    low = np.array([[1000, 1000, 1000, 900]] * 10)
    assert symmetric_classes(low, np.zeros(4, dtype=int)).tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_spine_to_leaf_loss_from_iteration_zero_is_found_with_learned_references(seed):
    # 16 leaves x 8 spines, (2, 3) marked down, cross-check off: every switch learns. Before
    # pooling a loss present from iteration 0 was "normal" to its own port and never found.
    topo = fat_tree(16, 8, 8, down=((2, 3),))
    counters = simulate(topo, 60, collective=ISSUE_COLLECTIVE, seed=seed, lossy=[LossyLink(5, 1, 0.01, "down", 0)])
    ingress = simulated_ingress(counters)
    assert scan_ingress(ingress, topo, ScanConfig(cross_check=False, pool=False)) == []
    (fault,) = scan_ingress(ingress, topo, ScanConfig(cross_check=False))
    assert (fault.switch, fault.peer, fault.first_iteration) == ("leaf05", "spine01", 0)
    assert fault.loss_estimate == pytest.approx(0.01, rel=0.2)


def test_an_echo_at_a_pooled_leaf_is_traced_to_the_spine_port_upstream():
    # 1% leaf05 -> spine01 from iteration 30: leaf06 (its ring successor) sees the echo; the
    # spine's per-port references are slower, so the scan asks the spine's counters after the fact.
    topo = fat_tree(16, 8, 8, down=((2, 3),))
    counters = simulate(topo, 90, collective=ISSUE_COLLECTIVE, seed=11, lossy=[LossyLink(5, 1, 0.01, "up", 30)])
    faults = scan_ingress(simulated_ingress(counters), topo, ScanConfig(cross_check=False))
    assert [(f.switch, f.peer) for f in faults] == [("spine01", "leaf05")]
    assert abs(faults[0].first_iteration - 30) <= 1
    assert faults[0].loss_estimate == pytest.approx(0.01, rel=0.2)


@pytest.mark.parametrize(("down", "seed"), [(((2, 3),), 11), ((), 12)])
def test_a_leaf_to_spine_loss_from_iteration_zero_is_named_at_its_own_link_learned_only(down, seed):
    # 1% leaf05 -> spine01 from iteration 0, the cross-check off: the spine's per-port references
    # learn the loss as normal and leaf06's pooled port from spine01 flags the echo, with no row
    # before the onset to trace it upstream in time. The same leaf's counts at spine01's symmetric
    # spines (the spines' class: every spine but spine03 with the down link) place it.
    topo = fat_tree(16, 8, 8, down=down)
    counters = simulate(topo, 60, collective=ISSUE_COLLECTIVE, seed=seed, lossy=[LossyLink(5, 1, 0.01, "up", 0)])
    faults = scan_ingress(simulated_ingress(counters), topo, ScanConfig(cross_check=False))
    assert [(f.switch, f.port, f.peer, f.first_iteration) for f in faults] == [("spine01", "down05", "leaf05", 0)]
    assert faults[0].loss_estimate == pytest.approx(0.01, rel=0.2)


def test_a_spine_to_leaf_loss_from_iteration_zero_is_not_moved_upstream():
    # the same leaf06's port from spine01, but the loss is on spine01 -> leaf06 itself: no leaf's
    # count at spine01 falls short of the other spines', so the leaf's alarm stands
    topo = fat_tree(16, 8, 8)
    counters = simulate(topo, 60, collective=ISSUE_COLLECTIVE, seed=13, lossy=[LossyLink(6, 1, 0.01, "down", 0)])
    faults = scan_ingress(simulated_ingress(counters), topo, ScanConfig(cross_check=False))
    assert [(f.switch, f.peer, f.first_iteration) for f in faults] == [("leaf06", "spine01", 0)]
