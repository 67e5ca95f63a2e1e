"""Offline search for the ``resolvable`` table: pair covers in rounds of GPU-disjoint probes.

A cover is *resolvable in R rounds* if its probes split into R rounds whose probes share no
GPU; then Phase 1 runs in R rounds. Small covers that meet Schönheim's bound often pairwise
intersect (13 probes of size 8 on 25 GPUs need 13 rounds), while a GPU in r probes only
forces r rounds. Here the round structure is fixed first -- R rounds, each of
b = floor(s / k) disjoint probes of k GPUs (the rest idle) -- and simulated annealing
swaps two GPUs of one round (between two probes, or a probe and the idle GPUs) until every
pair is covered; every state is a valid schedule, so only coverage is searched. R starts at
the lower bound max(ceil((s-1)/(k-1)), ceil(L(s, k) / b)) and grows until a cover is found.
No stored table is read: every size reproduces on its own (:func:`search_resolvable`).

Found covers are stored in the ``resolvable`` table (``faultsense_pipelines/cover/data/
resolvable.json``: the probes round by round, ``rounds`` their round sizes). Regenerate
(deterministic; about 30 minutes on one core):

    .venv/bin/python -m tools.cover_search.resolvable

References:
    K. J. Nurmela, P. R. J. Östergård, "Upper bounds for covering designs by simulated
    annealing", Congressus Numerantium 96 (1993) -- the annealing, here restricted to
    swaps that keep every round GPU-disjoint.
"""

from __future__ import annotations

import math
import random
import sys
import time
from typing import TextIO

from faultsense_pipelines.cover.bounds import schonheim_bound
from faultsense_pipelines.cover.refine import remove_redundant
from faultsense_pipelines.cover.table import StoredCover

from .store import replace_table

__all__ = ["RESOLVABLE_SEARCHED", "anneal_resolvable", "regenerate_resolvable", "search_resolvable"]

# (k, GPU counts searched, annealing moves per attempted number of rounds, most rounds tried above the floor)
RESOLVABLE_SEARCHED: tuple[tuple[int, range, int, int], ...] = ((8, range(16, 81), 600_000, 4),)

Block = tuple[int, ...]
Rounds = tuple[tuple[Block, ...], ...]


def anneal_resolvable(s: int, k: int, rounds: int, iterations: int, seed: int = 0, probes: int | None = None) -> Rounds | None:
    """Anneal ``rounds`` rounds of disjoint size-k probes on ``s`` GPUs into a pair cover.

    Args:
        s: GPUs (>= 2k, so that a round holds two probes).
        k: probe size (>= 2).
        rounds: rounds R (>= 1).
        iterations: most swaps tried.
        probes: probes in all (default and at most rounds * floor(s/k)), spread evenly over the rounds.
        seed: the random generator's seed (same seed, same result).

    Returns:
        The rounds (each a tuple of sorted probes) if every pair got covered, else None.

    Notes:
        Each swap costs O(k): only the pairs of the two probes touched change.
    """
    b = s // k
    probes = rounds * b if probes is None else probes
    if s < 2 * k or k < 2 or not 1 <= rounds <= probes <= rounds * b:
        raise ValueError(
            f"need s >= 2k, k >= 2, rounds <= probes <= rounds * floor(s/k); got s={s}, k={k}, rounds={rounds}, probes={probes}"
        )
    rng = random.Random(seed)
    per_round = [probes // rounds + (r < probes % rounds) for r in range(rounds)]
    perms = [rng.sample(range(s), s) for _ in range(rounds)]
    where = [[0] * s for _ in range(rounds)]  # where[r][x]: x's slot in round r
    for r, perm in enumerate(perms):
        for slot, x in enumerate(perm):
            where[r][x] = slot
    count = [[0] * s for _ in range(s)]
    for perm, b_r in zip(perms, per_round):
        for j in range(b_r):
            block = perm[j * k : (j + 1) * k]
            for x in block:
                for y in block:
                    count[x][y] += x != y
    missing = _PairSet(s)  # uncovered pairs, for moves that cover one
    for x in range(s):
        for y in range(x + 1, s):
            if count[x][y] == 0:
                missing.add(x, y)
    temperature, cooling = 1.0, math.exp(math.log(0.02) / max(1, iterations))
    for _ in range(iterations):
        if not missing.pairs:
            break
        temperature *= cooling
        r = rng.randrange(rounds)
        perm, slot, used = perms[r], where[r], per_round[r] * k
        x, y = missing.pairs[rng.randrange(len(missing.pairs))]
        if slot[x] >= used:
            x, y = y, x
        if slot[x] >= used:
            continue
        # move y next to x in round r: swap y with another GPU of x's probe
        px = slot[x] // k
        i = px * k + rng.randrange(k)
        j = slot[y]
        if perm[i] == x or j // k == px:
            continue
        pi, pj = px, (j // k if j < used else -1)
        x, y = perm[i], perm[j]
        A = [a for a in perm[pi * k : (pi + 1) * k] if a != x]
        B = [c for c in perm[pj * k : (pj + 1) * k] if c != y] if pj >= 0 else []
        cx, cy = count[x], count[y]
        delta = sum(cx[a] == 1 for a in A) - sum(cy[a] == 0 for a in A)
        delta += sum(cy[c] == 1 for c in B) - sum(cx[c] == 0 for c in B)
        if delta > 0 and rng.random() >= math.exp(-delta / temperature):
            continue
        for a in A:
            _shift(count, missing, x, a, -1)
            _shift(count, missing, y, a, +1)
        for c in B:
            _shift(count, missing, y, c, -1)
            _shift(count, missing, x, c, +1)
        perm[i], perm[j] = y, x
        slot[x], slot[y] = j, i
    uncovered = len(missing.pairs)
    if uncovered:
        return None
    return tuple(tuple(tuple(sorted(perm[j * k : (j + 1) * k])) for j in range(b_r)) for perm, b_r in zip(perms, per_round))


class _PairSet:
    """A set of GPU pairs with O(1) add, remove and uniform choice (list + index)."""

    def __init__(self, s: int) -> None:
        self.pairs: list[tuple[int, int]] = []
        self.index: dict[tuple[int, int], int] = {}

    def add(self, x: int, y: int) -> None:
        key = (x, y) if x < y else (y, x)
        self.index[key] = len(self.pairs)
        self.pairs.append(key)

    def remove(self, x: int, y: int) -> None:
        key = (x, y) if x < y else (y, x)
        i = self.index.pop(key)
        last = self.pairs.pop()
        if i < len(self.pairs):
            self.pairs[i] = last
            self.index[last] = i


def _shift(count: list[list[int]], missing: _PairSet, x: int, y: int, step: int) -> None:
    """Add ``step`` to the probes holding {x, y}, keeping ``missing`` in step."""
    before = count[x][y]
    count[x][y] = count[y][x] = before + step
    if before == 0:
        missing.remove(x, y)
    elif before + step == 0:
        missing.add(x, y)


def _floor_rounds(s: int, k: int) -> int:
    """Fewest rounds possible: a GPU needs ceil((s-1)/(k-1)) probes, a round holds floor(s/k)."""
    return max(-(-(s - 1) // (k - 1)), -(-schonheim_bound(s, k) // (s // k)))


def search_resolvable(s: int, k: int, iterations: int, above: int) -> StoredCover | None:
    """Anneal s GPUs at R = floor, floor + 1, ..., floor + ``above`` full rounds; at the first R
    that works, drop probes one at a time while a cover is still found; the smallest, or None.

    Redundant probes are dropped at the end (rounds keep their order; a round may shrink).
    """
    floor = _floor_rounds(s, k)
    found = None
    rounds = floor
    for rounds in range(floor, floor + above + 1):
        found = anneal_resolvable(s, k, rounds, iterations, seed=rounds)
        if found is not None:
            break
    while found is not None:
        count = sum(map(len, found))
        fewer = None
        if count > max(rounds, schonheim_bound(s, k)):
            fewer = anneal_resolvable(s, k, rounds, iterations, seed=count, probes=count - 1)
        if fewer is None:
            break
        found = fewer
    if found is None:
        return None
    keep = set(remove_redundant([b for r in found for b in r], s))
    kept = [[b for b in r if b in keep] for r in found]
    return StoredCover(s, k, tuple(b for r in kept for b in r), rounds=tuple(len(r) for r in kept))


def regenerate_resolvable(
    searched: tuple[tuple[int, range, int, int], ...] = RESOLVABLE_SEARCHED, *, write: bool = True, log: TextIO = sys.stderr
) -> list[StoredCover]:
    """:func:`search_resolvable` for every (k, s) of ``searched``; with ``write``, replace the table."""
    out: list[StoredCover] = []
    for k, sizes, iterations, above in searched:
        for s in sizes:
            start = time.time()
            got = search_resolvable(s, k, iterations, above)
            if got is not None:
                out.append(got)
            print(
                f"resolvable k={k} s={s}: floor {_floor_rounds(s, k)} rounds, found "
                f"{'none' if got is None else f'{len(got.in_rounds())} rounds, {len(got.probes)} probes'} "
                f"(L={schonheim_bound(s, k)}, {time.time() - start:.1f} s)",
                file=log,
                flush=True,
            )
    if write:
        replace_table(out, name="resolvable")
    return out


if __name__ == "__main__":
    regenerate_resolvable()
