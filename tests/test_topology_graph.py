"""The replica as a networkx graph: each pair's path is a graph path, and what a component
carries derives from it.

Checked against the arithmetic definition the topology had before it was a graph (the rules
of docs/components.md, written out again below as the independent reference): the members
of every shared component, and, for every pair and for random probes, which components a
probe holds. The topologies are every shape the rest of the test suite builds.
"""

from __future__ import annotations

import random
from itertools import combinations, pairwise

import networkx as nx
import pytest

from faultsense_pipelines.replica.topology import FABRIC, Component, ReplicaTopology, gpu_component, link_component
from faultsense_pipelines.replica.vocabulary import ComponentKind

TOPOLOGIES = [
    ReplicaTopology(1),
    ReplicaTopology(8),
    ReplicaTopology(16),
    ReplicaTopology(4, gpus_per_node=2),
    ReplicaTopology(8, gpus_per_node=2),
    ReplicaTopology(8, gpus_per_node=1),
    ReplicaTopology(8, gpus_per_node=8),
    ReplicaTopology(16, gpus_per_node=4),
    ReplicaTopology(16, gpus_per_node=8),
    ReplicaTopology(24, gpus_per_node=8),
    ReplicaTopology(32, gpus_per_node=8),
    ReplicaTopology(64, gpus_per_node=8),
    ReplicaTopology(16, gpus_per_node=4, nodes_per_switch=2),
    ReplicaTopology(16, gpus_per_node=4, nodes_per_switch=4),
    ReplicaTopology(64, gpus_per_node=8, nodes_per_switch=2),
    ReplicaTopology(128, gpus_per_node=8, nodes_per_switch=4),
    ReplicaTopology(32, gpus_per_node=4, rails=True),
    ReplicaTopology(64, gpus_per_node=8, rails=True),
    ReplicaTopology(16, gpus_per_node=4, rails=True, nodes_per_switch=2),
    ReplicaTopology(32, gpus_per_node=4, rails=True, nodes_per_switch=2),
    ReplicaTopology(8, gpus_per_node=8, rails=True),
    ReplicaTopology(16, gpus_per_node=4, nodes_per_switch=2, node_names=("a1", "a2", "b1", "b2")),
]


def _id(t: ReplicaTopology) -> str:
    return f"n{t.gpus}-per{t.gpus_per_node}-sw{t.nodes_per_switch}-{'rails' if t.rails else 'flat'}"


def arithmetic_members(t: ReplicaTopology, c: Component) -> frozenset[int]:
    """The members by the arithmetic rules: a node's GPUs; a rail NIC's one GPU; a leaf
    switch's nodes' GPUs; a rail switch's rail GPU of each node of its group."""
    per = t.gpus_per_node or 1
    if c.kind in (ComponentKind.NVSWITCH, ComponentKind.NIC):
        v = c.ids[0]
        return frozenset((v * per + c.ids[1],)) if len(c.ids) == 2 else frozenset(range(v * per, (v + 1) * per))
    group_nodes = t.nodes_per_switch or t.nodes
    if t.rails:
        group, rail = divmod(c.ids[0], per)
        return frozenset(v * per + rail for v in range(group * group_nodes, (group + 1) * group_nodes))
    s = c.ids[0]
    return frozenset(g for v in range(s * group_nodes, (s + 1) * group_nodes) for g in range(v * per, (v + 1) * per))


def arithmetic_carries(t: ReplicaTopology, c: Component, a: int, b: int) -> bool:
    """docs/components.md: an NVSwitch carries the pairs within its node; a NIC or switch the
    inter-node pairs with an end among its members."""
    m = arithmetic_members(t, c)
    if c.kind == ComponentKind.NVSWITCH:
        return a in m and b in m
    return t.node(a) != t.node(b) and (a in m or b in m)


@pytest.mark.parametrize("t", TOPOLOGIES, ids=_id)
def test_the_network_layer_is_a_tree_and_every_gpu_reaches_the_fabric(t: ReplicaTopology) -> None:
    g = t.graph
    assert nx.is_connected(g)
    network = g.edge_subgraph((a, b) for a, b, layer in g.edges(data="layer") if layer == "network")
    assert nx.is_tree(network) and FABRIC in network
    assert sum(1 for _, kind in g.nodes(data="kind") if kind == "gpu") == t.gpus


@pytest.mark.parametrize("t", TOPOLOGIES, ids=_id)
def test_members_from_the_graph_equal_the_arithmetic_ones(t: ReplicaTopology) -> None:
    for c in t.shared_components():
        assert c.members == arithmetic_members(t, c), t.name(c)


@pytest.mark.parametrize("t", TOPOLOGIES, ids=_id)
def test_every_pair_path_passes_exactly_the_components_that_carry_it(t: ReplicaTopology) -> None:
    shared = t.shared_components()
    for a, b in combinations(range(t.gpus), 2):
        path = t.route(a, b)
        assert path[0] == ("gpu", a) and path[-1] == ("gpu", b)
        assert not any(v[0] == "gpu" for v in path[1:-1]), path  # a GPU routes nobody's traffic
        assert all(t.graph.has_edge(u, v) for u, v in pairwise(path)), path
        for c in shared:
            assert t.carries(c, a, b) == arithmetic_carries(t, c, a, b), (t.name(c), a, b, path)
        assert t.carries(gpu_component(a), a, b) and t.carries(link_component(a, b), a, b)


@pytest.mark.parametrize("t", TOPOLOGIES, ids=_id)
def test_holds_is_some_pair_of_the_probe_carried(t: ReplicaTopology) -> None:
    rng = random.Random(t.gpus * 31 + (t.gpus_per_node or 0))
    components = t.shared_components() + [gpu_component(g) for g in range(t.gpus)]
    if t.gpus > 1:
        components.append(link_component(0, t.gpus - 1))
    probes = [sorted(rng.sample(range(t.gpus), rng.randint(1, min(t.gpus, 8)))) for _ in range(60)]
    matrix = t.holds_matrix(components, probes)
    for p, probe in enumerate(probes):
        for j, c in enumerate(components):
            by_pairs = any(t.carries(c, a, b) for a, b in combinations(probe, 2)) or (
                c.kind == ComponentKind.GPU and c.ids[0] in probe
            )
            assert t.holds(c, probe) == by_pairs == bool(matrix[p, j]), (t.name(c), probe)


def test_a_hand_worked_route_over_two_leaves_and_one_nvswitch() -> None:
    t = ReplicaTopology(16, gpus_per_node=4, nodes_per_switch=2)
    assert t.route(1, 9) == (("gpu", 1), ("nic", 0), ("switch", 0), FABRIC, ("switch", 1), ("nic", 2), ("gpu", 9))
    assert t.route(1, 5) == (("gpu", 1), ("nic", 0), ("switch", 0), ("nic", 1), ("gpu", 5))
    assert t.route(2, 1) == (("gpu", 1), ("nvswitch", 0), ("gpu", 2))
    with pytest.raises(ValueError, match="GPUs 1 and 16"):
        t.route(1, 16)
