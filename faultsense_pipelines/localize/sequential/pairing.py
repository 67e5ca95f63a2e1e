"""Paired probes: a test probe and a reference of the same shape that differs in one part.

A paired test is only as fair as its pair. On a real replica a probe whose GPUs span more
nodes crosses NICs and switches that an intra-node probe does not, so its healthy latency is
higher; a reference of another shape is a biased reference. Every pair built here therefore
has the same *shape* on both sides (:func:`shape`): the same multiset of GPUs per node, and
the same number of GPU pairs inside a node, under one switch and across switches.

A pair *swaps* one GPU: ``T = {g} | Q`` and ``R = {h} | Q``. Everything in ``Q`` -- its GPUs,
the paths among them -- is common to both sides, so a slow part of ``Q`` slows both and can
hide ``g``'s fault (a loss of power) but can never make ``T`` look slower than ``R`` (the
test's null is untouched). ``R`` is slower when ``h`` or its paths to ``Q`` are slow: that
too only hides a fault. What the pair's test rejects is "the swapped-in side (``g`` and its
paths to ``Q``) is no slower than the swapped-out side".
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["Layout", "RoundOracle", "shape", "shaped_reference", "swap_partner"]

#: ``round((test_1, ..., test_m, reference)) -> (test_1_ms, ..., test_m_ms, reference_ms)``: ``r``
#: latencies (ms) of each probe, all ``(m + 1) r`` measured in one uniformly random order;
#: ``None`` when a measurement failed (the round is then evidence of nothing). A claim's round
#: is a pair (``m = 1``); a group of search reads shares one reference (``m > 1``).
RoundOracle = Callable[[Sequence[tuple[int, ...]]], "tuple[tuple[float, ...], ...] | None"]


@dataclass(frozen=True)
class Layout:
    """Where each GPU sits: its node and its node's leaf switch.

    Args:
        node: node of each GPU, length ``n``.
        switch: leaf switch of each node (indexed by node), or empty when all nodes share one.
        rail: rail of each GPU in a rail-optimized replica (its NIC and rail switch), or empty.

    A flat replica (no topology) is one node: every GPU is alike.
    """

    node: tuple[int, ...]
    switch: tuple[int, ...] = ()
    rail: tuple[int, ...] = ()

    @classmethod
    def flat(cls, n: int) -> Layout:
        """``n`` GPUs on one node."""
        return cls(tuple([0] * n))

    def switch_of(self, g: int) -> int:
        """Leaf switch of GPU ``g`` (0 when the layout names none)."""
        return self.switch[self.node[g]] if self.switch else 0


def shape(gpus: Sequence[int], layout: Layout) -> tuple[tuple[int, ...], tuple[int, int, int]]:
    """The shape of a probe: sorted GPUs-per-node counts and its pair kinds.

    Returns:
        ``(counts, (same_node, same_switch, cross_switch))``: the descending counts of the
        probe's GPUs per node, and how many of its GPU pairs lie inside one node, between
        nodes under one leaf switch, and across switches.

    >>> lay = Layout((0, 0, 1, 1), (0, 1))
    >>> shape([0, 1, 2], lay)
    ((2, 1), (1, 0, 2))
    """
    per: dict[int, int] = {}
    for g in gpus:
        per[layout.node[g]] = per.get(layout.node[g], 0) + 1
    same = cross_sw = same_sw = 0
    gs = list(gpus)
    for i, a in enumerate(gs):
        for b in gs[i + 1 :]:
            if layout.node[a] == layout.node[b]:
                same += 1
            elif layout.switch_of(a) == layout.switch_of(b):
                same_sw += 1
            else:
                cross_sw += 1
    return tuple(sorted(per.values(), reverse=True)), (same, same_sw, cross_sw)


def swap_partner(g: int, rest: Sequence[int], pool: Sequence[int], layout: Layout, rng: random.Random) -> int | None:
    """A GPU ``h`` from ``pool`` such that ``{h} | rest`` has the shape of ``{g} | rest``.

    Prefers a GPU on ``g``'s own node (then every path of ``h`` is of the kind of ``g``'s);
    otherwise any pool GPU that keeps the shape. On a rail-optimized replica ``h`` is on
    ``g``'s rail, so its inter-node paths use the same rail switch. ``rest`` and ``g`` are
    never chosen.

    Returns:
        The GPU, or ``None`` when no pool GPU keeps the shape.
    """
    taken = set(rest) | {g}
    if layout.rail:
        pool = [h for h in pool if layout.rail[h] == layout.rail[g]]
    target = shape([g, *rest], layout)
    same_node = [h for h in pool if h not in taken and layout.node[h] == layout.node[g]]
    others = [h for h in pool if h not in taken and layout.node[h] != layout.node[g]]
    rng.shuffle(same_node)
    rng.shuffle(others)
    for h in (*same_node, *others):
        if shape([h, *rest], layout) == target:
            return h
    return None


def shaped_reference(
    test: Sequence[int], pool: Sequence[int], layout: Layout, rng: random.Random, *, tries: int = 16
) -> tuple[int, ...] | None:
    """A probe of ``test``'s shape made of ``pool`` GPUs outside ``test``, or ``None``.

    Swapping GPUs one at a time (:func:`swap_partner`) fails when the test holds most of a
    node (five GPUs of an 8-GPU node leave three to swap in). Here the whole probe moves:
    each node of the test maps to a distinct node with as many free pool GPUs (its own node
    first), nodes under one leaf switch to nodes under one switch and nodes under different
    switches to different switches, and on a rail-optimized replica each GPU to one of its
    own rail. The result is checked with :func:`shape`.

    Args:
        test: the test probe's GPUs.
        pool: GPUs allowed in the reference, most trusted first.
        layout: where the GPUs sit.
        rng: seeded draws (which free GPUs, which nodes).
        tries: random node orders tried before giving up.

    Returns:
        The reference's GPUs, ascending, or ``None`` when no such probe exists in ``pool``
        (or none was found in ``tries`` draws).
    """
    test_set = set(test)
    free: dict[int, list[int]] = {}
    for h in pool:
        if h not in test_set:
            free.setdefault(layout.node[h], []).append(h)
    by_node: dict[int, list[int]] = {}
    for g in test:
        by_node.setdefault(layout.node[g], []).append(g)
    target = shape(test, layout)
    nodes = sorted(by_node, key=lambda v: -len(by_node[v]))
    for attempt in range(tries):
        used: set[int] = set()
        switch_map: dict[int, int] = {}
        ref: list[int] = []
        for v in nodes:
            want = by_node[v]
            candidates = list(free)
            rng.shuffle(candidates)
            if attempt == 0:  # first try: every node onto itself where it fits
                candidates.sort(key=lambda u: u != v)
            chosen = None
            for u in candidates:
                if u in used:
                    continue
                sv, su = layout.switch[v] if layout.switch else 0, layout.switch[u] if layout.switch else 0
                if sv in switch_map and switch_map[sv] != su:
                    continue
                if sv not in switch_map and su in switch_map.values():
                    continue
                picked = _fill(want, free[u], layout)
                if picked is not None:
                    chosen = u
                    switch_map.setdefault(sv, su)
                    ref.extend(picked)
                    break
            if chosen is None:
                break
            used.add(chosen)
        else:
            if shape(ref, layout) == target:
                return tuple(sorted(ref))
    return None


def _fill(want: Sequence[int], free: Sequence[int], layout: Layout) -> list[int] | None:
    """One free GPU per GPU of ``want`` (of its rail on a rail-optimized replica), most
    trusted first, or ``None``."""
    left = list(free)
    out: list[int] = []
    for g in want:
        h = next((x for x in left if not layout.rail or layout.rail[x] == layout.rail[g]), None)
        if h is None:
            return None
        left.remove(h)
        out.append(h)
    return out
