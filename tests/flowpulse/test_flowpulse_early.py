"""FlowPulse on losses that start inside the first reference window, and on unmarked down links.

Issue 18's targets: a step loss starting at iteration 0-19 is dated within 1 iteration of its
start, with its loss estimated within 20%; a healthy fabric with a down link the topology does
not mark raises nothing. Counters are simulated (multinomial spraying, re-sprayed losses) on the
issue's fabric, 16 leaves x 8 spines x 8 hosts, 8 rings, ~123k packets per link per iteration.
At that volume a 2% loss shifts the judged port's count by ~7 standard deviations an iteration
and 1% by ~3.5, where the maximum-likelihood change point with every parameter known is within
1 iteration in > 99% of runs (`bench.bench_flowpulse.oracle_onset_errors`, 5,000 Gaussian runs),
so "within 1" is the statistical limit here, not luck; below ~2 sigmas it is not reachable in
every run by any estimator (bench/results/flowpulse.md, column `oracle_onset_within_1`).
"""

from __future__ import annotations

import pytest

from faultsense_pipelines.flowpulse.counters import validate_counters
from faultsense_pipelines.flowpulse.scan import ScanConfig, scan
from faultsense_pipelines.flowpulse.simulate import LossyLink, RingAllReduce, counters_frame, simulate
from faultsense_pipelines.flowpulse.topology import fat_tree

ISSUE_COLLECTIVE = RingAllReduce(channels=8, buffer_bytes=int(123_000 * 8 * 4096 * 128 / 254))


def _scan(actual, claimed, iterations, lossy=(), seed=0, switches=None, config=ScanConfig()):
    counters = simulate(actual, iterations, collective=ISSUE_COLLECTIVE, lossy=lossy, seed=seed)
    return scan(validate_counters(counters_frame(counters, switches)), claimed, config)


@pytest.mark.parametrize(
    ("start", "rate", "direction", "seed"),
    [
        (0, 0.02, "down", 101),
        (0, 0.01, "up", 102),
        (3, 0.02, "up", 103),
        (7, 0.01, "down", 104),
        (12, 0.02, "down", 105),
        (19, 0.01, "up", 106),
        (19, 0.02, "down", 107),
    ],
)
def test_a_step_loss_starting_at_iteration_0_to_19_is_dated_within_1_and_not_absorbed(start, rate, direction, seed):
    """Every switch reporting, default (learned) model: the analytic cross-check holds, an exact reference."""
    topo = fat_tree(16, 8, 8)
    leaf, spine = seed % 16, seed % 8
    faults = _scan(topo, topo, 50, [LossyLink(leaf, spine, rate, direction, start)], seed=seed)
    (fault,) = faults
    receiver, sender = (f"leaf{leaf:02d}", f"spine{spine:02d}")[:: 1 if direction == "down" else -1]
    assert (fault.switch, fault.peer) == (receiver, sender)
    assert abs(fault.first_iteration - start) <= 1
    assert fault.loss_estimate == pytest.approx(rate, rel=0.2)


@pytest.mark.parametrize(("start", "seed"), [(0, 201), (3, 202), (12, 203)])
def test_with_a_marked_down_link_the_ring_shares_date_a_loss_from_iteration_0(start, seed):
    """A marked down link makes the analytic shares traffic-dependent; the counts single out the ring's.

    Under ring all-reduce with leaf00-spine03 down, the uniform shares of a leaf are ~1/16 off at
    spine03's port (~7 standard deviations an iteration) and fail the cross-check at once, the
    ring's fit: an exact reference, so a loss from iteration 0 is found and dated too.
    """
    topo = fat_tree(16, 8, 8, down=[(0, 3)])
    leaf, spine = 5 + seed % 3, 4 + seed % 3
    faults = _scan(topo, topo, 50, [LossyLink(leaf, spine, 0.02, "down", start)], seed=seed)
    (fault,) = faults
    assert (fault.switch, fault.peer) == (f"leaf{leaf:02d}", f"spine{spine:02d}")
    assert abs(fault.first_iteration - start) <= 1
    assert fault.loss_estimate == pytest.approx(0.02, rel=0.2)


@pytest.mark.parametrize(("start", "seed"), [(6, 204), (8, 205), (15, 206)])
def test_with_a_marked_down_link_the_learned_path_dates_an_early_loss_within_1(start, seed):
    """The same with the cross-check off: the leaf judging the loss learns its shares from its past.

    The learned reference needs rows before the loss: its 2% CUSUM (6.6 standard deviations a row
    at ~123k packets and 8 spines) may run once the reference load 2 h / (k delta^2) is <= 1/4,
    h = ln(4e10) = 24.4, i.e. k >= 8 h / delta^2 = 4.5 rows; so the starts here are 6-15.
    """
    topo = fat_tree(16, 8, 8, down=[(0, 3)])
    leaf, spine = 5 + seed % 3, 4 + seed % 3
    config = ScanConfig(cross_check=False)
    faults = _scan(topo, topo, 50, [LossyLink(leaf, spine, 0.02, "down", start)], seed=seed, config=config)
    (fault,) = faults
    assert (fault.switch, fault.peer) == (f"leaf{leaf:02d}", f"spine{spine:02d}")
    assert abs(fault.first_iteration - start) <= 1
    assert fault.loss_estimate == pytest.approx(0.02, rel=0.2)


@pytest.mark.parametrize("seed", [301, 302])
def test_a_healthy_fabric_with_unmarked_down_links_raises_nothing(seed):
    """Two down links the topology calls up, 200 healthy iterations, every switch reporting."""
    actual = fat_tree(16, 8, 8, down=[(2, 1), (9, 6)])
    assert _scan(actual, fat_tree(16, 8, 8), 200, seed=seed) == []
