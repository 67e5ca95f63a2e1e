"""Offline search for the base rounds of :mod:`.cyclic` by simulated annealing (needs numba).

The state is one base round: a permutation of the n = m * c GPUs whose first ``b * k`` entries
are b probes of k GPUs (the rest idle). A move swaps two GPUs, one in a probe and one in another
probe or idle; the cost is the number of unmet difference requirements
(:func:`.cyclic.unmet_differences`), updated in O(k) per move from a table of how often each
(class, class, difference) occurs in the base probes. Cost 0 is a base round whose development
covers every pair in m rounds of b probes.

Regenerate the ``cyclic`` table (``faultsense_pipelines/cover/data/cyclic.json``, the base round
developed; deterministic for the seeds in :data:`CYCLIC_TARGETS`; a few minutes on one core;
needs the ``[search]`` extra):

    .venv/bin/python -m tools.cover_search.cyclic_search --write

References:
    K. J. Nurmela, P. R. J. Östergård, "Upper bounds for covering designs by simulated
    annealing", Congressus Numerantium 96 (1993) -- the annealing, here over base blocks.
"""

from __future__ import annotations

import math
import sys
import time
from typing import TextIO

import numpy as np
from numba import njit

from faultsense_pipelines.cover.table import StoredCover

from .cyclic import develop, unmet_differences
from .store import replace_table

__all__ = ["CYCLIC_TARGETS", "regenerate_cyclic", "search_base_round"]

# (n, k, m, classes, base probes b, annealing moves per seed, seeds tried)
CYCLIC_TARGETS: tuple[tuple[int, int, int, int, int, int, int], ...] = (
    (75, 8, 15, 5, 9, 20_000_000, 8),  # 15 rounds, 135 probes (greedy: 136; TD(8,9)+3: 105 in 21)
)


@njit(cache=False)
def _met(cnt, m, p, q, step):  # pragma: no cover - compiled
    """Add ``step`` to the requirement of pair (p, q); -1 if it became met, +1 if unmet, else 0."""
    cp, ip, cq, iq = p // m, p % m, q // m, q % m
    if cp > cq:
        cp, cq, ip, iq = cq, cp, iq, ip
    d = (iq - ip) % m
    if cp == cq and d > m - d:
        d = m - d
    before = cnt[cp, cq, d]
    cnt[cp, cq, d] = before + step
    if before == 0 and step > 0:
        return -1
    if before + step == 0:
        return 1
    return 0


@njit(cache=False)
def _anneal(m, c, k, b, moves, seed, t0, t1):  # pragma: no cover - compiled
    np.random.seed(seed)
    n, used = m * c, b * k
    perm = np.random.permutation(n)
    cnt = np.zeros((c, c, m), np.int64)
    for j in range(b):
        for x in range(j * k, (j + 1) * k):
            for y in range(x + 1, (j + 1) * k):
                _met(cnt, m, perm[x], perm[y], 1)
    cost = 0
    for c1 in range(c):
        for d in range(1, m // 2 + 1):
            cost += cnt[c1, c1, d] == 0
        for c2 in range(c1 + 1, c):
            for d in range(m):
                cost += cnt[c1, c2, d] == 0
    best, best_perm = cost, perm.copy()
    cooling = math.exp(math.log(t1 / t0) / max(1, moves))
    temperature = t0
    for _ in range(moves):
        if cost == 0:
            break
        temperature *= cooling
        i, j = np.random.randint(used), np.random.randint(n)
        if i // k == j // k:
            continue
        u, v = perm[i], perm[j]
        pi, pj = i // k, (j // k if j < used else -1)
        delta = _swap(cnt, m, k, perm, pi, pj, u, v, 1)
        if delta > 0 and np.random.random() >= math.exp(-delta / temperature):
            _swap(cnt, m, k, perm, pi, pj, u, v, -1)  # undo
            continue
        cost += delta
        perm[i], perm[j] = v, u
        if cost < best:
            best = cost
            best_perm[:] = perm
    return best, best_perm


@njit(cache=False)
def _swap(cnt, m, k, perm, pi, pj, u, v, sign):  # pragma: no cover - compiled
    """Move u out of probe pi and v into it (and back for probe pj; -1: v was idle); sign -1 undoes."""
    delta = 0
    for t in range(pi * k, (pi + 1) * k):
        a = perm[t]
        if a != u:
            delta += _met(cnt, m, u, a, -sign) + _met(cnt, m, v, a, sign)
    if pj >= 0:
        for t in range(pj * k, (pj + 1) * k):
            a = perm[t]
            if a != v:
                delta += _met(cnt, m, v, a, -sign) + _met(cnt, m, u, a, sign)
    return delta


def search_base_round(
    m: int, classes: int, k: int, b: int, moves: int, seed: int = 0, t0: float = 1.0, t1: float = 0.02
) -> tuple[int, list[list[int]]]:
    """Anneal a base round of ``b`` disjoint size-k probes on Z_m x {0..classes-1}.

    Args:
        m, classes: the GPUs are ``m * classes`` (ids ``j * m + i``); m rounds.
        k: probe size (>= 2).
        b: base probes (b * k <= m * classes).
        moves: swaps tried.
        seed: the generator's seed (same seed, same result).
        t0, t1: starting and final temperature (geometric cooling).

    Returns:
        (unmet requirements of the best base round found, its probes as sorted GPU id lists);
        0 unmet means its development covers every pair.

    Raises:
        ValueError: k < 2, b < 1 or b * k > m * classes.
    """
    if k < 2 or b < 1 or b * k > m * classes:
        raise ValueError(f"need k >= 2 and 1 <= b <= m*classes/k; got m={m}, classes={classes}, k={k}, b={b}")
    best, perm = _anneal(m, classes, k, b, moves, seed, t0, t1)
    base = [sorted(int(g) for g in perm[j * k : (j + 1) * k]) for j in range(b)]
    assert len(unmet_differences(base, m, classes)) == best  # the incremental cost agrees
    return int(best), base


def regenerate_cyclic(
    targets: tuple[tuple[int, int, int, int, int, int, int], ...] = CYCLIC_TARGETS,
    write: bool = False,
    log: TextIO = sys.stderr,
) -> list[StoredCover]:
    """Search every target (seeds 0, 1, ... until one meets every requirement) and, with
    ``write``, store the developed covers found in the ``cyclic`` table."""
    out: list[StoredCover] = []
    for n, k, m, classes, b, moves, seeds in targets:
        start = time.time()
        for seed in range(seeds):
            unmet, base = search_base_round(m, classes, k, b, moves, seed)
            if unmet == 0:
                break
        rounds = develop(base, m, classes)
        if unmet == 0:
            out.append(
                StoredCover(n, k, tuple(p for r in rounds for p in r), rounds=tuple(len(r) for r in rounds), cyclic=(m, classes))
            )
        print(
            f"cyclic n={n} k={k} Z_{m} x {classes}, {b} base probes: "
            f"{'found' if unmet == 0 else f'{unmet} requirements unmet'} at seed {seed}, "
            f"{len(rounds)} rounds, {sum(map(len, rounds))} probes ({time.time() - start:.1f} s)",
            file=log,
            flush=True,
        )
    if write:
        replace_table(out, name="cyclic")
    return out


if __name__ == "__main__":
    regenerate_cyclic(write="--write" in sys.argv[1:])
