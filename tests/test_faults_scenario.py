"""Fault and scenario parsing: every bad value is named."""

from __future__ import annotations

import math
import pickle

import pytest

from faultsense_pipelines.replica.faults import GpuFault, LinkFault, parse_fault, parse_faults
from faultsense_pipelines.replica.topology import ReplicaTopology
from faultsense_pipelines.sim.scenario import parse_scenario


def test_faults_parse_from_the_issue_example_and_pickle():
    faults = parse_faults([{"gpu": 9, "slowdown": 1.8}, {"link": [21, 3], "slowdown": 1.56}], 32)
    assert faults == (GpuFault(9, 1.8), LinkFault((3, 21), 1.56))
    assert pickle.loads(pickle.dumps(faults)) == faults


def test_the_fleet_file_and_a_scenario_parse_a_fault_into_the_same_object():
    from faultsense_pipelines.fleet.sections import LocalOptions, SimulatedOptions

    spec = {"link": [21, 3], "slowdown": 1.56}
    assert SimulatedOptions.model_validate({"faults": [spec]}).faults[0] == parse_fault(spec, 32) == LinkFault((3, 21), 1.56)
    assert LocalOptions.model_validate({"inject": [{"gpu": 2, "slowdown": 3.0}]}).inject == [GpuFault(2, 3.0)]


def test_a_link_fault_touches_a_probe_only_with_both_ends():
    f = LinkFault((3, 21), 1.5)
    assert f.touches({3, 21, 5}) and not f.touches({3, 5})


@pytest.mark.parametrize(
    "item, message",
    [
        ({"gpu": 32, "slowdown": 1.5}, r"faults\[0\].gpu: GPU id 32 is outside 0..31"),
        ({"gpu": -1, "slowdown": 1.5}, r"faults\[0\].gpu"),
        ({"gpu": 1.5, "slowdown": 1.5}, r"faults\[0\].gpu: Input should be a valid integer"),
        ({"gpu": True, "slowdown": 1.5}, r"faults\[0\].gpu: Input should be a valid integer, got True \(a boolean\)"),
        ({"gpu": 3, "slowdown": 0}, r"faults\[0\].slowdown: must be a finite number >= 1"),
        (
            {"gpu": 3, "slowdown": 0.5},
            r"faults\[0\].slowdown: must be a finite number >= 1 \(a gray failure slows down\), got 0.5",
        ),
        ({"link": [1, 2], "slowdown": 0.99}, r"faults\[0\].slowdown: must be a finite number >= 1"),
        ({"gpu": 3, "slowdown": -2}, r"slowdown"),
        ({"gpu": 3, "slowdown": math.nan}, r"slowdown"),
        ({"gpu": 3, "slowdown": math.inf}, r"slowdown"),
        ({"gpu": 3, "slowdown": "2"}, r"faults\[0\].slowdown: Input should be a valid number, got '2'"),
        ({"gpu": 3}, r"faults\[0\].slowdown: Field required"),
        ({"link": [5, 5], "slowdown": 1.5}, r"faults\[0\].link: a link joins two different GPUs, got \[5, 5\]"),
        ({"link": [5], "slowdown": 1.5}, r"faults\[0\].link"),
        ({"link": [5, 99], "slowdown": 1.5}, r"faults\[0\].link: GPU id 99 is outside 0..31"),
        ({"gpu": 1, "link": [2, 3], "slowdown": 1.5}, r"faults\[0\]: give exactly one of gpu, link, nic, nvswitch or switch"),
        ({"slowdown": 1.5}, r"faults\[0\]: give exactly one of gpu, link, nic, nvswitch or switch"),
        ({"gpu": 9, "nic": 1, "slowdown": 1.8}, r"faults\[0\]: give exactly one of gpu, link, nic, nvswitch or switch"),
        ({"link": [1, 2], "switch": 0, "slowdown": 1.8}, r"faults\[0\]: give exactly one of gpu, link, nic, nvswitch or switch"),
        ({"gpu": 1, "slowdown": 1.5, "extra": 1}, r"faults\[0\].extra: Extra inputs are not permitted"),
        ([1, 2], r"faults\[0\]: give exactly one of gpu, link, nic, nvswitch or switch, got \[1, 2\]"),
    ],
)
def test_a_bad_fault_names_the_field(item, message):
    with pytest.raises(ValueError, match=message):
        parse_fault(item, 32)


def test_duplicate_faults_are_rejected():
    with pytest.raises(ValueError, match=r"faults\[1\] repeats link \(3, 21\)"):
        parse_faults([{"link": [3, 21], "slowdown": 1.5}, {"link": [21, 3], "slowdown": 2.0}], 32)


def test_faults_must_be_a_list():
    with pytest.raises(ValueError, match="faults: Input should be a valid list"):
        parse_faults({"gpu": 1, "slowdown": 2.0}, 8)


def test_a_scenario_has_defaults_for_noise_and_seed():
    sc = parse_scenario({"gpus": 8, "probe_size": 4, "faults": []})
    assert (sc.noise_sigma, sc.seed, sc.faults) == (0.0, 0, ())
    assert sc.replica().gpus == 8


@pytest.mark.parametrize(
    "obj, message",
    [
        ([], "scenario must be a JSON object"),
        ({"probe_size": 4, "faults": []}, "'gpus' is missing"),
        ({"gpus": 8, "faults": []}, "'probe_size' is missing"),
        ({"gpus": 8, "probe_size": 4}, "'faults' is missing"),
        ({"gpus": 8, "probe_size": 9, "faults": []}, "probe_size must be <= gpus"),
        ({"gpus": 4, "probe_size": 4, "faults": []}, r"probe_size must be < gpus \(got 4 = gpus\): a cover of one probe"),
        ({"gpus": 1, "probe_size": 1, "faults": []}, "gpus must be an integer >= 2"),
        ({"gpus": "8", "probe_size": 4, "faults": []}, "gpus must be an integer"),
        ({"gpus": 8, "probe_size": 4, "faults": [], "noise": {"sigma": -1}}, "noise.sigma"),
        ({"gpus": 8, "probe_size": 4, "faults": [], "noise": 0.1}, 'noise must be "production" or an object'),
        (
            {"gpus": 8, "probe_size": 4, "faults": [], "noise": {"sigma": 0.1, "hum": 1}},
            r"noise has unknown field\(s\) \['hum'\]",
        ),
        ({"gpus": 8, "probe_size": 4, "faults": [], "noise": {"stall_rate": 2.0}}, r"noise.stall_rate must be in \[0, 1\)"),
        (
            {"gpus": 8, "probe_size": 4, "faults": [{"nic": 1, "slowdown": 1.5}]},
            r"faults\[0\].nic: a nic fault needs the replica's topology",
        ),
        ({"gpus": 8, "probe_size": 4, "faults": [], "topology": {"gpus_per_node": 3}}, "does not divide"),
        (
            {"gpus": 8, "probe_size": 4, "faults": [], "topology": {"gpus_per_node": 4, "rail": True}},
            r"topology has unknown field\(s\)",
        ),
        (
            {"gpus": 8, "probe_size": 4, "faults": [], "topology": {"gpus_per_node": 4, "rails": 1}},
            "topology.rails must be true or false",
        ),
        (
            {"gpus": 8, "probe_size": 4, "topology": {"gpus_per_node": 8}, "faults": [{"nic": 0, "slowdown": 1.5}]},
            r"faults\[0\].nic: nic:node0 carries no path in this topology \(one node\)",
        ),
        (
            {"gpus": 8, "probe_size": 4, "topology": {"gpus_per_node": 1}, "faults": [{"nvswitch": 3, "slowdown": 1.5}]},
            r"faults\[0\].nvswitch: nvswitch:node3 carries no path in this topology \(one GPU per node\)",
        ),
        (
            {"gpus": 8, "probe_size": 4, "topology": {"gpus_per_node": 4}, "faults": [{"nic": "1", "slowdown": 1.5}]},
            r"faults\[0\].nic: must be a node id >= 0 or \[node, rail\] of two, got '1'",
        ),
        (
            {"gpus": 8, "probe_size": 4, "topology": {"gpus_per_node": 4, "node_names": ["a\nb", "c"]}, "faults": []},
            r"topology.node_names: a node name is 1-64 of",
        ),
        (
            {"gpus": 8, "probe_size": 4, "faults": [], "noise": {"drift_period": 10**23}},
            r"noise.drift_period must be an integer in 2\.\.10\^9",
        ),
        (
            {"gpus": 8, "probe_size": 4, "topology": {"gpus_per_node": 4}, "faults": [{"nic": 2, "slowdown": 1.5}]},
            r"faults\[0\].nic: node 2 is outside 0\.\.1",
        ),
        ({"gpus": 8, "probe_size": 4, "faults": [], "seed": -3}, r"seed must be an integer in 0\.\.4294967295, got -3"),
        (
            {"gpus": 8, "probe_size": 4, "faults": [], "alpha": 5e-324},
            r"alpha must be a finite number in \[1e-06, 0\.5\], got 5e-324",
        ),
        ({"gpus": 8, "probe_size": 4, "faults": [], "alpha": 0.6}, r"alpha must be a finite number in \[1e-06, 0\.5\], got 0\.6"),
        (
            {"gpus": 8, "probe_size": 4, "faults": [], "seed": 2**32},
            r"seed must be an integer in 0\.\.4294967295, got 4294967296",
        ),
        ({"gpus": 8, "probe_size": 4, "faults": [], "colour": "red"}, "unknown field"),
    ],
)
def test_a_bad_scenario_names_the_field(obj, message):
    with pytest.raises(ValueError, match=message):
        parse_scenario(obj)


def test_a_scenario_with_a_topology_and_production_noise_names_its_shared_faults():
    sc = parse_scenario(
        {
            "gpus": 64,
            "probe_size": 8,
            "topology": {"gpus_per_node": 8, "rails": True, "node_names": [f"a{i}" for i in range(8)]},
            "faults": [{"nic": [3, 5], "slowdown": 1.5}, {"nvswitch": 2, "slowdown": 1.3}, {"switch": 1, "slowdown": 1.4}],
            "noise": "production",
        }
    )
    assert sc.topology is not None and sc.noise is not None and sc.noise.tail_df == 4.0
    assert [sc.topology.name(f.component(sc.topology)) for f in sc.faults] == ["nic:a3/rail5", "nvswitch:a2", "switch:1"]
    replica = sc.replica()
    # rail 5 of node 3 is GPU 29: a probe of it and a GPU of another node holds the NIC; one inside node 3 does not
    assert replica.slowdown([29, 0]) == 1.5 and replica.slowdown([29, 24]) == 1.0


def test_a_slowdown_of_exactly_one_is_accepted_as_a_healthy_no_op() -> None:
    from faultsense_pipelines.replica.faults import GpuFault, parse_fault

    assert parse_fault({"gpu": 3, "slowdown": 1}, 8) == GpuFault(3, 1.0)


def test_the_simulated_replica_reports_an_overflowing_latency_as_a_value_error_not_inf() -> None:
    import warnings

    from faultsense_pipelines.replica.faults import GpuFault
    from faultsense_pipelines.sim.simulator import SimulatedReplica

    replica = SimulatedReplica(8, [GpuFault(1, 1000.0)], noise_sigma=1.0, seed=0, base_ms=1e306)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy overflow warning either
        with pytest.raises(
            ValueError, match=r"^simulated latency of probe \[0, 1, 2\] overflows: base_ms=1e\+306 x slowdown 1000.0"
        ):
            replica.run([0, 1, 2], repeats=4)
        assert replica.run([2, 3, 4]).latencies_ms[0] < float("inf")  # 1e306 ms: huge, but finite


@pytest.mark.parametrize("sigma", [-0.1, 1.5, float("nan")])
def test_the_simulated_replica_refuses_noise_outside_the_fleet_cap(sigma: float) -> None:
    from faultsense_pipelines.sim.simulator import SimulatedReplica

    with pytest.raises(ValueError, match=r"noise_sigma must be a finite number in \[0, 1\]"):
        SimulatedReplica(8, noise_sigma=sigma)


def test_an_intermittent_fault_parses_with_its_duty_and_writes_it_back_only_when_below_one() -> None:
    spec = [{"gpu": 9, "slowdown": 1.8, "duty": 0.6}, {"link": [21, 3], "slowdown": 1.5}]  # the issue's example
    faults = parse_faults(spec, 64)
    assert faults == (GpuFault(9, 1.8, 0.6), LinkFault((3, 21), 1.5))
    assert [f.to_dict() for f in faults] == [{"gpu": 9, "slowdown": 1.8, "duty": 0.6}, {"link": [3, 21], "slowdown": 1.5}]
    assert (
        repr(faults[0]) == "GpuFault(gpu=9, slowdown=1.8, duty=0.6)"
        and repr(faults[1]) == "LinkFault(link=(3, 21), slowdown=1.5)"
    )
    assert pickle.loads(pickle.dumps(faults)) == faults


@pytest.mark.parametrize("duty", [0, -0.5, 1.01, float("nan"), True, "0.5"])
def test_a_duty_outside_zero_to_one_is_refused_by_name(duty: object) -> None:
    with pytest.raises(ValueError, match=r"^faults\[0\]\.duty"):
        parse_faults([{"gpu": 1, "slowdown": 2.0, "duty": duty}], 8)


def test_real_workers_refuse_an_intermittent_fault() -> None:
    from faultsense_pipelines.replica.faults import parse_injections
    from faultsense_pipelines.replica.topology import ReplicaTopology

    with pytest.raises(ValueError, match=r"^inject\[0\]\.duty: an intermittent fault \(duty < 1\) is simulated only"):
        parse_injections([{"gpu": 2, "slowdown": 3.0, "duty": 0.5}], 8)
    with pytest.raises(ValueError, match=r"^inject\[0\]\.duty"):
        parse_injections([{"nic": 1, "delay_ms": 2.0, "duty": 0.5}], 8, ReplicaTopology(8, gpus_per_node=2))


def test_a_simulated_intermittent_gpu_is_slow_in_about_its_duty_of_the_measurements() -> None:
    """Noise-free, so every measurement is either the healthy 20 ms or 2x: the share of slow
    ones is the chain's stationary P(on) = duty (runs of mean 20 measurements, so ~600 on/off
    cycles in 20,000 measurements: within 0.05 of the duty)."""
    from faultsense_pipelines.sim.simulator import SimulatedReplica

    for duty in (0.3, 0.6, 0.9):
        replica = SimulatedReplica(8, [GpuFault(3, 2.0, duty)], seed=11)
        slow = [replica.run([3, 4]).latencies_ms[0] > 30.0 for _ in range(20_000)]
        assert abs(sum(slow) / len(slow) - duty) < 0.05, duty
        assert all(replica.run([0, 1]).latencies_ms[0] == 20.0 for _ in range(100))  # probes without it never slow


def test_a_scenario_and_the_fleet_file_take_duty() -> None:
    from faultsense_pipelines.fleet.sections import SimulatedOptions

    sc = parse_scenario({"gpus": 16, "probe_size": 4, "faults": [{"gpu": 5, "slowdown": 2.0, "duty": 0.5}]})
    assert sc.faults == (GpuFault(5, 2.0, 0.5),)
    assert SimulatedOptions.model_validate({"faults": [{"gpu": 5, "slowdown": 2.0, "duty": 0.5}]}).faults == [
        GpuFault(5, 2.0, 0.5)
    ]


def test_the_shared_component_faults_are_one_class_built_by_three_names() -> None:
    from faultsense_pipelines.replica.faults import NicFault, NvSwitchFault, SharedFault, SwitchFault

    t = ReplicaTopology(16, gpus_per_node=4, rails=True)
    spec = [{"nic": [1, 2], "slowdown": 1.5}, {"nvswitch": 3, "slowdown": 1.3, "duty": 0.5}, {"switch": 2, "slowdown": 1.4}]
    parsed = parse_faults(spec, 16, t)
    assert parsed == (NicFault((1, 2), 1.5), NvSwitchFault(nvswitch=3, slowdown=1.3, duty=0.5), SwitchFault(2, 1.4))
    assert all(type(f) is SharedFault for f in parsed)
    assert [f.kind for f in parsed] == ["nic", "nvswitch", "switch"]
    assert [f.to_dict() for f in parsed] == spec  # the file form, written back as read
    assert repr(parsed[0]) == "NicFault(nic=(1, 2), slowdown=1.5, delay_ms=None)"
    # by hand: rail 2 of node 1 is GPU 1 * 4 + 2 = 6; node 3's NVSwitch holds GPUs 12..15
    assert parsed[0].component(t).members == {6} and parsed[1].component(t).members == set(range(12, 16))
    with pytest.raises(ValueError, match="give exactly one of nic, nvswitch or switch"):
        SharedFault(nic=1, switch=2, slowdown=1.5)
