"""FlowPulse's learned references at start-up, and the analytic cross-check with marked down links.

A CUSUM judged against shares learned from k rows carries the reference's error b ~ N(0, 1/k)
(standard deviations of a row) in every row of an excursion. Averaged over b, the false-alarm
rate grows by exp(a h), a = 2 h / (k delta^2); dividing the log-likelihood ratio by
c(a) = (1 - sqrt(1 - 4a)) / (2a) restores it (:func:`detect.reference_inflation`). These tests
check that against a Markov-chain evaluation of the CUSUM (Brook & Evans 1972) averaged over b
by Gauss-Hermite quadrature, and reproduce the benchmark trial where the old rule (run from
100 / delta^2 rows, divide by 1 + a) raised a false alarm.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from faultsense_pipelines.flowpulse.detect import reference_inflation, reference_load
from faultsense_pipelines.flowpulse.scan import ScanConfig, cross_checked_shares, scan_ingress
from faultsense_pipelines.flowpulse.simulate import LossyLink, RingAllReduce, simulate, simulated_ingress
from faultsense_pipelines.flowpulse.topology import fat_tree
from tests.flowpulse.brook_evans import cusum_arl

DOWN = ((3, 10), (17, 40))  # the benchmark's marked down links


def _rate_over_reference_error(delta: float, h: float, k: float, c: float, nodes: int = 30) -> float:
    """False alarms per row, averaged over a frozen reference error b ~ N(0, 1/k), LLR divided by c."""
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    return float(
        sum(wi / cusum_arl(delta * (xi / math.sqrt(k) - delta / 2) / c, delta / c, h) for xi, wi in zip(x, w, strict=True))
    )


def test_reference_inflation_is_the_smallest_factor_that_keeps_the_exponent():
    a = np.array([0.01, 0.1, 0.2, 0.25])
    c = reference_inflation(a)
    assert np.allclose(c - a * c**2, 1.0)  # the exponent c h - a c^2 h equals h
    assert reference_inflation(0.1875) == pytest.approx(4 / 3)  # 1 - 4a = 1/4: (1 - 1/2) / (3/8)
    assert np.isinf(reference_inflation(0.26)) and reference_inflation(0.0) == 1.0
    # a = 2 h (N/M) d / delta^2: 31 rows at 1.79 sigmas, h = 24.41; twice the dispersion, twice a
    assert float(reference_load(1.79, 1 / 31, 24.41)) == pytest.approx(2 * 24.41 / (1.79**2 * 31))
    assert float(reference_load(1.79, 1 / 31, 24.41, dispersion=2.0)) == pytest.approx(4 * 24.41 / (1.79**2 * 31))


@pytest.mark.scale  # a Markov-chain evaluation per inflation (seconds each)
@pytest.mark.parametrize("a", [0.1, 0.2, 0.25])
def test_divided_by_c_a_the_cusum_keeps_the_budget_of_an_exact_reference(a):
    # 0.25% at 522k packets on a spine port: delta = 1.8, h = 22 (the benchmark's thresholds)
    delta, h = 1.8, 22.0
    k = 2 * h / (delta**2 * a)
    exact = 1.0 / cusum_arl(-(delta**2) / 2, delta, h)
    assert _rate_over_reference_error(delta, h, k, float(reference_inflation(a))) <= exact
    # the old inflation 1 + a (the window rule) overspends: 1.5x, 4.8x, 11x at these loads
    assert _rate_over_reference_error(delta, h, k, 1 + a) > 1.4 * exact


@pytest.mark.scale  # replays a full benchmark trial of the 16 x 8 fabric
def test_the_benchmarks_start_up_false_alarm_is_gone():
    """Down-link case, 522k packets, 1% up, trial 5 of the recorded run (e933fe7): leaf24 -> spine09 from 100.

    The old rule flagged spine25's healthy port from leaf30 (change point 30, alarm 71, 0.09%):
    its 0.25% CUSUM started at row 31, when the pooled share of rows 0-30 stood 0.09% (3.9
    standard errors) above the port's share; frozen at that excursion, the reference kept the
    error and the statistic climbed. At 31 rows that CUSUM's reference load is a = 0.49 > 1/4.
    """
    topo = fat_tree(32, 64, 8, down=DOWN)
    collective = RingAllReduce(channels=8, buffer_bytes=64 * 2**30)
    counters = simulate(topo, 220, collective=collective, seed=1973628054, lossy=[LossyLink(24, 9, 0.01, "up", 100)])
    ingress = simulated_ingress(counters)
    (spine25,) = [ing for ing in ingress if ing.switch == "spine25"]
    x = spine25.packets.astype(float)
    healthy_share = x[:100, 30].sum() / x[:100].sum()
    early = x[:31, 30].sum() / x[:31].sum()
    assert (early - healthy_share) / math.sqrt(healthy_share / x[:31].sum()) > 3.5  # the case is reproduced
    for config in (ScanConfig(cross_check=False), ScanConfig()):  # the learned path, then the default
        assert scan_ingress([spine25], topo, config) == []
    (fault,) = scan_ingress(ingress, topo, ScanConfig(cross_check=False))
    assert (fault.switch, fault.peer, fault.first_iteration) == ("spine09", "leaf24", 100)
    assert fault.loss_estimate == pytest.approx(0.01, rel=0.2)


def test_with_marked_down_links_the_counts_single_out_the_ring_shares_at_every_switch():
    topo = fat_tree(32, 64, 8, down=DOWN)
    counters = simulate(topo, 30, collective=RingAllReduce(channels=8, buffer_bytes=16 * 2**30), seed=3)
    from faultsense_pipelines.flowpulse.model import leaf_ring, spray_shares

    live = topo.live_matrix()
    ring = spray_shares(live, leaf_ring(32))
    uniform = spray_shares(live)
    picked = 0
    for ing in simulated_ingress(counters):
        tier, idx = (0, topo.leaves.index(ing.switch)) if ing.switch in topo.leaves else (1, topo.spines.index(ing.switch))
        r, u = ring[tier][idx], uniform[tier][idx]
        carried = ing.packets.sum(axis=0) > 0
        r, u = r * carried / (r * carried).sum(), u * carried / (u * carried).sum()
        got = cross_checked_shares(np.where(carried, ing.packets, 0), [u, r])
        assert got is not None and np.allclose(got, r)
        picked += 1
    assert picked == 96
