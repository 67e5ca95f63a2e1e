"""Local search for small pair covers: simulated annealing on the number of uncovered pairs (offline).

Given b probes of size k on n GPUs, the cost is the number of GPU pairs no probe contains; a
cost of 0 is a cover with b probes. A move takes an uncovered pair {u, v}, a probe holding u,
and swaps one of its other GPUs for v (Nurmela and Östergård's neighbourhood); moves that
raise the cost by d are accepted with probability exp(-d / T) while T cools geometrically.
Seeded, so a given (n, k, b, seed, budget) always gives the same result.

References:
    K. J. Nurmela, P. R. J. Östergård, "Upper bounds for covering designs by simulated
    annealing", Congressus Numerantium 96 (1993) 93-111.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

__all__ = ["anneal_cover", "shrink_cover"]

Block = tuple[int, ...]


def anneal_cover(
    n: int,
    k: int,
    start: Sequence[Sequence[int]],
    *,
    seed: int = 0,
    iterations: int = 20000,
    t0: float = 1.5,
    t_end: float = 0.05,
    hole: int = 0,
) -> list[Block] | None:
    """Rearrange the size-``k`` probes ``start`` (on ``n`` GPUs) until they cover every pair.

    Args:
        n: GPUs (n > k).
        k: probe size; every probe of ``start`` must have exactly k distinct GPUs.
        start: initial probes (their number is kept).
        seed: random seed.
        iterations: move budget.
        t0: initial temperature (in uncovered pairs).
        t_end: final temperature; T cools geometrically from t0 to t_end over the budget.
        hole: the last ``hole`` GPUs form a hole: pairs among them need no probe (an
            incomplete cover, for groups that share "infinite" GPUs in
            ``faultsense_pipelines.cover.best``).

    Returns:
        Sorted probes covering every pair, or None if the budget ran out first.

    Notes:
        O(k) per move with an n x n pair-count table; O(iterations * k) in all.
    """
    rng = random.Random(seed)
    blocks = [list(b) for b in start]
    count = [[0] * n for _ in range(n)]
    for x in range(n - hole, n):  # hole pairs count as covered once more, so they never become uncovered
        for y in range(n - hole, n):
            count[x][y] = 1 if x != y else 0
    holding: list[list[int]] = [[] for _ in range(n)]  # probes holding each GPU
    for j, b in enumerate(blocks):
        for x in b:
            holding[x].append(j)
            for y in b:
                if x != y:
                    count[x][y] += 1
    uncovered = [(x, y) for x in range(n) for y in range(x + 1, n) if count[x][y] == 0]
    where = {pair: i for i, pair in enumerate(uncovered)}

    def mark(x: int, y: int, delta: int) -> None:
        key = (x, y) if x < y else (y, x)
        before = count[x][y]
        count[x][y] = count[y][x] = before + delta
        if before == 0:  # became covered
            i = where.pop(key)
            last = uncovered.pop()
            if i < len(uncovered):
                uncovered[i] = last
                where[last] = i
        elif before + delta == 0:
            where[key] = len(uncovered)
            uncovered.append(key)

    temperature = t0
    cooling = (t_end / t0) ** (1.0 / max(iterations, 1))
    for _ in range(iterations):
        if not uncovered:
            return [tuple(sorted(b)) for b in blocks]
        u, v = uncovered[rng.randrange(len(uncovered))]
        if rng.random() < 0.5:
            u, v = v, u
        if not holding[u]:
            continue
        j = holding[u][rng.randrange(len(holding[u]))]
        b = blocks[j]
        w = b[rng.randrange(k)]
        if w == u:
            continue
        lost = sum(1 for x in b if x != w and count[w][x] == 1)
        gained = sum(1 for x in b if x != w and count[v][x] == 0)
        delta = lost - gained
        temperature *= cooling
        if delta > 0 and rng.random() >= math.exp(-delta / max(temperature, 1e-9)):
            continue
        for x in b:
            if x != w:
                mark(w, x, -1)
                mark(v, x, +1)
        b[b.index(w)] = v
        holding[w].remove(j)
        holding[v].append(j)
    return [tuple(sorted(b)) for b in blocks] if not uncovered else None


def shrink_cover(
    n: int,
    k: int,
    cover: Sequence[Sequence[int]],
    floor: int,
    *,
    seed: int = 0,
    iterations: int = 20000,
    hole: int = 0,
) -> list[Block]:
    """Try to cover with fewer probes: drop one probe, pad the rest to k GPUs, anneal; repeat.

    Stops at ``floor`` probes (a lower bound) or at the first size the budget cannot reach.
    With ``hole``, pairs among the last ``hole`` GPUs need no probe (see :func:`anneal_cover`).

    Returns:
        The smallest cover found (``cover`` itself if no smaller one was found).
    """
    best = [tuple(sorted(b)) for b in cover]
    rng = random.Random(seed)
    while len(best) > floor:
        use = [0] * n
        for b in best:
            for x in b:
                use[x] += 1
        # drop the probe whose GPUs are most covered elsewhere, pad the rest with light GPUs
        drop = max(range(len(best)), key=lambda j: (sum(use[x] for x in best[j]), -j))
        start = []
        for j, b in enumerate(best):
            if j == drop:
                continue
            pad = sorted((x for x in range(n) if x not in b), key=lambda x: (use[x], rng.random()))
            start.append(list(b) + pad[: k - len(b)])
        found = anneal_cover(n, k, start, seed=rng.randrange(2**31), iterations=iterations, hole=hole)
        if found is None:
            break
        best = found
    return best
