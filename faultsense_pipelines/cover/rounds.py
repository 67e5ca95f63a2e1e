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

__all__ = [
    "first_fit_rounds",
    "ordered_rounds",
    "dsatur_rounds",
    "recolour_rounds",
    "plan_rounds",
    "rounds_lower_bound",
]


def ordered_rounds(probes: Sequence[Sequence[int]], n: int, order: Sequence[int] | None = None) -> list[list[int]]:
    """First fit in ``order`` (default: index order): each probe joins the first round where its GPUs are idle.

    Returns:
        Rounds as sorted lists of probe indices; every index appears in exactly one round.

    Notes:
        O(P * R) bit-mask tests for P probes and R rounds.

    >>> ordered_rounds([(0, 1), (2, 3), (1, 2), (0, 3)], 4)
    [[0, 1], [2, 3]]
    """
    order = range(len(probes)) if order is None else order
    masks = [sum(1 << g for g in set(p)) for p in probes]  # GPU sets as bit masks
    busy: list[int] = []  # busy[r] = GPUs used in round r
    rounds: list[list[int]] = []
    for i in order:
        mask = masks[i]
        for r, used in enumerate(busy):
            if not used & mask:
                busy[r] = used | mask
                rounds[r].append(i)
                break
        else:
            busy.append(mask)
            rounds.append([i])
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
    if not len(probes):
        return 0
    return int(np.bincount(np.concatenate([np.asarray(b, dtype=np.int64) for b in probes]), minlength=n).max())


def recolour_rounds(
    probes: Sequence[Sequence[int]], n: int, rounds: Sequence[Sequence[int]], passes: int = 30, seed: int = 0
) -> list[list[int]]:
    """Iterated greedy: re-run first fit with whole rounds reordered; never more rounds.

    Listing the probes round by round and running first fit again cannot need more rounds
    (each probe fits at the latest where it was); reordering the rounds (largest first,
    reversed, shuffled) lets later probes move into earlier rounds and rounds empty out.

    References:
        J. C. Culberson, F. Luo, "Exploring the k-colorable landscape with iterated greedy",
        DIMACS Series 26 (1996).
    """
    rng = np.random.default_rng(seed)
    best = [list(r) for r in rounds]
    current = best
    for t in range(passes):
        if len(best) <= rounds_lower_bound(probes, n):
            break
        if t % 3 == 0:
            order_rounds = sorted(current, key=len, reverse=True)
        elif t % 3 == 1:
            order_rounds = current[::-1]
        else:
            order_rounds = [current[i] for i in rng.permutation(len(current))]
        current = ordered_rounds(probes, n, [i for r in order_rounds for i in r])
        if len(current) < len(best):
            best = current
    return best


def plan_rounds(
    probes: Sequence[Sequence[int]], n: int, dsatur_limit: int = 3000, passes: int = 6
) -> list[list[int]]:
    """The fewest rounds among first fit in construction order, largest first, and DSatur,
    then improved by ``passes`` of :func:`recolour_rounds`.

    DSatur is only tried for covers of at most ``dsatur_limit`` probes (its cost is quadratic).

    >>> plan_rounds([(0, 1, 2, 3), (4, 5, 6, 7), (0, 1, 4, 5), (2, 3, 6, 7), (0, 2, 4, 6), (1, 3, 5, 7)], 8)
    [[0, 1], [2, 3], [4, 5]]
    """
    floor = rounds_lower_bound(probes, n)
    best = ordered_rounds(probes, n)
    candidates = [first_fit_rounds]
    if len(probes) <= dsatur_limit:
        candidates.append(dsatur_rounds)
    for method in candidates:
        if len(best) <= floor * 1.3:  # close enough: the quadratic methods rarely beat it
            break
        other = method(probes, n)
        if len(other) < len(best):
            best = other
    if len(best) > floor + 1:
        best = recolour_rounds(probes, n, best, passes=passes)
    return sorted(best, key=lambda r: r[0])
