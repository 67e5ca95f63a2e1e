"""TD(k, m) plus a few "infinite" GPUs, with their probes aligned to the TD's parallel classes.

In the recursion of :mod:`.best`, e infinite GPUs are covered with each group of a transversal
design; their probes hold GPUs of one group, so any round with one of them must leave out
TD blocks, and first fit or tabu search cannot pack them around the TD's full parallel
classes (n=300, k=8: 76 rounds for a floor of 56). Here the probes of the infinite GPUs are
chosen so that the blocks they displace form whole parallel families:

* the TD is built over GF(m): block (a, b) = {(i, a + c_i b) : i < k}, class b;
* fix lambda with d_i = lambda + c_i != 0 for every group i, and a set M of k-1 field elements;
  in class round b the blocks a in lambda b + M are left out, and their points in group g,
  d_g b + M, go to one infinite GPU (at most one per group): that probe has k GPUs;
* the left-out blocks {(lambda b + x, b) : b} for x in M are k-1 parallel families (blocks of
  one family are disjoint because d_i != 0), k-1 full rounds;
* infinite GPU j must meet all of group g: it visits g at the translates t + delta_j of a set
  T with T + M = GF(m), in round b = (t + delta_j) / d_g; visits that clash (the GPU or the
  group already busy in that round) become extra probes of their own;
* the pairs inside each group that no visit covered, and the pairs among the infinite GPUs,
  are covered greedily; these extra probes are scheduled after the class rounds.

:mod:`.best` tries it (with M = {0..k-2} and with a stored spread M) where the fewest-probe
cover misses the rounds target. Measured (k=8): n=300 (TD(8,37)+4) in 64 rounds with 1749
probes, against 76 rounds with 1681 for the plain TD+4; target 64.5. Those 4% more probes are
above :mod:`.best`'s 4% trade cap (they would cost the benchmark's 25x total target), so there
``best`` keeps the plain TD+4.

References:
    D. M. Gordon, G. Kuperberg, O. Patashnik, "New constructions for covering designs",
    J. Combin. Designs 3 (1995) -- the TD recursion with infinite points; the alignment with
    parallel classes is ours.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .fields import Ring, galois_field, prime_power
from .refine import complete_greedily

__all__ = ["SPREAD_SETS", "aligned_td_cover"]

Block = tuple[int, ...]

# For k = 8: a 7-set M of GF(m) (element codes of :func:`.fields.galois_field`) whose translates
# cover the field in the fewest steps (greedily), and among those with the most distinct
# differences, so that an infinite GPU's probes inside a group also cover many of its pairs.
# The best of 3000 random 7-subsets (numpy default_rng(0)); n=300: 1749 probes in 64 rounds
# with M below against 1796 probes with M = {0..6}.
SPREAD_SETS: dict[int, list[int]] = {
    9: [0, 1, 2, 3, 4, 6, 8],
    11: [0, 2, 3, 4, 6, 8, 10],
    13: [0, 1, 3, 5, 7, 9, 11],
    16: [6, 7, 8, 10, 12, 14, 15],
    17: [2, 5, 8, 11, 12, 13, 16],
    19: [0, 2, 5, 7, 12, 13, 14],
    23: [2, 3, 10, 11, 15, 17, 18],
    25: [1, 4, 6, 12, 18, 20, 23],
    27: [1, 2, 6, 7, 11, 14, 17],
    29: [0, 8, 10, 11, 15, 17, 22],
    31: [4, 6, 11, 18, 23, 26, 30],
    32: [15, 16, 17, 18, 20, 26, 29],
    37: [10, 11, 20, 23, 28, 35, 36],
    41: [6, 11, 12, 25, 26, 35, 38],
}


def aligned_td_cover(n: int, k: int, spread: bool = False) -> tuple[list[Block], list[list[int]]] | None:
    """A cover of n = k m + e GPUs (m a prime power > k, 1 <= e <= k) listed round by round.

    Args:
        n: GPUs.
        k: probe size.
        spread: M from :data:`SPREAD_SETS` (k = 8 only) instead of the codes 0..k-2.

    Returns:
        (probes, rounds): probes of at most k GPUs covering every pair, and GPU-disjoint
        rounds for the class rounds and left-out families (indices into probes); the extra
        probes come last, each in a round of its own (to be packed by a scheduler). None
        if no such (m, e) fits n, or no spread set is stored for m.

    Notes:
        GPUs i m .. i m + m - 1 are group i, k m .. n - 1 the infinite GPUs.
    """
    found = next(
        ((m, n - k * m) for m in range((n - 1) // k, (n - k) // k - 1, -1) if m > k and 1 <= n - k * m <= k and prime_power(m)),
        None,
    )
    if found is None:
        return None
    m, e = found
    F = galois_field(m)
    c = list(F.distinct[:k])
    lam = next(x for x in range(m) if all(F.add[x, ci] != 0 for ci in c))
    d = [int(F.add[lam, ci]) for ci in c]
    inv = {x: next(y for y in range(1, m) if F.mul[x, y] == 1) for x in range(1, m)}
    M = list(range(k - 1)) if not spread else SPREAD_SETS.get(m) if k == 8 else None
    if M is None:
        return None
    T = _translates(F, M)

    def point(g: int, x: Any) -> int:
        return g * m + int(x)

    infinite = list(range(k * m, n))
    # visits[b] = {group: infinite GPU}; leftover visits become extra probes
    visits: list[dict[int, int]] = [{} for _ in range(m)]
    leftover: list[tuple[int, int, int]] = []  # (infinite index, group, translate)
    for j in range(e):
        for g in range(k):

            def clashes(delta: int, g: int = g, j: int = j) -> int:
                rs = [int(F.mul[F.add[t, delta], inv[d[g]]]) for t in T]  # the class where d_g b = t + delta
                return sum(g in visits[b] or j in visits[b].values() for b in rs)

            delta = min(range(m), key=lambda x: (clashes(x), x))
            for t in T:
                tt = int(F.add[t, delta])
                b = int(F.mul[tt, inv[d[g]]])
                if g in visits[b] or j in visits[b].values():
                    leftover.append((j, g, tt))
                else:
                    visits[b][g] = j
    probes: list[Block] = []
    rounds: list[list[int]] = []
    left_out = {(int(F.add[F.mul[lam, b], x]), b) for b in range(m) for x in M}
    for b in range(m):  # class rounds
        r = []
        for a in range(m):
            if (a, b) not in left_out:
                r.append(len(probes))
                probes.append(tuple(point(i, F.add[a, F.mul[c[i], b]]) for i in range(k)))
        for g, j in visits[b].items():
            shift = int(F.mul[d[g], b])
            r.append(len(probes))
            probes.append(tuple(sorted([point(g, F.add[shift, x]) for x in M] + [infinite[j]])))
        rounds.append(r)
    for x in M:  # the left-out blocks: k-1 parallel families
        r = []
        for b in range(m):
            a = int(F.add[F.mul[lam, b], x])
            r.append(len(probes))
            probes.append(tuple(point(i, F.add[a, F.mul[c[i], b]]) for i in range(k)))
        rounds.append(r)
    for j, g, tt in leftover:
        probes.append(tuple(sorted([point(g, F.add[tt, x]) for x in M] + [infinite[j]])))
    uncovered = np.ones((n, n), dtype=bool)
    np.fill_diagonal(uncovered, False)
    for p in probes:
        idx = np.asarray(p)
        uncovered[idx[:, None], idx[None, :]] = False
    for g in range(k):  # what the visits left inside each group
        probes += complete_greedily(uncovered, list(range(g * m, g * m + m)), k)
    probes += complete_greedily(uncovered, infinite, k)
    rounds += [[i] for i in range(sum(map(len, rounds)), len(probes))]
    return probes, rounds


def _translates(F: Ring, M: list[int]) -> list[int]:
    """Translates t with {t + x : t, x in M} = the field, chosen greedily (most new elements)."""
    covered = np.zeros(F.order, dtype=bool)
    out: list[int] = []
    while not covered.all():
        gains = [(~covered[F.add[t, M]]).sum() for t in range(F.order)]
        t = int(np.argmax(gains))
        covered[F.add[t, M]] = True
        out.append(t)
    return out
