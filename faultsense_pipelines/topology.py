"""A serving replica as a graph of GPUs and GPU-to-GPU paths.

FaultSense (APSys '26, §4.2) abstracts a replica of ``n`` GPUs joined by all-to-all as the
complete undirected graph G = (V, E): vertices are GPUs, edges the logical GPU-to-GPU paths,
|E| = n(n-1)/2. A probe of size k tests its k vertices and the k(k-1)/2 edges among them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations

import networkx as nx

__all__ = ["Link", "all_links", "link", "probe_links", "replica_graph"]

#: A GPU-to-GPU path, always stored with the smaller GPU id first.
Link = tuple[int, int]


def link(a: int, b: int) -> Link:
    """Return the path between GPUs ``a`` and ``b`` as a sorted pair.

    Raises:
        ValueError: if ``a == b`` (a GPU has no path to itself).
    """
    if a == b:
        raise ValueError(f"a link joins two different GPUs, got ({a}, {b})")
    return (a, b) if a < b else (b, a)


def probe_links(gpus: Iterable[int]) -> list[Link]:
    """All k(k-1)/2 paths tested by a probe over ``gpus``, as sorted pairs."""
    return [link(a, b) for a, b in combinations(sorted(set(gpus)), 2)]


def all_links(n: int) -> list[Link]:
    """All n(n-1)/2 paths of an ``n``-GPU replica, in lexicographic order."""
    return list(combinations(range(n), 2))


def replica_graph(n: int, gpus_per_node: int | None = None, edges: Sequence[Link] | None = None) -> nx.Graph:
    """Build the replica graph of ``n`` GPUs (ids ``0..n-1``).

    Args:
        n: number of GPUs in the replica (>= 1).
        gpus_per_node: if given, every GPU carries a ``node`` attribute
            ``gpu // gpus_per_node`` (the host it sits on), for shared-component analysis.
        edges: logical paths; the complete graph (all-to-all) when omitted.

    Returns:
        An undirected :class:`networkx.Graph`; edge attribute ``intra_node`` is set when
        ``gpus_per_node`` is given.

    Raises:
        ValueError: if ``n < 1``, ``gpus_per_node < 1`` or an edge names an unknown GPU.
    """
    if n < 1:
        raise ValueError(f"gpus must be >= 1, got {n}")
    if gpus_per_node is not None and gpus_per_node < 1:
        raise ValueError(f"gpus_per_node must be >= 1, got {gpus_per_node}")
    g = nx.complete_graph(n) if edges is None else nx.empty_graph(n)
    if edges is not None:
        for a, b in edges:
            if not (0 <= a < n and 0 <= b < n) or a == b:
                raise ValueError(f"edge ({a}, {b}) is not a path between two GPUs of 0..{n - 1}")
            g.add_edge(a, b)
    if gpus_per_node is not None:
        nx.set_node_attributes(g, {v: v // gpus_per_node for v in g.nodes}, "node")
        nx.set_edge_attributes(g, {(a, b): a // gpus_per_node == b // gpus_per_node for a, b in g.edges}, "intra_node")
    return g
