"""The production-like latency model: each effect against a hand-worked value or its definition."""

from __future__ import annotations

import math

import numpy as np
import pytest

from faultsense_pipelines.replica.faults import GpuFault, LinkFault
from faultsense_pipelines.replica.topology import ReplicaTopology
from faultsense_pipelines.sim.latency import DUTY_RUN, STALL_MIN, LatencyModel, NoiseModel
from faultsense_pipelines.sim.scenario import parse_scenario
from faultsense_pipelines.sim.simulator import SimulatedReplica

SLOW_GPU = ((2,), True, 2.0, 1.0)


def _series(model: LatencyModel, probe: tuple[int, ...], n: int) -> np.ndarray:
    return np.array([model.measure(probe, 1)[0] for _ in range(n)])


@pytest.mark.parametrize("sigma", [0.0, 0.03, 0.2])
def test_with_only_sigma_set_it_is_the_paper_model_draw_for_draw(sigma: float) -> None:
    faults = [GpuFault(5, 1.7), LinkFault((1, 3), 1.4)]
    paper = SimulatedReplica(8, faults, noise_sigma=sigma, seed=11)
    model = LatencyModel(NoiseModel(sigma=sigma), [((5,), True, 1.7, 1.0), ((1, 3), False, 1.4, 1.0)], seed=11)
    for probe, repeats in [((0, 1, 2, 3), 3), ((4, 5, 6, 7), 2), ((1, 3, 4, 6), 1), ((0, 2, 4, 6), 4)]:
        assert model.measure(probe, repeats) == paper.run(probe, repeats).latencies_ms


def test_spillover_lifts_probes_without_the_slow_gpu_by_its_share_of_the_extra_time() -> None:
    model = LatencyModel(NoiseModel(spillover=0.3), [SLOW_GPU], base_ms=10.0)
    assert model.measure((0, 1), 1) == pytest.approx((13.0,))  # 10 x (1 + 0.3 x (2 - 1))
    assert model.measure((1, 2), 1) == pytest.approx((20.0,))
    # a slow link never spills over: its transfers happen only in probes holding both ends
    link = LatencyModel(NoiseModel(spillover=0.3), [((0, 1), False, 2.0, 1.0)], base_ms=10.0)
    assert link.measure((2, 3), 1) == pytest.approx((10.0,))
    assert link.measure((0, 1, 2), 1) == pytest.approx((20.0,))


def test_an_intermittent_fault_is_on_for_its_duty_share_in_runs_of_the_stated_mean_length() -> None:
    model = LatencyModel(NoiseModel(), [((2,), True, 2.0, 0.6)], seed=4, base_ms=10.0)
    on = _series(model, (1, 2), 60_000) > 15.0
    assert on.mean() == pytest.approx(0.6, abs=0.03)
    starts = np.flatnonzero(np.diff(on.astype(int)) == 1)
    runs = [np.argmin(on[s + 1 :]) for s in starts[:-1] if not on[s + 1 :].all()]
    assert np.mean(runs) == pytest.approx(DUTY_RUN, rel=0.1)


def test_stalls_hit_their_share_of_measurements_with_factors_in_the_stated_range() -> None:
    model = LatencyModel(NoiseModel(stall_rate=0.02, stall_max=4.0), seed=1, base_ms=10.0)
    x = _series(model, (0, 1), 50_000) / 10.0
    stalled = x[x > 1.0]
    assert len(stalled) / len(x) == pytest.approx(0.02, rel=0.1)
    assert stalled.min() >= STALL_MIN and stalled.max() <= 4.0
    assert np.all(x[x <= 1.0] == 1.0)


def test_a_burst_lifts_every_probe_alike_for_its_length() -> None:
    model = LatencyModel(NoiseModel(burst_rate=0.01, burst_height=0.3, burst_length=15), seed=2, base_ms=10.0)
    probes = [(0, 1), (2, 3), (4, 5)]
    x = np.array([model.measure(probes[i % 3], 1)[0] for i in range(30_000)]) / 10.0
    assert set(np.round(x, 12)) == {1.0, 1.3}
    burst = x > 1.0
    starts = np.flatnonzero(np.diff(burst.astype(int)) == 1) + 1
    # every burst lasts 15 measurements (back-to-back bursts can merge: at least 15)
    lengths = [int(np.argmin(burst[s:])) for s in starts[:-1]]
    assert min(lengths) >= 15 and np.median(lengths) == 15
    # renewal: a burst of 15 starts w.p. 0.01 after each quiet measurement
    assert burst.mean() == pytest.approx(15 * 0.01 / (1 + 15 * 0.01), rel=0.15)


def test_drift_is_a_shared_sine_of_the_stated_amplitude_and_period() -> None:
    model = LatencyModel(NoiseModel(drift=0.15, drift_period=400), seed=3, base_ms=10.0)
    x = _series(model, (0, 1), 800) / 10.0
    assert x.max() == pytest.approx(1.15, abs=1e-3) and x.min() == pytest.approx(0.85, abs=1e-3)
    assert np.allclose(x[:400], x[400:])


def test_student_t_noise_has_heavier_tails_than_lognormal_at_the_same_sigma() -> None:
    gauss = np.log(_series(LatencyModel(NoiseModel(sigma=0.03), seed=5), (0, 1), 40_000) / 20.0)
    heavy = np.log(_series(LatencyModel(NoiseModel(sigma=0.03, tail_df=3), seed=5), (0, 1), 40_000) / 20.0)
    assert np.std(gauss) == pytest.approx(0.03, rel=0.03)
    # beyond 4 sigma: ~6e-5 of Gaussian draws, ~2.8% of t(3) draws
    assert np.mean(np.abs(gauss) > 0.12) < 0.001
    assert np.mean(np.abs(heavy) > 0.12) == pytest.approx(0.028, rel=0.2)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("sigma", -0.1),
        ("sigma", math.nan),
        ("tail_df", 2.0),
        ("stall_rate", 1.0),
        ("stall_max", 1.2),
        ("drift", 1.0),
        ("drift_period", 1),
        ("burst_rate", -0.01),
        ("burst_height", -1.0),
        ("burst_length", 0),
        ("spillover", 1.5),
        ("node_gap", -0.01),
        ("node_gap", 1.5),
        ("burst_length", 2.5),
    ],
)
def test_each_field_out_of_range_is_refused_by_name(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=rf"^noise\.{field} must be"):
        NoiseModel(**{field: value})


def test_a_bad_fault_is_refused() -> None:
    with pytest.raises(ValueError, match="duty must be in"):
        LatencyModel(NoiseModel(), [((1,), True, 2.0, 0.0)])
    with pytest.raises(ValueError, match="slowdown must be"):
        LatencyModel(NoiseModel(), [((1,), True, 0.5, 1.0)])


def test_a_probe_spanning_more_nodes_is_slower_by_the_node_gap_per_extra_node() -> None:
    # 4 nodes of 4 GPUs: node of GPU g is g // 4; 10 ms x 1.05 ** (nodes spanned - 1)
    model = LatencyModel(NoiseModel(node_gap=0.05), [SLOW_GPU], base_ms=10.0, topology=ReplicaTopology(16, 4))
    assert model.measure((0, 1, 3), 1) == pytest.approx((10.0,))  # one node
    assert model.measure((0, 4), 1) == pytest.approx((10.5,))  # two nodes
    assert model.measure((0, 5, 9, 13), 1) == pytest.approx((10.0 * 1.05**3,))  # four nodes
    assert model.measure((2, 4), 1) == pytest.approx((10.0 * 2.0 * 1.05,))  # slow GPU 2, two nodes
    assert not NoiseModel(node_gap=0.05).iid


def test_a_node_gap_without_nodes_is_refused() -> None:
    with pytest.raises(ValueError, match="node_gap needs the replica's topology"):
        LatencyModel(NoiseModel(node_gap=0.05), [], topology=ReplicaTopology(16))
    with pytest.raises(ValueError, match=r"^noise\.node_gap needs a topology"):
        parse_scenario({"gpus": 16, "probe_size": 4, "faults": [], "noise": {"sigma": 0.01, "node_gap": 0.05}})
    sc = parse_scenario(
        {"gpus": 16, "probe_size": 4, "faults": [], "noise": {"sigma": 0.0, "node_gap": 0.05}, "topology": {"gpus_per_node": 4}}
    )
    assert sc.replica().run([0, 4]).latencies_ms == pytest.approx((20.0 * 1.05,))
