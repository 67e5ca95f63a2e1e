"""NIC, NVSwitch and switch faults through the evidence drill-down, under production-like noise.

Fixed seeds (the default suite is deterministic); ``bench/bench_components.py`` measures the
rates over many seeds and sizes.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import localize, run_phase1
from faultsense_pipelines.localize.evidence.wiring import run_evidence_phase2
from faultsense_pipelines.replica.faults import GpuFault, LinkFault, NicFault, NvSwitchFault, SwitchFault
from faultsense_pipelines.replica.topology import ReplicaTopology
from faultsense_pipelines.replica.vocabulary import DrilldownMethod, Status
from faultsense_pipelines.sim.latency import PRODUCTION_NOISE, NoiseModel
from faultsense_pipelines.sim.simulator import SimulatedReplica
from tests.hypothesis_profiles import examples

LEAF = ReplicaTopology(64, gpus_per_node=8, nodes_per_switch=2)
RAIL = ReplicaTopology(64, gpus_per_node=8, rails=True)


def _confirmed(topology, faults, seed, noise=PRODUCTION_NOISE, k=8, repeats=3):
    ex = SimulatedReplica(topology.gpus, faults, seed=seed, topology=topology, noise=noise)
    p1 = run_phase1(ex, plan_cover(topology.gpus, k), repeats=repeats)
    _, verdicts = run_evidence_phase2(ex, p1, repeats=repeats, seed=seed, topology=topology)
    return {v.component for v in verdicts if v.status == Status.CONFIRMED}


@pytest.mark.parametrize(
    ("topology", "fault", "name"),
    [
        (LEAF, NicFault(nic=3, slowdown=1.5), "nic:node3"),
        (LEAF, NvSwitchFault(nvswitch=5, slowdown=1.4), "nvswitch:node5"),
        (LEAF, SwitchFault(switch=1, slowdown=1.4), "switch:1"),
        (RAIL, NicFault(nic=(2, 5), slowdown=1.6), "nic:node2/rail5"),
    ],
)
@pytest.mark.parametrize("seed", [0, 1])
def test_a_shared_fault_is_named_as_that_component_and_nothing_else(topology, fault, name, seed):
    assert _confirmed(topology, [fault], seed) == {name}


def test_a_nic_and_an_unrelated_slow_gpu_are_both_found():
    assert _confirmed(LEAF, [NicFault(nic=3, slowdown=1.5), GpuFault(gpu=60, slowdown=1.6)], seed=3) == {"nic:node3", "gpu:60"}


@pytest.mark.parametrize("seed", [3, 4])
def test_with_one_repeat_a_nic_left_unsettled_blames_no_healthy_gpu_through_the_pads(seed):
    """One repeat is too few to settle the NIC (examples/components/nic.json with --repeats 1).
    Its GPUs then stay in the padding pool, and a healthy GPU padded with them reads slow in
    most of its tests; each accusing test's control (the same pads, the GPU swapped out) reads
    slow too, so the pads, not the GPU, take the accusation."""
    found = _confirmed(LEAF, [NicFault(nic=3, slowdown=1.5), GpuFault(gpu=60, slowdown=1.6)], seed=seed, repeats=1)
    assert found <= {"nic:node3", "gpu:60"}, found


def test_a_slow_gpu_is_not_its_nic_and_a_nic_is_not_eight_gpus():
    assert _confirmed(LEAF, [GpuFault(gpu=27, slowdown=1.5)], seed=2) == {"gpu:27"}
    found = _confirmed(LEAF, [NicFault(nic=4, slowdown=1.7)], seed=2)
    assert found == {"nic:node4"}, found


def test_without_a_topology_nothing_shared_is_blamed_and_with_one_the_healthy_replica_stays_clean():
    assert _confirmed(LEAF, [], seed=4) == set()
    ex = SimulatedReplica(64, [], seed=4, noise=PRODUCTION_NOISE)
    loc = localize(ex, plan_cover(64, 8), repeats=3, method=DrilldownMethod.EVIDENCE)  # no topology: GPUs and links only
    assert loc.faulty_components == []


@settings(max_examples=examples(20), deadline=None)
@given(
    per_node=st.sampled_from([2, 4, 8]),
    per_switch=st.sampled_from([None, 1, 2]),
    rails=st.booleans(),
    target=st.integers(0, 31),
    peer=st.integers(0, 31),
    slowdown=st.floats(1.3, 3.0),
    seed=st.integers(0, 2**16),
)
def test_a_single_gpu_or_link_fault_is_never_lifted_to_a_shared_component(
    per_node, per_switch, rails, target, peer, slowdown, seed
):
    topology = ReplicaTopology(32, gpus_per_node=per_node, nodes_per_switch=per_switch, rails=rails)
    fault = GpuFault(gpu=target, slowdown=slowdown) if target == peer else LinkFault(link=(target, peer), slowdown=slowdown)
    ex = SimulatedReplica(32, [fault], seed=seed, topology=topology, noise=NoiseModel(sigma=0.02))
    p1 = run_phase1(ex, plan_cover(32, 4), repeats=3)
    _, verdicts = run_evidence_phase2(ex, p1, repeats=3, seed=seed, topology=topology)
    assert not [v.component for v in verdicts if v.shared is not None and v.status == Status.CONFIRMED]


@pytest.mark.parametrize("seed", [0, 1])
def test_the_two_nics_of_a_two_node_replica_are_reported_together_and_no_gpu_is_blamed(seed):
    topology = ReplicaTopology(16, gpus_per_node=8)
    ex = SimulatedReplica(16, [NicFault(nic=1, slowdown=1.6)], seed=seed, topology=topology, noise=PRODUCTION_NOISE)
    loc = localize(ex, plan_cover(16, 4), repeats=3, method=DrilldownMethod.EVIDENCE, topology=topology)
    assert not [v.component for v in loc.verdicts if v.status == Status.CONFIRMED]
    aliased = {v.component: v for v in loc.verdicts if v.status == Status.INCONCLUSIVE}
    assert set(aliased) == {"nic:node0", "nic:node1"}
    assert "carry the same paths" in (aliased["nic:node1"].reason or "")
