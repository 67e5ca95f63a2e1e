"""Offline search for few rounds of a cover: tabu search on a fixed number of rounds (needs numba).

A round is a set of GPU-disjoint probes. With the number of rounds R fixed, every probe gets
a round and the cost is the number of *clashes*, sum over rounds and GPUs of
max(0, probes of the round holding the GPU - 1); cost 0 is a schedule in R rounds. Each step
moves the probe that most lowers the cost (among probes in a clash, over all other
rounds), never back to a round it left within the last ~10 + clashing/2 steps unless that
beats the best cost so far (TabuCol, lifted from graph colouring to probes sharing GPUs).
Listing the probes round by round then lets first fit in that order (what ``best`` does for
a table cover) use at most R rounds: a probe of round j meets only probes of earlier rounds
among those placed before it, so it lands in round j or earlier.

References:
    A. Hertz, D. de Werra, "Using tabu search techniques for graph coloring", Computing 39
    (1987) 345-351.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from faultsense_pipelines.cover.rounds import ordered_rounds, plan_rounds

__all__ = ["fewest_rounds", "schedule_in_rounds", "tabu_colouring"]


@njit(cache=False)
def tabu_colouring(probes, n, rounds, steps, seed, colour):  # pragma: no cover - compiled
    """TabuCol on probes sharing GPUs: ``probes`` (count x k int64, -1 pads), ``colour`` the start.

    Returns (fewest clashes met, the colouring reaching it); ``colour`` is changed in place.
    """
    np.random.seed(seed)
    count, k = probes.shape
    occ = np.zeros((rounds, n), np.int64)
    for p in range(count):
        for s in range(k):
            if probes[p, s] >= 0:
                occ[colour[p], probes[p, s]] += 1
    cost = 0
    for r in range(rounds):
        for v in range(n):
            if occ[r, v] > 1:
                cost += occ[r, v] - 1
    tabu_until = np.zeros((count, rounds), np.int64)
    best = cost
    best_colour = colour.copy()
    clashing = np.empty(count, np.int64)
    for step in range(steps):
        if cost == 0:
            break
        nc = 0
        for p in range(count):
            for s in range(k):
                v = probes[p, s]
                if v >= 0 and occ[colour[p], v] > 1:
                    clashing[nc] = p
                    nc += 1
                    break
        best_delta, move_p, move_r, ties = 1 << 30, -1, -1, 0
        for i in range(nc):
            p = clashing[i]
            c = colour[p]
            loss = 0
            for s in range(k):
                v = probes[p, s]
                if v >= 0 and occ[c, v] > 1:
                    loss += 1
            for r in range(rounds):
                if r == c:
                    continue
                gain = 0
                for s in range(k):
                    v = probes[p, s]
                    if v >= 0 and occ[r, v] > 0:
                        gain += 1
                delta = gain - loss
                if tabu_until[p, r] > step and cost + delta >= best:
                    continue
                if delta < best_delta:
                    best_delta, move_p, move_r, ties = delta, p, r, 1
                elif delta == best_delta:
                    ties += 1
                    if np.random.randint(ties) == 0:
                        move_p, move_r = p, r
        if move_p < 0:
            continue
        c = colour[move_p]
        for s in range(k):
            v = probes[move_p, s]
            if v >= 0:
                occ[c, v] -= 1
                occ[move_r, v] += 1
        colour[move_p] = move_r
        cost += best_delta
        tabu_until[move_p, c] = step + 10 + np.random.randint(10) + nc // 2
        if cost < best:
            best = cost
            best_colour[:] = colour
    return best, best_colour


def schedule_in_rounds(
    probes: Sequence[Sequence[int]], n: int, rounds: int, *, steps: int = 300_000, seed: int = 0
) -> list[list[int]] | None:
    """Probe indices in ``rounds`` GPU-disjoint rounds, or None if the tabu search found none.

    Starts from first fit in index order, the rounds beyond ``rounds`` folded onto the first ones.
    """
    k = max(len(b) for b in probes)
    table = np.full((len(probes), k), -1, np.int64)
    for i, b in enumerate(probes):
        table[i, : len(b)] = b
    colour = np.zeros(len(probes), np.int64)
    for r, ids in enumerate(ordered_rounds(probes, n)):
        colour[ids] = r % rounds
    clashes, found = tabu_colouring(table, n, rounds, steps, seed, colour)
    if clashes:
        return None
    return [[int(i) for i in np.flatnonzero(found == r)] for r in range(rounds) if (found == r).any()]


def fewest_rounds(probes: Sequence[Sequence[int]], n: int, *, steps: int = 300_000, seed: int = 0) -> list[list[int]]:
    """The fewest rounds found: ``plan_rounds``' R, then R - 1, R - 2, ... by tabu search until one fails."""
    best = plan_rounds(probes, n)
    while True:
        found = schedule_in_rounds(probes, n, len(best) - 1, steps=steps, seed=seed)
        if found is None:
            return best
        best = found
