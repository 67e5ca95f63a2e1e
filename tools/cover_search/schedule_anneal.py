"""Offline search: squeeze a stored cover into fewer rounds, repairing coverage by annealing (needs numba).

:mod:`.round_search` only reorders a cover's probes, so a GPU in r probes forces r rounds: the
TD(8, m) + e covers at n = 175 and 275 put their "infinite" GPUs in 37 and 64 probes
(targets 37.5 and 60). Here the probes themselves change. With R rounds fixed:

1. the tabu search of :mod:`.round_search` gives every probe a round with the fewest clashes
   (a GPU in two probes of one round); a round over floor(n / k) probes passes the rest on;
2. each clash is repaired by giving all but one of the clashing probes an idle GPU of that
   round instead (so every round is GPU-disjoint from here on), probes move from the fullest
   rounds to emptier ones where they fit (idle GPUs give the annealing room), short probes are
   filled, and up to ``cap`` minus the cover's probes new probes of idle GPUs are added to the
   emptiest rounds -- or, above ``cap``, probes are shed one at a time (the one covering the
   fewest pairs alone), annealing after each;
3. simulated annealing restores coverage without ever breaking a round: a move takes an
   uncovered pair {x, y} and a round r where x is in a probe, and swaps y (in another probe of
   r, or idle in r) with another GPU z of x's probe -- Nurmela-Östergård's move restricted to
   one round, as in :mod:`.resolvable`, here started from an almost-covering schedule instead
   of random rounds. z is random, or with ``pick_best`` the best of the k - 1 choices.

Measured (docs/cover_large.md): n = 275 from TD(8,32)+19 (1459 probes, 77 rounds) to 1512
probes in 60 rounds, lowering R 66 -> 60; n = 175 from the resolvable truncated TD(8,23)
(616 probes, 29 rounds) to 601 probes in 37 rounds by shedding. The result is listed round by
round, so first fit in the stored order (what ``best`` does with a table cover) uses at most
R rounds. Seeded: the same arguments give the same cover; each stored entry keeps its
arguments as ``recipe``, and ``python -m tools.cover_search.schedule_anneal --all --write``
reruns them all.

References:
    K. J. Nurmela, P. R. J. Östergård, "Upper bounds for covering designs by simulated
    annealing", Congressus Numerantium 96 (1993).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from numba import njit

from faultsense_pipelines.cover import best
from faultsense_pipelines.cover.refine import remove_redundant
from faultsense_pipelines.cover.rounds import ordered_rounds
from faultsense_pipelines.cover.table import StoredCover, is_cover, large_cover, read_table, table_path

from .round_search import tabu_colouring
from .store import update_table

__all__ = ["main", "squeeze_recipe", "squeeze_rounds"]

Block = tuple[int, ...]


@njit(cache=False)
def _anneal(perm, where, used, k, moves, t0, t1, seed, pick_best):  # pragma: no cover - compiled
    """Anneal rounds ``perm`` (R x n; slots < used[r] are probes of k slots) towards a pair cover.

    Returns (uncovered pairs left, moves made, uncovered at the start, fewest uncovered seen); ``perm``/``where`` are updated in place.
    """
    np.random.seed(seed)
    R, n = perm.shape
    count = np.zeros((n, n), np.int32)
    for r in range(R):
        for p in range(used[r] // k):
            for a in range(k):
                for b in range(k):
                    if a != b:
                        count[perm[r, p * k + a], perm[r, p * k + b]] += 1
    miss = np.empty((n * (n - 1) // 2, 2), np.int32)
    index = np.full((n, n), -1, np.int64)
    nmiss = 0
    for x in range(n):
        for y in range(x + 1, n):
            if count[x, y] == 0:
                miss[nmiss, 0], miss[nmiss, 1] = x, y
                index[x, y] = index[y, x] = nmiss
                nmiss += 1
    cooling = np.exp(np.log(t1 / t0) / max(1, moves))
    t = t0
    A = np.empty(k, np.int64)
    B = np.empty(k, np.int64)
    best = nmiss
    first = nmiss
    done = 0
    for it in range(moves):
        if nmiss == 0:
            break
        done = it
        t *= cooling
        m = np.random.randint(nmiss)
        x, y = miss[m, 0], miss[m, 1]
        r = np.random.randint(R)
        if where[r, x] >= used[r]:
            x, y = y, x
        if where[r, x] >= used[r]:
            continue
        px = where[r, x] // k
        guess = px * k + np.random.randint(k)
        j = where[r, y]
        if j < used[r] and j // k == px:
            continue
        # the GPU z of x's probe that y replaces (z takes y's place): one at random, or, with
        # ``pick_best``, the best of the k - 1 choices (ties at random)
        lo, hi = (px * k, px * k + k) if pick_best else (guess, guess + 1)
        i, delta, ties = -1, 1 << 30, 0
        for s in range(lo, hi):
            zz = perm[r, s]
            if zz == x:
                continue
            d = 0
            for s2 in range(px * k, px * k + k):
                if s2 != s:
                    a = perm[r, s2]
                    d += (count[zz, a] == 1) - (count[y, a] == 0)
            if j < used[r]:
                py = j // k
                for s2 in range(py * k, py * k + k):
                    if s2 != j:
                        c = perm[r, s2]
                        d += (count[y, c] == 1) - (count[zz, c] == 0)
            if d < delta:
                i, delta, ties = s, d, 1
            elif d == delta:
                ties += 1
                if np.random.randint(ties) == 0:
                    i = s
        if i < 0:
            continue
        z = perm[r, i]
        na = 0
        for s in range(px * k, px * k + k):
            if s != i:
                A[na] = perm[r, s]
                na += 1
        nb = 0
        if j < used[r]:
            py = j // k
            for s in range(py * k, py * k + k):
                if s != j:
                    B[nb] = perm[r, s]
                    nb += 1
        if delta > 0 and np.random.random() >= np.exp(-delta / t):
            continue
        for q in range(na + nb):
            src, dst = (z, y) if q < na else (y, z)
            a = A[q] if q < na else B[q - na]
            # src leaves a's probe, dst joins it
            count[src, a] -= 1
            count[a, src] -= 1
            if count[src, a] == 0:
                u, v = min(src, a), max(src, a)
                miss[nmiss, 0], miss[nmiss, 1] = u, v
                index[u, v] = index[v, u] = nmiss
                nmiss += 1
            count[dst, a] += 1
            count[a, dst] += 1
            if count[dst, a] == 1:
                u, v = min(dst, a), max(dst, a)
                h = index[u, v]
                nmiss -= 1
                lu, lv = miss[nmiss, 0], miss[nmiss, 1]
                miss[h, 0], miss[h, 1] = lu, lv
                index[lu, lv] = index[lv, lu] = h
                index[u, v] = index[v, u] = -1
        perm[r, i], perm[r, j] = y, z
        where[r, y], where[r, z] = i, j
        if nmiss < best:
            best = nmiss
    return nmiss, done, first, best


def _start(probes: Sequence[Block], n: int, k: int, R: int, seed: int, steps: int) -> tuple[list[list[list[int]]], int]:
    """Probes in R rounds: the fewest-clash colouring, clashes repaired with idle GPUs, then
    probes moved from the fullest rounds to rounds where they fit with fewer probes."""
    rng = np.random.default_rng(seed)
    table = np.array([sorted(b) + [-1] * (k - len(b)) for b in probes], np.int64)
    colour = np.zeros(len(probes), np.int64)
    for r, ids in enumerate(ordered_rounds(probes, n)):
        colour[ids] = r % R
    clashes, colour = tabu_colouring(table, n, R, steps, seed, colour)
    rounds: list[list[list[int]]] = [[] for _ in range(R)]
    for p in np.argsort(colour, kind="stable"):
        rounds[colour[p]].append([int(g) for g in table[p]])
    for r in range(R):  # a round holds at most floor(n / k) probes: move the rest to the emptiest
        while len(rounds[r]) > n // k:
            min(rounds, key=len).append(rounds[r].pop())
    for r in range(R):  # repair: a GPU twice in a round gives its later probes an idle GPU (or a gap)
        busy = {g for b in rounds[r] for g in b}
        idle = [g for g in range(n) if g not in busy]
        rng.shuffle(idle)
        seen: set[int] = set()
        for b in rounds[r]:
            for s, g in enumerate(b):
                if g >= 0 and g in seen:
                    b[s] = idle.pop() if idle else -1
                seen.add(b[s])
    moved = True
    while moved:  # balance: idle GPUs in every round give the annealing room
        moved = False
        for r in sorted(range(R), key=lambda q: -len(rounds[q])):
            for q in sorted(range(R), key=lambda q: len(rounds[q])):
                if len(rounds[q]) + 1 >= len(rounds[r]):
                    break
                busy = {g for b in rounds[q] for g in b}
                fit = next((i for i, b in enumerate(rounds[r]) if busy.isdisjoint(b)), None)
                if fit is not None:
                    rounds[q].append(rounds[r].pop(fit))
                    moved = True
                    break
    for r in range(R):  # fill gaps and short probes with idle GPUs
        busy = {g for b in rounds[r] for g in b}
        idle = [g for g in range(n) if g not in busy]
        rng.shuffle(idle)
        for b in rounds[r]:
            for s, g in enumerate(b):
                if g < 0:
                    if not idle:
                        raise ValueError(f"round {r} has no idle GPU to fill a short probe; try more rounds")
                    b[s] = idle.pop()
    return rounds, int(clashes)


def _state(rounds: list[list[list[int]]], n: int, k: int):
    """(perm, where, used) arrays of :func:`_anneal` for ``rounds``."""
    R = len(rounds)
    perm = np.empty((R, n), np.int64)
    where = np.empty((R, n), np.int64)
    used = np.array([k * len(rounds[r]) for r in range(R)], np.int64)
    for r in range(R):
        inprobe = [g for b in rounds[r] for g in b]
        member = set(inprobe)
        perm[r] = inprobe + [g for g in range(n) if g not in member]
        where[r, perm[r]] = np.arange(n)
    return perm, where, used


def _probes(perm, used, k: int) -> list[list[list[int]]]:
    return [[sorted(int(g) for g in perm[r, s : s + k]) for s in range(0, used[r], k)] for r in range(len(used))]


def _add(rounds: list[list[list[int]]], n: int, k: int, extra: int, rng) -> None:
    """Add ``extra`` probes of idle GPUs, each to the round with the fewest probes."""
    for _ in range(extra):
        r = min(range(len(rounds)), key=lambda q: len(rounds[q]))
        if (len(rounds[r]) + 1) * k > n:
            return
        busy = {g for b in rounds[r] for g in b}
        idle = [g for g in range(n) if g not in busy]
        rounds[r].append(sorted(int(g) for g in rng.choice(idle, k, replace=False)))


def _shed(rounds: list[list[list[int]]], n: int) -> None:
    """Drop the probe whose loss uncovers the fewest pairs (the one covering fewest pairs alone)."""
    count = np.zeros((n, n), np.int32)
    for rnd in rounds:
        for b in rnd:
            idx = np.array(b)
            count[np.ix_(idx, idx)] += 1
    alone = [
        (sum(count[x, y] == 1 for i, x in enumerate(b) for y in b[i + 1 :]), r, j)
        for r, rnd in enumerate(rounds)
        for j, b in enumerate(rnd)
    ]
    _, r, j = min(alone)
    rounds[r].pop(j)


def squeeze_rounds(
    probes: Sequence[Block],
    n: int,
    R: int,
    cap: int,
    *,
    seed: int = 0,
    moves: int = 200_000_000,
    reheats: int = 1,
    t0: float = 0.3,
    t1: float = 0.05,
    pick_best: bool = False,
    log=sys.stderr,
) -> list[Block] | None:
    """A pair cover of ``n`` GPUs in ``R`` GPU-disjoint rounds with at most ``cap`` size-k probes, or None.

    Args:
        probes: a pair cover (probes of at most k GPUs, 0-based ids), the starting point.
        n: GPUs; R: rounds wanted; cap: most probes. Below ``cap`` probes are added (idle GPUs);
            above it they are shed one at a time, each time the probe covering the fewest pairs
            alone, annealing after each.
        seed: seeds the colouring, the repair and the annealing (same seed, same result).
        moves: annealing moves per heat; reheats: heats (each from t0 down to t1, geometric).

    Returns:
        The probes listed round by round (first fit in this order uses at most R rounds), with
        probes no other probe needs removed, or None if pairs were still uncovered.

    Raises:
        ValueError: if ``cap`` or ``R`` is below 1. A cap above what R rounds hold
            (R * floor(n / k) probes) is lowered to it.
    """
    k = max(len(b) for b in probes)
    if cap < 1 or R < 1:
        raise ValueError(f"need cap >= 1 and R >= 1; got cap={cap}, R={R}")
    cap = min(cap, R * (n // k))  # what R rounds can hold
    start = time.time()
    rng = np.random.default_rng(seed)
    pool = [[list(b) for b in probes]]
    while len(pool[0]) > R * (n // k):  # more probes than the rounds can hold: shed first
        _shed(pool, n)
    rounds, clashes = _start([tuple(b) for b in pool[0]], n, k, R, seed, 300_000)
    _add(rounds, n, k, cap - sum(map(len, rounds)), rng)
    while True:
        if sum(map(len, rounds)) > cap:
            _shed(rounds, n)
        perm, where, used = _state(rounds, n, k)
        for heat in range(reheats):
            left, done, first, fewest = _anneal(perm, where, used, k, moves, t0, t1, seed * 1000 + heat, pick_best)
            print(
                f"n={n} R={R} cap={cap} seed={seed}: {clashes} clashes repaired, {int(used.sum()) // k} probes, "
                f"{first} -> {left} (fewest {fewest}) pairs uncovered after {done:,} moves "
                f"({time.time() - start:.0f} s)",
                file=log,
                flush=True,
            )
            if not left:
                break
        if left:
            return None
        rounds = _probes(perm, used, k)
        if sum(map(len, rounds)) <= cap:
            break
    out = [tuple(b) for rnd in rounds for b in rnd]
    keep = set(remove_redundant(out, n))
    out = [b for b in out if b in keep]
    assert is_cover(out, n, k) and len(ordered_rounds(out, n)) <= R
    return out


def main(argv: list[str]) -> int:
    """``N R1,R2,... CAP [--resolvable | --from-stored] [--seeds=S] [--moves=M] [--reheats=H]
    [--pick-best] [--write] [--out=PATH]``, or ``--all [--write] [--out=PATH]`` to rerun the
    ``recipe`` of every entry of the large table that has one.

    From ``best``'s transversal-design cover of N GPUs (``--resolvable``: its resolvable one;
    ``--from-stored``: the cover the large table holds for N), squeeze into R1 rounds, then R2,
    ... each from the last cover found (seeds 0..S-1 per R), at most CAP probes. ``--write``
    stores the result in the ``large`` table (or the table file ``--out``), listed round by round,
    with the arguments as its ``recipe``.
    """
    tail = [a for a in argv if a == "--write" or a.startswith("--out=")]
    if "--all" in argv:
        stored = read_table(table_path("large"), validate=False)
        return max([main([*c.recipe.split(), *tail]) for c in stored if c.recipe and c.tool == "schedule_anneal"], default=0)
    found = squeeze_recipe([a for a in argv if a not in tail])
    if found is None:
        return 1
    if "--write" in argv:
        out = next((a.split("=", 1)[1] for a in tail if a.startswith("--out=")), None)
        update_table([found], path=Path(out) if out else None)
    return 0


def squeeze_recipe(argv: list[str]) -> StoredCover | None:
    """Run one recipe (the arguments of :func:`main` without ``--write``/``--out``, as stored in an
    entry's ``recipe``): the ``large`` table entry it makes, or None if a squeeze failed."""
    opts = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    recipe = " ".join(argv)
    n, cap = int(argv[0]), int(argv[2])
    start: list[Block] | None
    if "--from-stored" in argv:
        stored_cover = large_cover(n, 8)
        start, source = (None, "") if stored_cover is None else (list(stored_cover), "the stored cover")
    else:
        td = best.td_candidate(n, 8, resolvable_only="--resolvable" in argv)
        start, source = (None, "") if td is None else (list(td.blocks), td.source)
    if start is None:
        print(f"n={n}: no cover to start from", file=sys.stderr)
        return None
    found: list[Block] = start
    print(f"n={n}: start {source}, {len(found)} probes", file=sys.stderr)
    moves, reheats, pick_best = int(float(opts.get("moves", 2e8))), int(opts.get("reheats", 1)), "--pick-best" in argv
    for R in (int(r) for r in argv[1].split(",")):
        seeds = range(int(opts.get("seeds", 4)))
        nxt = next(
            (
                f
                for s in seeds
                if (f := squeeze_rounds(found, n, R, cap, seed=s, moves=moves, reheats=reheats, pick_best=pick_best))
            ),
            None,
        )
        if nxt is None:
            print(f"n={n}: no cover in {R} rounds with <= {cap} probes", file=sys.stderr)
            return None
        found = nxt
    rounds = len(ordered_rounds(found, n))
    print(f"n={n}, k=8: {len(found)} probes, {rounds} rounds (first fit in stored order)", flush=True)
    return StoredCover(n, 8, tuple(found), first_fit_rounds=rounds, tool="schedule_anneal", recipe=recipe)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
