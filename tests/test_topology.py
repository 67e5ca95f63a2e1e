"""Shared components of a replica's topology: which paths each carries, checked path by path."""

from __future__ import annotations

import random
from itertools import combinations

import pytest

from faultsense_pipelines.replica.topology import Component, ReplicaTopology, gpu_component, link_component
from faultsense_pipelines.replica.vocabulary import ComponentKind

TOPOLOGIES = [
    ReplicaTopology(64, gpus_per_node=8, nodes_per_switch=2),
    ReplicaTopology(32, gpus_per_node=4, rails=True),
    ReplicaTopology(32, gpus_per_node=4, rails=True, nodes_per_switch=2),
    ReplicaTopology(24, gpus_per_node=8),
]


def carried_paths(t: ReplicaTopology, c: Component) -> set[tuple[int, int]]:
    """The issue's definition, written out pair by pair (independent of ``holds``)."""
    out = set()
    for a, b in combinations(range(t.gpus), 2):
        same_node = a // t.gpus_per_node == b // t.gpus_per_node
        if c.kind == ComponentKind.LINK:
            ok = (a, b) == c.ids
        elif c.kind == ComponentKind.NVSWITCH:
            ok = same_node and a // t.gpus_per_node == c.ids[0]
        elif c.kind == ComponentKind.NIC and len(c.ids) == 1:
            ok = not same_node and c.ids[0] in (a // t.gpus_per_node, b // t.gpus_per_node)
        elif c.kind == ComponentKind.NIC:
            v, r = c.ids
            ok = not same_node and v * t.gpus_per_node + r in (a, b)
        else:  # a switch: an inter-node path with an end under it
            ok = not same_node and (a in c.members or b in c.members)
        if ok:
            out.add((a, b))
    return out


@pytest.mark.parametrize("t", TOPOLOGIES, ids=lambda t: f"n{t.gpus}-g{t.gpus_per_node}-s{t.nodes_per_switch}-r{int(t.rails)}")
def test_a_probe_holds_a_component_exactly_when_it_holds_a_path_it_carries(t):
    rng = random.Random(7)
    comps = [*t.shared_components(), gpu_component(3), link_component(1, t.gpus - 1)]
    probes = [rng.sample(range(t.gpus), rng.randint(1, 8)) for _ in range(300)]
    matrix = t.holds_matrix(comps, probes)
    for j, c in enumerate(comps):
        paths = carried_paths(t, c) if c.kind != ComponentKind.GPU else None
        for i, p in enumerate(probes):
            expected = c.ids[0] in p if paths is None else any(pair in paths for pair in combinations(sorted(p), 2))
            assert t.holds(c, p) == expected == bool(matrix[i, j]), (t.name(c), sorted(p))


def test_the_catalog_and_names_of_a_hand_worked_topology():
    t = ReplicaTopology(16, gpus_per_node=4, nodes_per_switch=2, node_names=("a1", "a2", "b1", "b2"))
    assert [t.name(c) for c in t.shared_components()] == [
        "nvswitch:a1", "nvswitch:a2", "nvswitch:b1", "nvswitch:b2",
        "nic:a1", "nic:a2", "nic:b1", "nic:b2",
        "switch:0", "switch:1",
    ]  # fmt: skip
    assert sorted(t.switch(1).members) == list(range(8, 16))
    rails = ReplicaTopology(16, gpus_per_node=4, rails=True, nodes_per_switch=2)
    # rail switch 5 = group 1, rail 1: GPU 1 of nodes 2 and 3
    assert sorted(rails.switch(5).members) == [9, 13]
    assert rails.name(rails.nic(2, 3)) == "nic:node2/rail3"
    assert rails.nic(2, 3).members == frozenset({11})
    assert rails.nic(2, 3).describe() == {"kind": "nic", "node": 2, "rail": 3}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"gpus_per_node": 7}, "does not divide the replica's 64 GPUs"),
        ({"gpus_per_node": 8, "nodes_per_switch": 3}, "does not divide the 8 nodes"),
        ({"gpus_per_node": 8, "nodes_per_switch": 9}, r"must be in 1\.\.8"),
        ({"gpus_per_node": 8, "node_names": ("a",)}, "1 names for 8 nodes"),
        ({"gpus_per_node": 8, "node_names": ("a",) * 8}, "given twice"),
        ({"rails": True}, "gpus_per_node is required"),
    ],
)
def test_a_topology_that_does_not_fit_names_the_field(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ReplicaTopology(64, **kwargs)


def test_components_the_topology_lacks_are_refused():
    t = ReplicaTopology(64, gpus_per_node=8)
    with pytest.raises(ValueError, match=r"outside 0\.\.7"):
        t.nic(8)
    with pytest.raises(ValueError, match="has no switches"):
        t.switch(0)
    with pytest.raises(ValueError, match=r"a rail needs topology\.rails"):
        t.nic(1, 2)
    assert ReplicaTopology(8).shared_components() == []


def test_nodes_are_named_after_the_hosts_only_where_the_hosts_fit_gpus_per_node() -> None:
    t = ReplicaTopology(8, gpus_per_node=4)
    named, why = t.named_by_hosts(["a17"] * 4 + ["a18"] * 4)
    assert why is None and named.node_names == ("a17", "a18") and named.component_node(gpu_component(5)) == "a18"
    assert named.gpus_per_node == 4 and t.node_names is None  # a new topology; the fleet file's unchanged
    one, why = ReplicaTopology(4, gpus_per_node=4).named_by_hosts(["h"] * 4)
    assert why is None and one.node_names == ("h",)  # one node: every GPU on the one host
    cases = {
        ("a17", "a17", "a18", "a17", "a18", "a18", "a18", "a18"): "node 0 (GPUs 0..3) runs on hosts a17, a18",
        ("h",) * 8: "nodes 0 and 1 (gpus_per_node 4) both run on host h",
        ("a17",) * 4: "4 hosts for 8 GPUs",
        ("a 17",) * 4 + ("a18",) * 4: "host name 'a 17' is not a node name (1-64 of A-Z, a-z, 0-9, '_', '.', '-')",
    }
    for hosts, message in cases.items():
        kept, why = t.named_by_hosts(list(hosts))
        assert kept is t and why == message
    # the fleet file's names win, and without gpus_per_node there is nothing to name
    fleet = ReplicaTopology(8, gpus_per_node=4, node_names=("x", "y"))
    assert fleet.named_by_hosts(["a"] * 8) == (fleet, None)
    assert ReplicaTopology(8).named_by_hosts(["a"] * 8) == (ReplicaTopology(8), None)
