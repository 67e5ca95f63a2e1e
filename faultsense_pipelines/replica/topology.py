"""A serving replica as a graph of GPUs and GPU-to-GPU paths.

FaultSense (APSys '26, §4.2) abstracts a replica of ``n`` GPUs joined by all-to-all as the
complete undirected graph G = (V, E): vertices are GPUs, edges the logical GPU-to-GPU paths,
|E| = n(n-1)/2. A probe of size k tests its k vertices and the k(k-1)/2 edges among them.

Below the GPUs sit shared components (:class:`ReplicaTopology`, docs/components.md), and
the replica is built as a :mod:`networkx` graph of them (:attr:`ReplicaTopology.graph`): each
node's GPUs hang off its NVSwitch (NVLink), and, as a tree, off its NIC (or, rail-optimized,
each GPU off its rail's NIC), the NICs off their leaf or rail switch, the switches off the
fabric above them. A GPU pair's path is a path of that graph (:meth:`ReplicaTopology.route`):
over the node's NVSwitch when both GPUs share a node, else the one path of the network tree.
A component *carries* the pairs whose path passes it; a probe *holds* a component when it
holds one of the pairs it carries (a GPU: when it runs it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

import networkx as nx
import numpy as np

from .vocabulary import ComponentKind

__all__ = [
    "Component",
    "Link",
    "ReplicaTopology",
    "gpu_component",
    "link",
    "link_component",
]

#: A node name (the ledger's ``nic:<name>``): no spaces, control characters or separators.
_NODE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")

#: A GPU-to-GPU path, always stored with the smaller GPU id first.
Link = tuple[int, int]

#: A vertex of :attr:`ReplicaTopology.graph`: ``(kind, *ids)`` as in :class:`Component`
#: (``("gpu", 9)``, ``("nic", 3)``, ``("nic", 3, 5)``, ``("switch", 1)``), or :data:`FABRIC`.
Vertex = tuple[str | int, ...]

#: The network above the leaf or rail switches (or above the NICs without them): the root of
#: the network tree. Not a component: a spine's share of a sprayed flow cannot be told apart.
FABRIC: Vertex = ("fabric",)


def link(a: int, b: int) -> Link:
    """Return the path between GPUs ``a`` and ``b`` as a sorted pair.

    Raises:
        ValueError: if ``a == b`` (a GPU has no path to itself).
    """
    if a == b:
        raise ValueError(f"a link joins two different GPUs, got ({a}, {b})")
    return (a, b) if a < b else (b, a)


@dataclass(frozen=True, order=True)
class Component:
    """One hypothesis of what is slow: a GPU, a link or a shared component.

    Attributes:
        kind: :class:`~faultsense_pipelines.replica.vocabulary.ComponentKind` (``gpu``, ``link``,
            ``nvswitch``, ``nic``, ``switch``).
        ids: ``(gpu,)``; ``(a, b)`` with ``a < b``; ``(node,)`` for an NVSwitch or a NIC;
            ``(node, rail)`` for a rail's NIC; ``(switch,)`` for a switch.
        members: the GPUs under it: the GPU, the link's ends, the node's GPUs (NVSwitch, NIC),
            the rail's GPU (rail NIC), the GPUs under the switch.
    """

    kind: ComponentKind
    ids: tuple[int, ...]
    members: frozenset[int]

    @property
    def shared(self) -> bool:
        """True for an NVSwitch, a NIC or a switch (a family of paths, not a GPU or one link)."""
        return self.kind in (ComponentKind.NVSWITCH, ComponentKind.NIC, ComponentKind.SWITCH)

    def describe(self) -> dict[str, object]:
        """The ``faulty_components`` entry of ``simulate --json``: ``{"kind": "nic", "node": 3}``
        (``"rail"`` for a rail NIC), ``{"kind": "switch", "switch": 1}``, ``{"kind": "gpu", "gpu": 9}``,
        ``{"kind": "link", "gpus": [3, 21]}``."""
        if self.kind == ComponentKind.GPU:
            return {"kind": str(self.kind), "gpu": self.ids[0]}
        if self.kind == ComponentKind.LINK:
            return {"kind": str(self.kind), "gpus": list(self.ids)}
        if self.kind == ComponentKind.SWITCH:
            return {"kind": str(self.kind), "switch": self.ids[0]}
        out: dict[str, object] = {"kind": str(self.kind), "node": self.ids[0]}
        if len(self.ids) == 2:
            out["rail"] = self.ids[1]
        return out


def gpu_component(g: int) -> Component:
    """The :class:`Component` of GPU ``g``."""
    return Component(ComponentKind.GPU, (g,), frozenset((g,)))


def link_component(a: int, b: int) -> Component:
    """The :class:`Component` of the path between GPUs ``a`` and ``b``.

    Raises:
        ValueError: if ``a == b``.
    """
    ab = link(a, b)
    return Component(ComponentKind.LINK, ab, frozenset(ab))


#: The kinds a probe holds only when it spans two nodes (:func:`_held`).
_SPANNED = (ComponentKind.NIC, ComponentKind.SWITCH)


def _held(kind: ComponentKind, hits: Any, spans: Any) -> Any:
    """The one rule of :meth:`ReplicaTopology.holds`, for one probe (an int and a bool) or for
    many at once (arrays of both, :meth:`ReplicaTopology.holds_matrix_ids`).

    ``hits``: how many GPUs of the probe are the component's members; ``spans``: the probe
    holds GPUs of two nodes. A probe holds a GPU it runs, a link when it runs both ends, an
    NVSwitch with two GPUs of its node, a NIC or a switch when it meets its members and spans
    two nodes (see :meth:`ReplicaTopology.holds` for why).
    """
    if kind == ComponentKind.GPU:
        return hits >= 1
    if kind in (ComponentKind.LINK, ComponentKind.NVSWITCH):
        return hits >= 2
    return (hits > 0) & spans


@dataclass(frozen=True)
class ReplicaTopology:
    """Where a replica's GPUs sit: nodes, NICs, NVSwitches, leaf or rail switches.

    GPU ``g`` sits on node ``g // gpus_per_node``. Components and the paths each one carries:

    * ``nvswitch`` node v: every path between two GPUs of node v;
    * ``nic`` node v: every path from a GPU of v to a GPU of another node; with ``rails``,
      ``nic`` (v, r): every path from GPU r of node v (``v * gpus_per_node + r``) to another node;
    * ``switch`` s, with ``nodes_per_switch``: every path between two different nodes of which
      at least one is under s (nodes ``s * nodes_per_switch ...``); with ``rails``, rail switch
      r carries the inter-node paths of the rail-r GPUs (one per rail, or, with
      ``nodes_per_switch`` too, one per rail and group of nodes: ``s = group * gpus_per_node + r``).

    A one-node replica (``gpus_per_node >= gpus``) has only its NVSwitch; a replica without
    ``gpus_per_node`` has no shared components (only GPUs and links).

    Attributes:
        gpus: n, GPUs in the replica (>= 1).
        gpus_per_node: GPUs per node, or ``None`` (unknown: no shared components).
        nodes_per_switch: consecutive nodes under one leaf (or rail group) switch, or ``None``.
        rails: rail-optimized: GPU i of every node uses NIC i and rail switch i.
        node_names: one name per node, for the ledger; default ``node0``, ``node1``, ...

    Raises:
        ValueError: naming the first field out of range.

    >>> t = ReplicaTopology(16, gpus_per_node=4, nodes_per_switch=2)
    >>> [t.name(c) for c in t.shared_components()][:3], len(t.shared_components())
    (['nvswitch:node0', 'nvswitch:node1', 'nvswitch:node2'], 10)
    >>> nic1 = t.nic(1)
    >>> t.holds(nic1, {4, 5, 6, 7}), t.holds(nic1, {4, 8}), t.holds(nic1, {0, 8})
    (False, True, False)
    """

    gpus: int
    gpus_per_node: int | None = None
    nodes_per_switch: int | None = None
    rails: bool = False
    node_names: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.gpus < 1:
            raise ValueError(f"gpus must be >= 1, got {self.gpus}")
        if self.gpus_per_node is None:
            if self.nodes_per_switch is not None or self.rails or self.node_names is not None:
                raise ValueError("topology.gpus_per_node is required with nodes_per_switch, rails or node_names")
            return
        if self.gpus_per_node < 1:
            raise ValueError(f"topology.gpus_per_node must be >= 1, got {self.gpus_per_node}")
        if self.gpus % self.gpus_per_node:
            raise ValueError(
                f"topology.gpus_per_node: {self.gpus_per_node} does not divide the replica's {self.gpus} GPUs into whole nodes"
            )
        if self.nodes_per_switch is not None and not 1 <= self.nodes_per_switch <= self.nodes:
            raise ValueError(f"topology.nodes_per_switch must be in 1..{self.nodes} (the nodes), got {self.nodes_per_switch}")
        if self.nodes_per_switch is not None and self.nodes % self.nodes_per_switch:
            raise ValueError(f"topology.nodes_per_switch: {self.nodes_per_switch} does not divide the {self.nodes} nodes")
        if self.node_names is not None:
            if len(self.node_names) != self.nodes:
                raise ValueError(f"topology.node_names: {len(self.node_names)} names for {self.nodes} nodes")
            if len(set(self.node_names)) != len(self.node_names):
                raise ValueError("topology.node_names: a name is given twice")
            for name in self.node_names:
                if not isinstance(name, str) or not _NODE_NAME.fullmatch(name):
                    raise ValueError(
                        f"topology.node_names: a node name is 1-64 of A-Z, a-z, 0-9, '_', '.' and '-', got {str(name)[:80]!r}"
                    )

    @property
    def nodes(self) -> int:
        """Nodes in the replica (1 without ``gpus_per_node``)."""
        return 1 if self.gpus_per_node is None else self.gpus // self.gpus_per_node

    @property
    def switches(self) -> int:
        """Leaf or rail switches (0 without ``nodes_per_switch`` or ``rails``)."""
        if self.gpus_per_node is None:
            return 0
        groups = 1 if self.nodes_per_switch is None else self.nodes // self.nodes_per_switch
        if self.rails:
            return groups * self.gpus_per_node
        return 0 if self.nodes_per_switch is None else groups

    def node(self, g: int) -> int:
        """The node of GPU ``g`` (0 without ``gpus_per_node``)."""
        return 0 if self.gpus_per_node is None else g // self.gpus_per_node

    def node_gpus(self, v: int) -> range:
        """The GPUs of node ``v``, ascending."""
        per = self.gpus if self.gpus_per_node is None else self.gpus_per_node
        return range(v * per, (v + 1) * per)

    def node_name(self, v: int) -> str:
        """The name of node ``v`` (``node_names[v]`` or ``node<v>``)."""
        return self.node_names[v] if self.node_names is not None else f"node{v}"

    def component_node(self, component: Component) -> str | None:
        """The name of the node (host) ``component`` sits on, for the ledger's ``node`` column.

        A GPU's node; a link's (``"a17"``, or ``"a17,a18"`` when its ends sit on two nodes,
        in GPU order); a NIC's or an NVSwitch's node. None for a switch (it serves several
        nodes) and for any component of a replica without ``gpus_per_node``.

        >>> t = ReplicaTopology(16, gpus_per_node=8, node_names=("a17", "a18"))
        >>> t.component_node(gpu_component(9)), t.component_node(link_component(3, 12)), t.component_node(t.nic(1))
        ('a18', 'a17,a18', 'a18')
        """
        if self.gpus_per_node is None:
            return None
        if component.kind in (ComponentKind.GPU, ComponentKind.LINK):
            return ",".join(dict.fromkeys(self.node_name(self.node(g)) for g in component.ids))
        if component.kind in (ComponentKind.NIC, ComponentKind.NVSWITCH):
            return self.node_name(component.ids[0])
        return None

    def row_node(self, kind: str, component: str, gpu: int | None = None, peer_gpu: int | None = None) -> str | None:
        """:meth:`component_node` of the component a ledger row names: the one place a row's
        ``node`` is worked out (the verdicts', the actions' and the exporter's).

        Args:
            kind: the row's ``component_kind``; component: its ``component`` (``nic:a18/rail5``:
                a NIC's or NVSwitch's node is the one so named); gpu, peer_gpu: its GPU ids
                (a GPU's and a link's ends), None where the row has none.

        Returns:
            As :meth:`component_node`; None also for a GPU outside the replica and a NIC or
            NVSwitch naming a node this topology does not have.

        >>> t = ReplicaTopology(16, gpus_per_node=8, node_names=("a17", "a18"))
        >>> t.row_node("gpu", "gpu:9", 9), t.row_node("link", "link:3-12", 3, 12), t.row_node("nic", "nic:a18/rail5")
        ('a18', 'a17,a18', 'a18')
        """
        if self.gpus_per_node is None:
            return None
        inside = [g for g in (gpu, peer_gpu) if g is not None and 0 <= g < self.gpus]
        if kind == ComponentKind.GPU and gpu is not None and inside == [gpu]:
            return self.component_node(gpu_component(gpu))
        if kind == ComponentKind.LINK and gpu is not None and peer_gpu is not None and len(inside) == 2 and gpu != peer_gpu:
            return self.component_node(link_component(gpu, peer_gpu))
        if kind in (ComponentKind.NIC, ComponentKind.NVSWITCH):  # the node it names, if this topology has it
            name = component.partition(":")[2].split("/", 1)[0]
            return name if any(self.node_name(v) == name for v in range(self.nodes)) else None
        return None

    def named_by_hosts(self, hosts: Sequence[str]) -> tuple[ReplicaTopology, str | None]:
        """This topology with its nodes named after the hosts the GPUs run on, as an executor
        reads them (``hosts[g]``: GPU ``g``'s host, e.g. a Ray actor's hostname), where the
        fleet file names none.

        Returns:
            ``(topology, None)``: named by the hosts, or unchanged where the fleet file names the
            nodes or there is no ``gpus_per_node`` (nothing to check the hosts against);
            ``(self, why)`` where the hosts do not fit ``gpus_per_node``: ``why`` is one line
            (a node's GPUs on two hosts, two nodes on one host, a host per GPU missing, or a
            host name the ledger cannot hold), and the nodes keep their ``node<v>`` names.

        >>> t, why = ReplicaTopology(4, gpus_per_node=2).named_by_hosts(["a17", "a17", "a18", "a18"])
        >>> t.node_names, why
        (('a17', 'a18'), None)
        >>> ReplicaTopology(4, gpus_per_node=2).named_by_hosts(["h"] * 4)[1]
        'nodes 0 and 1 (gpus_per_node 2) both run on host h'
        """
        if self.node_names is not None or self.gpus_per_node is None:
            return self, None
        if len(hosts) != self.gpus:
            return self, f"{len(hosts)} hosts for {self.gpus} GPUs"
        names: list[str] = []
        for v in range(self.nodes):
            on = list(dict.fromkeys(hosts[g] for g in self.node_gpus(v)))
            if len(on) > 1:
                return (
                    self,
                    f"node {v} (GPUs {v * self.gpus_per_node}..{(v + 1) * self.gpus_per_node - 1}) runs on hosts {', '.join(on[:3])}",
                )
            if on[0] in names:
                return self, f"nodes {names.index(on[0])} and {v} (gpus_per_node {self.gpus_per_node}) both run on host {on[0]}"
            if not _NODE_NAME.fullmatch(on[0]):
                return self, f"host name {on[0][:80]!r} is not a node name (1-64 of A-Z, a-z, 0-9, '_', '.', '-')"
            names.append(on[0])
        return replace(self, node_names=tuple(names)), None

    @cached_property
    def _node_of(self) -> tuple[int, ...]:
        return tuple(self.node(g) for g in range(self.gpus))

    # -- the graph ------------------------------------------------------------------------

    @cached_property
    def graph(self) -> nx.Graph:
        """The replica as an undirected graph of its GPUs and shared components.

        Vertices are :data:`Vertex` keys (``("gpu", 9)``, ``("nvswitch", 1)``, ``("nic", 1)``
        or ``("nic", 1, 5)``, ``("switch", 0)``, :data:`FABRIC`), with attribute ``kind``;
        edges have attribute ``layer``:

        * ``"nvlink"``: every GPU of a node to the node's NVSwitch (nodes of >= 2 GPUs);
        * ``"network"``, a tree rooted at :data:`FABRIC`: every GPU to its NIC (its node's, or
          with ``rails`` its rail's), every NIC to its leaf or rail switch, every switch to
          the fabric (without switches the NICs hang off the fabric; without
          ``gpus_per_node`` there are no NICs and the GPUs hang off the fabric). A one-node
          replica's NIC and switches are in the graph but carry no pair.

        >>> t = ReplicaTopology(8, gpus_per_node=4, nodes_per_switch=1)
        >>> sorted(t.graph[("nic", 1)])
        [('gpu', 4), ('gpu', 5), ('gpu', 6), ('gpu', 7), ('switch', 1)]
        """
        g = nx.Graph()
        g.add_nodes_from((("gpu", i) for i in range(self.gpus)), kind="gpu")
        g.add_node(FABRIC, kind="fabric")
        per = self.gpus_per_node
        if per is not None and per > 1:
            for v in range(self.nodes):
                g.add_node(("nvswitch", v), kind="nvswitch")
                g.add_edges_from(((("gpu", i), ("nvswitch", v)) for i in self.node_gpus(v)), layer="nvlink")
        if per is None:
            g.add_edges_from(((("gpu", i), FABRIC) for i in range(self.gpus)), layer="network")
            return g
        group_nodes = self.nodes_per_switch or self.nodes
        for i in range(self.gpus):
            v, r = divmod(i, per)
            nic: Vertex = ("nic", v, r) if self.rails else ("nic", v)
            up: Vertex = FABRIC
            if self.switches:
                up = ("switch", (v // group_nodes) * per + r) if self.rails else ("switch", v // group_nodes)
            g.add_node(nic, kind="nic")
            g.add_node(up, kind=up[0])
            g.add_edge(("gpu", i), nic, layer="network")
            g.add_edge(nic, up, layer="network")
            if up != FABRIC:
                g.add_edge(up, FABRIC, layer="network")
        return g

    @cached_property
    def _layers(self) -> tuple[nx.Graph, nx.DiGraph]:
        """The NVLink subgraph, and the network tree directed away from :data:`FABRIC`."""
        nvlink = self.graph.edge_subgraph((a, b) for a, b, layer in self.graph.edges(data="layer") if layer == "nvlink")
        network = self.graph.edge_subgraph((a, b) for a, b, layer in self.graph.edges(data="layer") if layer == "network")
        if not nx.is_tree(network):  # by construction; route() relies on one path per pair
            raise AssertionError("the network layer of a replica graph must be a tree")
        return nx.Graph(nvlink), nx.bfs_tree(network, FABRIC)

    @cached_property
    def _gpus_under(self) -> dict[Vertex, frozenset[int]]:
        """Per shared-component vertex, the GPUs it serves: an NVSwitch's NVLink neighbours, a
        NIC's or switch's descendants in the network tree."""
        nvlink, tree = self._layers
        out: dict[Vertex, frozenset[int]] = {}
        for vertex, kind in self.graph.nodes(data="kind"):
            if kind == "nvswitch":
                out[vertex] = frozenset(int(u[1]) for u in nvlink[vertex])
            elif kind in ("nic", "switch"):
                out[vertex] = frozenset(int(u[1]) for u in nx.descendants(tree, vertex) if u[0] == "gpu")
        return out

    def route(self, a: int, b: int) -> tuple[Vertex, ...]:
        """The path between GPUs ``a`` and ``b`` in :attr:`graph`, ends included: over their
        node's NVSwitch when they share a node (``("gpu", a), ("nvswitch", v), ("gpu", b)``),
        else the one path of the network tree (GPU, NIC, switch, ..., NIC, GPU).

        Raises:
            ValueError: if ``a == b`` or either is outside ``0..gpus-1``.

        >>> ReplicaTopology(16, gpus_per_node=4, nodes_per_switch=2).route(1, 9)
        (('gpu', 1), ('nic', 0), ('switch', 0), ('fabric',), ('switch', 1), ('nic', 2), ('gpu', 9))
        """
        a, b = link(a, b)
        if b >= self.gpus or a < 0:
            raise ValueError(f"GPUs {a} and {b}: the replica has GPUs 0..{self.gpus - 1}")
        if self.gpus_per_node is not None and self.gpus_per_node > 1 and self.node(a) == self.node(b):
            return (("gpu", a), ("nvswitch", self.node(a)), ("gpu", b))  # NVLink: the node's one NVSwitch
        up_a, up_b = self._to_fabric[a], self._to_fabric[b]
        common = len(up_a) - 1  # the tree path: up from a to the first vertex above b, down to b
        while common > 0 and up_a[common - 1] in up_b:
            common -= 1
        top = up_a[common]
        return up_a[: common + 1] + tuple(reversed(up_b[: up_b.index(top)]))

    @cached_property
    def _to_fabric(self) -> tuple[tuple[Vertex, ...], ...]:
        """Per GPU, its path up the network tree to :data:`FABRIC`, ends included."""
        _, tree = self._layers
        parent = {child: up for up, child in tree.edges}
        out = []
        for g in range(self.gpus):
            path: list[Vertex] = [("gpu", g)]
            while path[-1] != FABRIC:
                path.append(parent[path[-1]])
            out.append(tuple(path))
        return tuple(out)

    def carries(self, c: Component, a: int, b: int) -> bool:
        """True when the path between GPUs ``a`` and ``b`` (:meth:`route`) passes ``c``: a GPU
        at either end, the link itself, a shared component on the way.

        Raises:
            ValueError: as :meth:`route`.
        """
        path = self.route(a, b)
        if c.kind == ComponentKind.LINK:
            return c.ids == link(a, b)
        return (str(c.kind), *c.ids) in path

    # -- components ---------------------------------------------------------------------

    def nvswitch(self, v: int) -> Component:
        """The NVSwitch of node ``v``; its members are its NVLink neighbours in :attr:`graph`.

        Raises:
            ValueError: for a node outside the replica.
        """
        self._check_node(v)
        members = self._gpus_under.get(("nvswitch", v), frozenset(self.node_gpus(v)))  # a 1-GPU node has none
        return Component(ComponentKind.NVSWITCH, (v,), members)

    def nic(self, v: int, rail: int | None = None) -> Component:
        """The NIC of node ``v`` (``rail`` is required with ``rails`` and refused without);
        its members are the GPUs under it in :attr:`graph`.

        Raises:
            ValueError: for a node or rail outside the replica, or a rail given (or missing)
                against the topology's ``rails``.
        """
        self._check_node(v)
        if self.gpus_per_node is None:
            raise ValueError("a NIC needs topology.gpus_per_node")
        if self.rails != (rail is not None):
            raise ValueError("give [node, rail]: the topology has rails" if self.rails else "a rail needs topology.rails: true")
        if rail is not None and not 0 <= rail < self.gpus_per_node:
            raise ValueError(f"rail {rail} is outside 0..{self.gpus_per_node - 1}")
        ids = (v,) if rail is None else (v, rail)
        return Component(ComponentKind.NIC, ids, self._gpus_under[("nic", *ids)])

    def switch(self, s: int) -> Component:
        """Leaf or rail switch ``s``; its members are the GPUs under it in :attr:`graph`.

        Raises:
            ValueError: for a switch outside ``0..switches-1``.
        """
        if not 0 <= s < self.switches:
            raise ValueError(
                f"switch {s} is outside the topology's {self.switches} switches"
                if self.switches
                else "the topology has no switches (give nodes_per_switch or rails)"
            )
        return Component(ComponentKind.SWITCH, (s,), self._gpus_under[("switch", s)])

    def shared_components(self) -> list[Component]:
        """Every NVSwitch, NIC and switch of the replica: NVSwitches by node, NICs by node (and
        rail), then switches. Empty without ``gpus_per_node``."""
        if self.gpus_per_node is None:
            return []
        out = [self.nvswitch(v) for v in range(self.nodes)] if self.gpus_per_node > 1 else []
        if self.nodes > 1:
            if self.rails:
                out += [self.nic(v, r) for v in range(self.nodes) for r in range(self.gpus_per_node)]
            else:
                out += [self.nic(v) for v in range(self.nodes)]
            out += [self.switch(s) for s in range(self.switches)]
        return out

    def holds(self, c: Component, gpus: Iterable[int]) -> bool:
        """True when a probe over ``gpus`` holds a pair whose path passes ``c`` (:meth:`carries`;
        for a GPU: runs it).

        Read off :attr:`graph` without walking every pair: an NVSwitch carries exactly the pairs
        of its NVLink neighbours (its members M), so it is held by two GPUs of M. A NIC or
        switch c carries an inter-node pair (a, b) when the tree path passes c, that is, when
        one end lies below c and the other does not lie below the same child of c; every child
        of a NIC (a GPU) or of a switch (a NIC) lies within one node, so for an inter-node pair
        "not below the same child" always holds, and c is held exactly by a probe that meets M
        and spans two nodes (a GPU a of M and a GPU of another node than a's).
        """
        probe = gpus if isinstance(gpus, frozenset | set) else frozenset(gpus)
        hits = len(c.members & probe)
        spans = hits > 0 and c.kind in _SPANNED and len({self._node_of[g] for g in probe}) > 1
        return bool(_held(c.kind, hits, spans))

    def holds_matrix(self, components: Sequence[Component], probes: Sequence[Iterable[int]]) -> np.ndarray:
        """``out[p, j]``: probe ``p`` holds ``components[j]`` (:meth:`holds`, vectorized).

        Returns:
            A bool array of shape ``(len(probes), len(components))``.

        Notes:
            The probes are one (P, k) array of GPU ids (padded with the id n), so memory is
            O(P k), not O(P n): each component is a lookup table over the n GPUs.
        """
        return self.holds_matrix_sorted(components, [sorted(set(p)) for p in probes])

    def holds_matrix_sorted(self, components: Sequence[Component], rows: Sequence[Sequence[int]]) -> np.ndarray:
        """:meth:`holds_matrix` of probes given as ascending lists of distinct GPU ids (``rows``),
        which it does not check."""
        ids_of = np.full((len(rows), max((len(r) for r in rows), default=0) or 1), self.gpus, dtype=np.int64)
        by_size: dict[int, list[int]] = {}
        for i, r in enumerate(rows):
            by_size.setdefault(len(r), []).append(i)
        for size, group in by_size.items():
            if size:
                ids_of[group, :size] = np.asarray([rows[i] for i in group], dtype=np.int64)
        return self.holds_matrix_ids(components, ids_of)

    def holds_matrix_ids(self, components: Sequence[Component], ids_of: np.ndarray) -> np.ndarray:
        """:meth:`holds_matrix` of probes given as a ``(P, w)`` integer array of distinct GPU
        ids per row, padded with ``gpus`` (the replica's size) where a probe is shorter; which
        it does not check. Returns a ``(P, len(components))`` boolean array."""
        node_of = np.append(np.asarray(self._node_of, dtype=np.int64), -1)[ids_of]  # -1 for the padding
        spans = ((node_of != node_of[:, :1]) & (ids_of < self.gpus)).any(axis=1)  # GPUs of two nodes
        out = np.zeros((len(ids_of), len(components)), dtype=bool)
        for j, c in enumerate(components):
            inset = np.zeros(self.gpus + 1, dtype=bool)
            inset[np.fromiter(c.members, dtype=np.int64)] = True
            out[:, j] = _held(c.kind, inset[ids_of].sum(axis=1), spans)
        return out

    def name(self, c: Component) -> str:
        """The ledger's component: ``gpu:9``, ``link:3-21``, ``nvswitch:node3``, ``nic:node3``,
        ``nic:node3/rail5``, ``switch:1`` (node names from ``node_names`` where given)."""
        if c.kind == ComponentKind.GPU:
            return f"gpu:{c.ids[0]}"
        if c.kind == ComponentKind.LINK:
            return f"link:{c.ids[0]}-{c.ids[1]}"
        if c.kind == ComponentKind.SWITCH:
            return f"switch:{c.ids[0]}"
        where = self.node_name(c.ids[0])
        if c.kind == ComponentKind.NIC and len(c.ids) == 2:
            return f"nic:{where}/rail{c.ids[1]}"
        return f"{c.kind}:{where}"

    def _check_node(self, v: int) -> None:
        if not 0 <= v < self.nodes:
            raise ValueError(f"node {v} is outside 0..{self.nodes - 1}")
