"""Arrange probes into rounds of GPU-disjoint probes that can run at the same time.

A *round* is a set of probes no two of which share a GPU; a GPU in r probes forces at least
r rounds, so max r (about ceil((n-1)/(k-1)) for a good cover) is a lower bound, and so is
the number of probes over the most that fit side by side in n GPUs. Finding the fewest
rounds is colouring the probes' conflict graph; here first fit is run over a few probe
orders -- the construction's own order (designs list a parallel class at a time), the
largest-first order, and a DSatur-style order -- the fewest rounds are improved by iterated
greedy recolouring, and then by tabu search (TabuCol) for one round fewer at a time, with a
fixed budget of moves so that the result is deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain, pairwise

import numpy as np

__all__ = [
    "dsatur_rounds",
    "first_fit_rounds",
    "ordered_rounds",
    "plan_rounds",
    "recolour_rounds",
    "rounds_lower_bound",
    "tabu_rounds",
]


def ordered_rounds(probes: Sequence[Sequence[int]], n: int, order: Sequence[int] | None = None) -> list[list[int]]:
    """First fit in ``order`` (default: index order): each probe joins the first round where its GPUs are idle.

    Args:
        probes: GPU ids (0..n-1) of each probe.
        n: GPUs.
        order: the probe indices in the order they are placed (default: 0, 1, ...).

    Returns:
        Rounds as sorted lists of probe indices; every index appears in exactly one round.

    Notes:
        Each GPU keeps the rounds it is busy in as a bit mask; a probe's round is the lowest
        bit clear in the union of its GPUs' masks, so placing P probes of k GPUs in R rounds
        costs O(P k) bit-mask operations of R bits (not O(P R) round tests).

    >>> ordered_rounds([(0, 1), (2, 3), (1, 2), (0, 3)], 4)
    [[0, 1], [2, 3]]
    """
    if len(probes) >= _BATCHED_FROM:
        batched = _ordered_rounds_batched(probes, n, order)
        if batched is not None:
            return batched
    order = range(len(probes)) if order is None else order
    busy = [0] * n  # busy[g]: bit r set when GPU g is busy in round r
    rounds: list[list[int]] = []
    for i in order:
        gpus = probes[i]
        used = 0
        for g in gpus:
            used |= busy[g]
        r = (~used & (used + 1)).bit_length() - 1  # the lowest round none of its GPUs is busy in
        bit = 1 << r
        for g in gpus:
            busy[g] |= bit
        if r == len(rounds):
            rounds.append([i])
        else:
            rounds[r].append(i)
    return [sorted(r) for r in rounds]


#: Probes from which :func:`ordered_rounds` places GPU-disjoint runs of probes as arrays.
_BATCHED_FROM = 20_000


def _ordered_rounds_batched(probes: Sequence[Sequence[int]], n: int, order: Sequence[int] | None) -> list[list[int]] | None:
    """:func:`ordered_rounds` (the same rounds) for probes of one size with distinct GPUs, a run
    of consecutive GPU-disjoint probes (in ``order``) at a time; ``None`` where it does not apply.

    Probes of one run share no GPU, so placing one cannot change where another goes: each
    takes the first round where its GPUs are idle as the run began, found for the whole run
    at once in numpy. Each GPU's busy rounds are held as ``low`` (rounds 0..low-1 all busy)
    and a 62-bit mask of the busy rounds above it; a probe's round lies at or above the
    largest ``low`` of its GPUs. ``None`` (the caller places probe by probe) for probes of
    unequal sizes, a GPU twice in a probe or outside ``0..n-1``, or a GPU whose busy rounds
    spread more than 62 rounds beyond its ``low``.

    Notes:
        O(P k) numpy work in R runs of GPU-disjoint probes, plus a Python loop over the P
        probes to find the runs.
    """
    sizes = {len(p) for p in probes}
    if len(sizes) != 1:
        return None
    (k,) = sizes
    if k == 0:
        return None
    if n >= 2**31 or len(probes) * k >= 2**31:
        return None
    members = np.fromiter(chain.from_iterable(probes), dtype=np.int32, count=k * len(probes)).reshape(len(probes), k)
    index = np.arange(len(probes)) if order is None else np.asarray(order, dtype=np.int64)
    if len(index) != len(probes) or (len(index) and members.min(initial=0) < 0) or members.max(initial=0) >= n:
        return None
    G = members if order is None else members[index]  # row j: the j-th probe placed
    del members
    if k > 1 and not (np.diff(G, axis=1) > 0).all():  # not ascending: distinct once sorted?
        ordered = np.sort(G, axis=1)
        if not (ordered[:, 1:] != ordered[:, :-1]).all():
            return None
    # prev[j]: the last position before j holding one of probe j's GPUs (-1 if none)
    flat = G.ravel()
    by = np.argsort(flat.astype(np.int16) if n < 2**15 else flat, kind="stable")  # by GPU, then position
    prev_flat = np.full(len(flat), -1, dtype=np.int32)
    same = flat[by[1:]] == flat[by[:-1]]
    prev_flat[by[1:][same]] = by[:-1][same] // k  # int32 memory: a large cover has tens of millions of entries
    del by, same
    prev = prev_flat.reshape(len(G), k).max(axis=1)
    del prev_flat
    starts = [0]  # a run ends before the first probe sharing a GPU with one since the run began
    s, window = 0, 1024
    while s < len(G):
        hit = np.flatnonzero(prev[s + 1 : s + 1 + window] >= s)
        if len(hit):
            s += 1 + int(hit[0])
            starts.append(s)
        elif s + 1 + window >= len(G):
            break
        else:
            window *= 2  # a long run: look further (O(P) in all)
            continue
        window = max(1024, window // 2)
    starts.append(len(G))
    low = np.zeros(n, dtype=np.int64)
    rest = np.zeros(n, dtype=np.int64)
    placed = np.empty(len(G), dtype=np.int64)
    for a, b in pairwise(starts):
        g = G[a:b]
        low_g, rest_g = low[g], rest[g]
        top = low_g.max(axis=1)
        shift = top[:, None] - low_g
        used = np.bitwise_or.reduce(np.where(shift < 63, rest_g >> np.minimum(shift, 62), 0), axis=1)
        free = ~used & (used + 1)  # the lowest round at or above ``top`` none of its GPUs is busy in
        r = top + (np.frexp(free.astype(np.float64))[1] - 1)
        at = r[:, None] - low_g
        if (at >= 62).any():
            return None
        mask = rest_g | (np.int64(1) << at)
        ones = np.frexp((~mask & (mask + 1)).astype(np.float64))[1] - 1  # trailing busy rounds: into ``low``
        rest[g] = mask >> ones
        low[g] = low_g + ones
        placed[a:b] = r
    by_round = np.lexsort((index, placed))
    bounds = np.searchsorted(placed[by_round], np.arange(int(placed.max(initial=-1)) + 2))
    ids = index[by_round]
    return [ids[bounds[r] : bounds[r + 1]].tolist() for r in range(len(bounds) - 1)]


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
    """No schedule has fewer rounds: the most probes any one GPU is in, or the probes over the
    most probes that fit side by side in ``n`` GPUs (the smallest ones), if that is more.

    >>> rounds_lower_bound([(0, 1), (1, 2), (2, 3), (0, 3)], 4)   # every GPU in 2 probes
    2
    >>> rounds_lower_bound([(0, 1, 2), (3, 4, 5), (6, 7, 0)], 8)  # 8 GPUs hold 2 probes of 3
    2
    """
    if not len(probes):
        return 0
    replication = int(np.bincount(np.fromiter(chain.from_iterable(probes), dtype=np.int64), minlength=n).max())
    fit = int((np.cumsum(np.sort([len(b) for b in probes])) <= n).sum())
    return max(replication, -(-len(probes) // max(fit, 1)))


def _gpu_matrix(probes: Sequence[Sequence[int]], n: int) -> np.ndarray:
    """(P, k_max) GPU ids of each probe, padded with the dummy GPU n."""
    G = np.full((len(probes), max(len(b) for b in probes)), n, dtype=np.int64)
    for i, b in enumerate(probes):
        G[i, : len(b)] = sorted(set(b))
    return G


def tabu_rounds(
    probes: Sequence[Sequence[int]],
    n: int,
    rounds: Sequence[Sequence[int]],
    iterations: int = 3000,
    seed: int = 0,
    attempt: int = 1000,
) -> list[list[int]]:
    """Fewer rounds by tabu search: drop the smallest round, then repair, while ``iterations`` last.

    Each attempt at R - 1 rounds moves the probes of the smallest round to the rounds where
    they clash least, then runs TabuCol: the cost is the GPU clashes sum over (GPU, round) of
    max(0, probes - 1); a move puts one clashing probe into another round, the best move not
    tabu (or better than any seen) is taken, and a probe may not return to a round it left
    for 0.6 x (clashing probes) + 0..9 moves. An attempt ends at zero clashes (success: try
    one round fewer) or after ``attempt`` moves (the last schedule without clashes is kept).

    Args:
        probes: GPU ids of each probe.
        n: GPUs.
        rounds: a valid schedule (probe indices per round) to start from.
        iterations: most tabu moves in all attempts together.
        attempt: most moves for one number of rounds.
        seed: the tie-breaking generator's seed (same seed, same schedule).

    Returns:
        GPU-disjoint rounds, never more than ``rounds`` has.

    Notes:
        A move costs O(k r + c k R) for GPUs in r probes and c clashing probes.

    References:
        P. Galinier, J.-K. Hao, "Hybrid evolutionary algorithms for graph coloring",
        J. Combinatorial Optimization 3(4), 1999 -- TabuCol's move and tenure.
    """
    best = [list(r) for r in rounds]
    floor = rounds_lower_bound(probes, n)
    if len(best) <= floor or iterations <= 0:
        return best
    G = _gpu_matrix(probes, n)
    real = n > G
    by_gpu = _probes_by_gpu(G, n)
    rng = np.random.default_rng(seed)
    left = iterations
    while len(best) > floor and left > 0:
        colour = _drop_smallest(best, G, n)
        spent, found = _tabucol(G, real, by_gpu, n, colour, len(best) - 1, min(left, attempt), rng)
        left -= spent
        if found is None:
            break
        best = [np.flatnonzero(found == c).tolist() for c in range(len(best) - 1)]
    return best


def _probes_by_gpu(G: np.ndarray, n: int) -> list[np.ndarray]:
    """For each GPU 0..n-1, the ascending indices of the probes (rows of ``G``) holding it; O(P k log(P k))."""
    rows = np.repeat(np.arange(len(G)), G.shape[1])
    gpus = G.ravel()
    keep = gpus < n
    rows, gpus = rows[keep], gpus[keep]
    order = np.lexsort((rows, gpus))
    rows, gpus = rows[order], gpus[order]
    first = np.flatnonzero(np.r_[True, (gpus[1:] != gpus[:-1]) | (rows[1:] != rows[:-1])])  # a GPU twice in a probe: once
    rows, gpus = rows[first], gpus[first]
    bounds = np.searchsorted(gpus, np.arange(n + 1))
    return [rows[bounds[g] : bounds[g + 1]] for g in range(n)]


def _drop_smallest(rounds: list[list[int]], G: np.ndarray, n: int) -> np.ndarray:
    """Colours 0..R-2 for every probe: the smallest round's probes go where they clash least."""
    R = len(rounds) - 1
    drop = min(range(len(rounds)), key=lambda c: (len(rounds[c]), c))
    colour = np.empty(len(G), dtype=np.int64)
    for c, r in enumerate(rounds[:drop] + rounds[drop + 1 :]):
        colour[r] = c
    occ = np.zeros((n + 1, R), dtype=np.int64)
    kept = np.ones(len(G), dtype=bool)
    kept[rounds[drop]] = False
    np.add.at(occ, (G[kept].ravel(), np.repeat(colour[kept], G.shape[1])), 1)
    for v in rounds[drop]:
        occ[n] = 0
        c = int(np.argmin((occ[G[v]] >= 1).sum(axis=0)))
        colour[v] = c
        occ[G[v], c] += 1
    return colour


def _tabucol(
    G: np.ndarray,
    real: np.ndarray,
    by_gpu: list[np.ndarray],
    n: int,
    colour: np.ndarray,
    R: int,
    budget: int,
    rng: np.random.Generator,
) -> tuple[int, np.ndarray | None]:
    """TabuCol on GPU clashes with R colours; (moves spent, colouring without clashes or None)."""
    occ = np.zeros((n + 1, R), dtype=np.int64)  # occ[g, c]: probes of round c holding GPU g
    np.add.at(occ, (G.ravel(), np.repeat(colour, G.shape[1])), 1)
    occ[n] = 0
    clash = ((occ[G, colour[:, None]] >= 2) & real).any(axis=1)
    f = int(np.maximum(occ[:n] - 1, 0).sum())
    best_f = f
    tabu = np.zeros((len(G), R), dtype=np.int64)
    rows = np.arange(len(G))
    for it in range(budget):
        if f == 0:
            return it, colour
        C = np.flatnonzero(clash)
        GC, RC = G[C], real[C]
        gain = ((occ[GC] >= 1) & RC[:, :, None]).sum(axis=1)  # (|C|, R): clashes added in round c
        loss = ((occ[GC, colour[C][:, None]] >= 2) & RC).sum(axis=1)  # clashes removed from its round
        delta = (gain - loss[:, None]).astype(np.float64)
        delta[rows[: len(C)], colour[C]] = np.inf
        delta[(tabu[C] > it) & (f + delta >= best_f)] = np.inf  # tabu unless it beats the best
        delta += rng.random(delta.shape) * 0.5  # ties at random
        j = int(np.argmin(delta))
        if not np.isfinite(delta.flat[j]):
            continue
        v, b = int(C[j // R]), j % R
        a = int(colour[v])
        gpus = G[v][real[v]]
        f += int(np.floor(delta.flat[j]))
        best_f = min(best_f, f)
        occ[gpus, a] -= 1
        occ[gpus, b] += 1
        colour[v] = b
        tabu[v, a] = it + int(0.6 * len(C)) + int(rng.integers(0, 10))
        near = np.concatenate([by_gpu[g] for g in gpus])
        near = near[(colour[near] == a) | (colour[near] == b)]
        clash[near] = ((occ[G[near], colour[near][:, None]] >= 2) & real[near]).any(axis=1)
        clash[v] = (occ[gpus, b] >= 2).any()
    return budget, (colour if f == 0 else None)


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
    probes: Sequence[Sequence[int]],
    n: int,
    dsatur_limit: int = 3000,
    passes: int = 6,
    tabu_iterations: int = 3000,
    squeeze: bool = True,
) -> list[list[int]]:
    """The fewest rounds among first fit in construction order, largest first, and DSatur,
    then improved by ``passes`` of :func:`recolour_rounds` and ``tabu_iterations`` moves of
    :func:`tabu_rounds`.

    DSatur is only tried for covers of at most ``dsatur_limit`` probes (its cost is quadratic).
    Without ``squeeze`` only first fit in construction order runs: O(P k) for P probes of k
    GPUs (the construction lists a large cover round by round already).

    >>> plan_rounds([(0, 1, 2, 3), (4, 5, 6, 7), (0, 1, 4, 5), (2, 3, 6, 7), (0, 2, 4, 6), (1, 3, 5, 7)], 8)
    [[0, 1], [2, 3], [4, 5]]
    """
    best = ordered_rounds(probes, n)
    if not squeeze:
        return sorted((sorted(r) for r in best if r), key=lambda r: r[0])
    floor = rounds_lower_bound(probes, n)
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
    if len(best) > floor:
        best = tabu_rounds(probes, n, best, iterations=tabu_iterations)
    return sorted((sorted(r) for r in best if r), key=lambda r: r[0])
