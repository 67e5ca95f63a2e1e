"""Arrange probes into rounds of GPU-disjoint probes that can run at the same time.

A *round* is a set of probes no two of which share a GPU; a GPU in r probes forces at least
r rounds, so max r (about ceil((n-1)/(k-1)) for a good cover) is a lower bound. Finding the
fewest rounds is colouring the probes' conflict graph; here first fit is run over a few
probe orders -- the construction's own order (designs list a parallel class at a time), the
largest-first order, and a DSatur-style order -- and the fewest rounds win.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["first_fit_rounds", "ordered_rounds", "dsatur_rounds", "plan_rounds", "rounds_lower_bound"]


def ordered_rounds(probes: Sequence[Sequence[int]], n: int, order: Sequence[int] | None = None) -> list[list[int]]:
    """First fit in ``order`` (default: index order): each probe joins the first round where its GPUs are idle.

    Returns:
        Rounds as sorted lists of probe indices; every index appears in exactly one round.

    Notes:
        O(P * R * k) for P probes and R rounds, with one (R, n) boolean busy matrix.

    >>> ordered_rounds([(0, 1), (2, 3), (1, 2), (0, 3)], 4)
    [[0, 1], [2, 3]]
    """
    order = range(len(probes)) if order is None else order
    busy = np.zeros((16, n), dtype=bool)  # busy[r] = GPUs used in round r (grown by doubling)
    rounds: list[list[int]] = []
    for i in order:
        gpus = np.asarray(probes[i], dtype=np.int64)
        free = np.flatnonzero(~busy[: len(rounds), gpus].any(axis=1))
        r = int(free[0]) if len(free) else len(rounds)
        if r == len(rounds):
            rounds.append([])
            if r == len(busy):
                busy = np.vstack([busy, np.zeros_like(busy)])
        rounds[r].append(i)
        busy[r, gpus] = True
    return [sorted(r) for r in rounds]


def first_fit_rounds(probes: Sequence[Sequence[int]], n: int) -> list[list[int]]:
    """First fit, largest probes first (ties by index)."""
    return ordered_rounds(probes, n, sorted(range(len(probes)), key=lambda i: (-len(probes[i]), i)))


def dsatur_rounds(probes: Sequence[Sequence[int]], n: int) -> list[list[int]]:
    """DSatur-style colouring of the probe conflict graph (probes sharing a GPU conflict).

    Repeatedly places the unplaced probe whose GPUs are busy in the most distinct rounds
    (ties: most GPUs, then smallest index) into the first round where its GPUs are idle.

    Notes:
        O(P^2) in numpy; used for covers of up to a few thousand probes.

    References:
        D. Brélaz, "New methods to color the vertices of a graph", CACM 22(4), 1979.
    """
    p = len(probes)
    if p == 0:
        return []
    members = np.zeros((p, n), dtype=bool)
    for i, b in enumerate(probes):
        members[i, list(b)] = True
    size = members.sum(axis=1)
    m = members.astype(np.float32)
    conflict = (m @ m.T) > 0  # (P, P): probes sharing a GPU
    saturation = np.zeros(p, dtype=np.int64)
    blocked = np.zeros((p, p), dtype=bool)  # blocked[i, r]: probe i conflicts with round r
    placed = np.zeros(p, dtype=bool)
    rounds: list[list[int]] = []
    for _ in range(p):
        key = np.where(placed, -1, saturation * (n + 1) + size)
        i = int(np.argmax(key))
        free = np.flatnonzero(~blocked[i, : len(rounds)])
        r = int(free[0]) if len(free) else len(rounds)
        if r == len(rounds):
            rounds.append([])
        rounds[r].append(i)
        placed[i] = True
        newly = ~blocked[:, r] & conflict[i]
        blocked[newly, r] = True
        saturation[newly] += 1
    return [sorted(r) for r in rounds]


def rounds_lower_bound(probes: Sequence[Sequence[int]], n: int) -> int:
    """The most probes any one GPU is in: no schedule has fewer rounds."""
    use = np.zeros(n, dtype=np.int64)
    for b in probes:
        use[list(b)] += 1
    return int(use.max()) if len(probes) else 0


def plan_rounds(probes: Sequence[Sequence[int]], n: int, dsatur_limit: int = 3000) -> list[list[int]]:
    """The fewest rounds among first fit in construction order, largest first, and DSatur.

    DSatur is only tried for covers of at most ``dsatur_limit`` probes (its cost is quadratic).

    >>> plan_rounds([(0, 1, 2, 3), (4, 5, 6, 7), (0, 1, 4, 5), (2, 3, 6, 7), (0, 2, 4, 6), (1, 3, 5, 7)], 8)
    [[0, 1], [2, 3], [4, 5]]
    """
    best = ordered_rounds(probes, n)
    candidates = [first_fit_rounds]
    if len(probes) <= dsatur_limit:
        candidates.append(dsatur_rounds)
    for method in candidates:
        if len(best) <= rounds_lower_bound(probes, n):
            break
        other = method(probes, n)
        if len(other) < len(best):
            best = other
    return sorted(best, key=lambda r: r[0])
