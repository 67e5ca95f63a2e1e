"""Offline search for large covers: a transversal design kept, the rest annealed (needs numba).

Where the transversal-design recursion of ``best`` lands just above 1.10 x Schönheim (k = 8,
n = 112, 113, 173, 174; 175 and 176 were searched here too until ``schedule_anneal`` gave them
covers in fewer rounds), its TD(k, m) probes are kept and the rest is searched anew: each
group's holey cover H(s, e, k) (``best`` covers each group with the e infinite GPUs by one)
is copied with its own relabelling of the infinite GPUs, hill-climbed so that the copies also
cover the pairs among the infinite GPUs (``best`` adds a separate cover of them), and then
all these free probes are annealed at once with fewer probes, free to mix groups, the TD's
pairs counted as covered. The annealing minimises uncovered pairs with Nurmela and
Östergård's move (take an uncovered pair {u, v}, a probe holding u, swap another of its GPUs
for v), pair counts kept incrementally (O(k) per move), compiled with numba (about 5 million
moves a second).

The engine is more general: it searches *base probes* of a cover invariant under Z_g on
n = c*g + f GPUs (GPU i*g + a is point (i, a); the cover is every translate a -> a + t),
counting uncovered *pair orbits*, with ``static`` probes that never move. g = 1 is the plain
search above. Cyclic searches (Z_112 plus short orbits for n = 112, 113; Z_176 and Z_88 for
n = 176) stalled 1-25 pair orbits short, so no cyclic cover is stored.

Regenerate their entries of the ``large`` table (``faultsense_pipelines/cover/data/large.json``;
seeded, so it writes the same covers; about 70 s on one core, rounds included):

    .venv/bin/pip install -e '.[search]'
    nice -n 10 .venv/bin/python -m tools.cover_search.orbit_search [PATH]

References:
    K. J. Nurmela, P. R. J. Östergård, "Upper bounds for covering designs by simulated
    annealing", Congressus Numerantium 96 (1993) 93-111.
    D. M. Gordon, G. Kuperberg, O. Patashnik, "New constructions for covering designs",
    J. Combin. Designs 3 (1995) -- TD(k, m) plus infinite points with the groups covered.
"""

from __future__ import annotations

import random
import sys
import time
from pathlib import Path
from typing import TextIO

import numpy as np
from numba import njit

from faultsense_pipelines.cover.bounds import schonheim_bound
from faultsense_pipelines.cover.designs import transversal_design
from faultsense_pipelines.cover.refine import uncovered_pairs
from faultsense_pipelines.cover.table import StoredCover, holey_cover

from .round_search import fewest_rounds
from .store import update_table

__all__ = [
    "TARGETS",
    "main",
    "pair_orbit_count",
    "pair_orbit_table",
    "permuted_holey_start",
    "search_base_probes",
    "search_holey",
    "search_target",
    "search_td_residual",
    "td_blocks",
]

# (n, k, TD order m, infinite GPUs e, free probes, annealing moves, seed, holey search): the
# sizes where best's TD(k, m) + e recursion landed just above 1.10 x Schönheim. The free probes
# start from the stored holey covers H(s, e, k) of the groups (the ``holey`` table), or, where
# a holey search (probes, moves, t0) is given, from one found here (H(19, 24, 8) = 30 < 31 stored).
# n = 175 and 176 were here too (TD(8,19)+23 and +24: 595 and 603 probes, but 49 rounds each, with
# a holey search H(19, 24, 8) = 30 for 176); their stored covers now come from
# tools/cover_search/schedule_anneal.py (601 and 605 probes in 37 rounds, the rounds target).
TARGETS: tuple[tuple[int, int, int, int, int, int, int, tuple[int, int, float] | None], ...] = (
    (112, 8, 13, 8, 72, 30_000_000, 0, None),
    (113, 8, 13, 9, 76, 30_000_000, 0, None),
    (173, 8, 19, 21, 226, 60_000_000, 0, None),
    (174, 8, 19, 22, 232, 60_000_000, 0, None),
)


def pair_orbit_count(g: int, orbits: int, fixed: int = 0) -> int:
    """Pair orbits of orbits*g + fixed GPUs under Z_g: g // 2 inside an orbit (d ~ -d), g between two
    orbits, one between a fixed GPU and an orbit, one per pair of fixed GPUs.

    >>> pair_orbit_count(7, 1)   # differences {1, 6}, {2, 5}, {3, 4}: the Fano plane's base block {0, 1, 3}
    3
    """
    return orbits * (g // 2) + orbits * (orbits - 1) // 2 * g + fixed * orbits + fixed * (fixed - 1) // 2


def pair_orbit_table(g: int, orbits: int, fixed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pair orbit of every GPU pair, and one representative pair per orbit.

    Returns:
        ``(table, rep_p, rep_q)``: ``table[p, q]`` (n x n int32, -1 on the diagonal) numbers
        the pair orbit of {p, q} from 0; ``rep_p[o], rep_q[o]`` is a pair in orbit o.
    """
    n = orbits * g + fixed
    cg = orbits * g
    table = np.full((n, n), -1, dtype=np.int32)
    rep_p: list[int] = []
    rep_q: list[int] = []
    index: dict[tuple[int, int, int], int] = {}
    for p in range(n):
        for q in range(p + 1, n):
            if q >= cg:  # fixed point(s): the orbit of p (or p itself if fixed)
                key = (-1, p if p >= cg else p // g, q)
            else:
                i, a, j, b = p // g, p % g, q // g, q % g
                d = (b - a) % g
                key = (i, j, min(d, g - d) if i == j else d)
            o = index.setdefault(key, len(index))
            if o == len(rep_p):
                rep_p.append(p)
                rep_q.append(q)
            table[p, q] = table[q, p] = o
    assert len(index) == pair_orbit_count(g, orbits, fixed)
    return table, np.asarray(rep_p, dtype=np.int64), np.asarray(rep_q, dtype=np.int64)


@njit(cache=False)
def _bump(o, delta, counts, unc, pos, nunc):
    """counts[o] += delta, keeping unc[:nunc] = the orbits with count 0; returns the new nunc."""
    before = counts[o]
    counts[o] = before + delta
    if before == 0 and delta > 0:
        i = pos[o]
        last = unc[nunc - 1]
        unc[i] = last
        pos[last] = i
        pos[o] = -1
        return nunc - 1
    if before + delta == 0:
        unc[nunc] = o
        pos[o] = nunc
        return nunc + 1
    return nunc


@njit(cache=False)
def _swap(blocks, bi, slot, new, table, counts, unc, pos, nunc):
    """Replace blocks[bi, slot] by GPU ``new``; returns (nunc, change in uncovered orbits)."""
    k = blocks.shape[1]
    old = blocks[bi, slot]
    before = nunc
    for s in range(k):
        if s != slot:
            nunc = _bump(table[old, blocks[bi, s]], -1, counts, unc, pos, nunc)
    for s in range(k):
        if s != slot:
            nunc = _bump(table[new, blocks[bi, s]], 1, counts, unc, pos, nunc)
    blocks[bi, slot] = new
    return nunc, nunc - before


@njit(cache=False)
def _anneal(blocks, table, rep_p, rep_q, g, cg, moves, t0, t_end, seed, fixed_counts):
    """Simulated annealing on ``blocks`` (in place); returns (best cost, best blocks).

    ``fixed_counts`` (one per pair orbit) are the pair orbits covered by static base probes.
    """
    np.random.seed(seed)
    n = table.shape[0]
    nb, k = blocks.shape
    norb = rep_p.shape[0]
    orbit = np.empty(n, dtype=np.int64)
    for p in range(n):
        orbit[p] = p // g if p < cg else cg // g + (p - cg)
    counts = fixed_counts.copy()
    for bi in range(nb):
        for s in range(k):
            for u in range(s + 1, k):
                counts[table[blocks[bi, s], blocks[bi, u]]] += 1
    unc = np.empty(norb, dtype=np.int64)
    pos = np.full(norb, -1, dtype=np.int64)
    nunc = 0
    for o in range(norb):
        if counts[o] == 0:
            unc[nunc] = o
            pos[o] = nunc
            nunc += 1
    best_cost = nunc
    best = blocks.copy()
    temp = t0
    cooling = (t_end / t0) ** (1.0 / max(moves, 1))
    for _ in range(moves):
        if nunc == 0:
            break
        temp *= cooling
        o = unc[np.random.randint(nunc)]
        p0, q0 = rep_p[o], rep_q[o]
        bi = np.random.randint(nb)
        start = np.random.randint(k)
        slot_x = -1
        for s in range(k):
            x = blocks[bi, (start + s) % k]
            if orbit[x] == orbit[p0] or orbit[x] == orbit[q0]:
                slot_x = (start + s) % k
                break
        if slot_x < 0:
            continue
        x = blocks[bi, slot_x]
        as_p = orbit[x] == orbit[p0]
        if as_p and orbit[x] == orbit[q0] and np.random.random() < 0.5:
            as_p = False
        ref, other = (p0, q0) if as_p else (q0, p0)
        t = (x % g - ref % g) % g if x < cg else np.random.randint(g)
        new = other if other >= cg else other - other % g + (other % g + t) % g
        present = False
        for s in range(k):
            if blocks[bi, s] == new:
                present = True
        if present:
            continue
        slot = np.random.randint(k - 1)
        if slot >= slot_x:
            slot += 1
        old = blocks[bi, slot]
        nunc, delta = _swap(blocks, bi, slot, new, table, counts, unc, pos, nunc)
        if delta > 0 and np.random.random() >= np.exp(-delta / temp):
            nunc, _ = _swap(blocks, bi, slot, old, table, counts, unc, pos, nunc)
        elif nunc < best_cost:
            best_cost = nunc
            best[:, :] = blocks
    return best_cost, best


def search_base_probes(
    g: int,
    orbits: int,
    fixed: int,
    probes: int,
    k: int,
    *,
    seed: int = 0,
    moves: int = 10_000_000,
    t0: float = 2.0,
    t_end: float = 0.2,
    static: tuple[tuple[int, ...], ...] = (),
    start: list[list[int]] | None = None,
) -> tuple[int, list[list[int]]]:
    """Anneal ``probes`` base probes of size k on orbits*g + fixed GPUs from a random start.

    ``start`` (probes, padded to k GPUs; random ones added up to ``probes``) replaces the
    random start. ``static`` base probes (e.g. a coset of a subgroup of Z_g, whose short orbit has fewer
    than g probes) are kept as they are; only the pair orbits they leave are searched for.

    Returns:
        ``(uncovered pair orbits, base probes)`` of the best state met; 0 means the
        developed probes cover every pair.
    """
    n = orbits * g + fixed
    table, rep_p, rep_q = pair_orbit_table(g, orbits, fixed)
    rng = np.random.default_rng(seed)
    begin = [list(b) for b in start or ()][:probes]
    begin += [list(rng.choice(n, size=k, replace=False)) for _ in range(probes - len(begin))]
    for b in begin:  # pad short probes with GPUs not in them
        b += [int(p) for p in rng.permutation(n) if p not in b][: k - len(b)]
    blocks = np.asarray(begin, dtype=np.int64)
    fixed_counts = np.zeros(len(rep_p), dtype=np.int64)
    for b in static:
        for i, p in enumerate(b):
            for q in b[i + 1 :]:
                fixed_counts[table[p, q]] += 1
    cost, best = _anneal(blocks, table, rep_p, rep_q, g, orbits * g, moves, t0, t_end, seed, fixed_counts)
    return int(cost), [sorted(int(p) for p in b) for b in best]


def td_blocks(n: int, k: int, m: int, e: int) -> tuple[list[int], list[tuple[int, ...]]]:
    """The probes of a TD(k, m) on k groups holding the n - e non-infinite GPUs (as evenly as possible).

    Returns:
        ``(group sizes, probes)``: group i is GPUs offset_i .. offset_i + size_i - 1; the e
        infinite GPUs n-e .. n-1 are in no probe.
    """
    base, extra = divmod(n - e, k)
    sizes = [base + 1] * extra + [base] * (k - extra)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    out = []
    for b in transversal_design(k, m).blocks:
        pts = tuple(int(offsets[p // m] + p % m) for p in b if p % m < sizes[p // m])
        if len(pts) >= 2:
            out.append(pts)
    return sizes, out


def search_td_residual(
    n: int,
    k: int,
    m: int,
    e: int,
    probes: int,
    start: list[list[int]] | None,
    *,
    seed: int,
    moves: int,
    t0: float = 0.3,
    t_end: float = 0.05,
) -> list[tuple[int, ...]] | None:
    """A cover: the TD(k, m) probes of :func:`td_blocks` kept, ``probes`` more probes annealed.

    The free probes cover the pairs inside each group and with the e infinite GPUs (what the
    holey covers of ``best`` do group by group), but may mix groups. Returns the whole cover,
    or None if the annealing ends with pairs uncovered.
    """
    _, static = td_blocks(n, k, m, e)
    cost, free = search_base_probes(
        1, n, 0, probes, k, seed=seed, moves=moves, t0=t0, t_end=t_end, static=tuple(static), start=start
    )
    if cost:
        return None
    cover = static + [tuple(sorted(b)) for b in free]
    assert uncovered_pairs(cover, n) == 0
    return cover


def search_holey(s: int, e: int, k: int, probes: int, *, seed: int, moves: int, t0: float) -> list[tuple[int, ...]] | None:
    """A holey cover H(s, e, k) with ``probes`` probes (group 0..s-1, hole s..s+e-1), or None."""
    hole = tuple(range(s, s + e))  # a static probe holding the hole: its pairs count as covered
    cost, found = search_base_probes(1, s + e, 0, probes, k, seed=seed, moves=moves, t0=t0, t_end=0.05, static=(hole,))
    return None if cost else [tuple(b) for b in found]


def permuted_holey_start(
    n: int, k: int, m: int, e: int, holey: list[list[tuple[int, ...]]], *, seed: int, steps: int = 3000
) -> list[list[int]]:
    """The groups' holey covers on the TD's groups, the infinite GPUs relabelled per group.

    A holey cover stays one under any permutation of its hole, so each group's copy gets its
    own labelling of the e infinite GPUs, hill-climbed (swaps of two labels, kept unless
    worse) so that the copies' probes also cover the pairs among the infinite GPUs -- which
    ``best`` covers with a separate cover of its own.
    """
    sizes, _ = td_blocks(n, k, m, e)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    parts = [[[p - s for p in b if p >= s] for b in h] for h, s in zip(holey, sizes)]
    rng = random.Random(seed)
    perms = [rng.sample(range(e), e) for _ in sizes]

    def uncovered(perms: list[list[int]]) -> int:
        c = np.zeros((e, e), dtype=np.int64)
        for perm, part in zip(perms, parts):
            for t in part:
                idx = [perm[x] for x in t]
                c[np.ix_(idx, idx)] += 1
        return int(((c == 0).sum() - e) // 2)

    best = uncovered(perms)
    for _ in range(steps):
        if best == 0:
            break
        g = rng.randrange(len(perms))
        a, b = rng.sample(range(e), 2)
        perms[g][a], perms[g][b] = perms[g][b], perms[g][a]
        now = uncovered(perms)
        if now <= best:
            best = now
        else:
            perms[g][a], perms[g][b] = perms[g][b], perms[g][a]
    return [
        [int(offsets[g]) + p if p < s else n - e + perms[g][p - s] for p in b]
        for g, (h, s) in enumerate(zip(holey, sizes))
        for b in h
    ]


def search_target(
    target: tuple[int, int, int, int, int, int, int, tuple[int, int, float] | None], log: TextIO = sys.stderr
) -> StoredCover | None:
    """The ``large`` table entry one target of :data:`TARGETS` makes, or None if its search fails.

    Listed round by round for the fewest rounds :func:`.round_search.fewest_rounds` finds (first
    fit in the stored order uses at most ``first_fit_rounds``).
    """
    n, k, m, e, probes, moves, seed, holey_search = target
    begin = time.time()
    sizes, static = td_blocks(n, k, m, e)
    if holey_search is None:
        holey = [list(holey_cover(s, e, k) or ()) for s in sizes]
    else:
        found = search_holey(sizes[0], e, k, holey_search[0], seed=seed, moves=holey_search[1], t0=holey_search[2])
        holey = [found or [] for _ in sizes]
    start = permuted_holey_start(n, k, m, e, holey, seed=seed)
    cover = search_td_residual(n, k, m, e, probes, start, seed=seed, moves=moves)
    allowed = int(1.10 * schonheim_bound(n, k))
    print(
        f"n={n} k={k} TD({k},{m})+{e}: {len(static)} + {probes} = {len(static) + probes} probes "
        f"(allowed {allowed}): {'found' if cover else 'not found'} ({time.time() - begin:.0f} s)",
        file=log,
        flush=True,
    )
    if cover is None:
        return None
    rounds = fewest_rounds(cover, n, seed=seed)
    print(f"  rounds: {len(rounds)} ({time.time() - begin:.0f} s)", file=log, flush=True)
    listed = tuple(tuple(sorted(cover[i])) for r in rounds for i in r)
    return StoredCover(n, k, listed, first_fit_rounds=len(rounds), tool="orbit_search")


def main(path: Path | None = None, log: TextIO = sys.stderr) -> list[StoredCover]:
    """Search every target of :data:`TARGETS`; write the covers found to the ``large`` table
    (or the table file ``path``); a target whose search fails keeps what the table has."""
    found = [c for c in (search_target(t, log) for t in TARGETS) if c is not None]
    update_table(found, path=path)
    return found


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else None)
