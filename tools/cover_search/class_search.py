"""Offline search for the n = 300, k = 8 cover of the ``large`` table (1678 probes, 64 rounds).

``best``'s TD(8,37)+4 cover (1681 probes) needs 76 rounds: its 37 parallel classes use every
group GPU, so the 4 infinite GPUs' probes (56 each) cannot join them. Here the 4 infinite
GPUs visit the groups *inside* the class rounds:

* TD(8, 37) over Z_37, block (a, b) = {(i, a + i b) : i < 8}, class b; in class b the 7
  blocks a in b + M are left out, so group g has the 7 GPUs (g + 1) b + M idle; the
  left-out blocks {(b + x, b) : b} for x in M are 7 parallel families (7 full rounds);
* M = {1, 3, 20, 26, 27, 35, 36} is a difference cover of Z_37 (every non-zero residue is a
  difference of two of its elements), so the 37 translates of M -- one per class round --
  cover every pair inside a group. Groups 0..4 are covered this way; in each class round
  every infinite GPU joins one of these 5 translates (an annealed assignment, so that each
  infinite GPU meets nearly all of groups 0..4);
* groups 5..7 with the 4 infinite GPUs are each covered by ``best``'s cover of 41 GPUs
  (39 probes); the few pairs left are covered by greedy patch probes.

Count: 1369 TD blocks + 5 x 37 translates + 3 x 39 + patches. The probes are then scheduled
by :mod:`.round_search` (tabu search, R lowered from ``plan_rounds`` one round at
a time), refined as ``best`` refines a table cover, their short probes filled with GPUs idle in
their round, and listed round by round.

Regenerate (deterministic, about a minute on one core; needs numba, the ``[search]`` extra):

    .venv/bin/python -m tools.cover_search.class_search --write
"""

from __future__ import annotations

import math
import random
import sys
from collections.abc import Sequence

import numpy as np

from faultsense_pipelines.cover.best import fewest_probes_candidate
from faultsense_pipelines.cover.refine import complete_greedily, merge_small, pair_counts, remove_redundant, uncovered_pairs
from faultsense_pipelines.cover.rounds import ordered_rounds, plan_rounds
from faultsense_pipelines.cover.table import StoredCover

from .store import update_table

__all__ = ["M_37", "assign_visits", "class_aligned_cover", "entry", "search"]

M_37 = (1, 3, 20, 26, 27, 35, 36)
Block = tuple[int, ...]


def assign_visits(M: Sequence[int], m: int, groups: int, infinite: int, seed: int, moves: int) -> tuple[int, list[list[int]]]:
    """Anneal ``assign[b][j]``: the group (< ``groups``) infinite GPU j joins in class round b.

    Infinite GPUs join distinct groups in a round; the cost is the number of (infinite GPU,
    group, GPU of the group) not met. Returns (cost, assign).
    """
    rng = random.Random(seed)
    met = np.zeros((infinite, groups, m), dtype=np.int64)
    cost = infinite * groups * m

    def move(j: int, g: int, b: int, s: int) -> None:
        nonlocal cost
        ys = [((g + 1) * b + x) % m for x in M]
        before = int((met[j, g, ys] > 0).sum())
        met[j, g, ys] += s
        cost -= int((met[j, g, ys] > 0).sum()) - before

    assign = []
    for b in range(m):
        assign.append(rng.sample(range(groups), infinite))
        for j, g in enumerate(assign[b]):
            move(j, g, b, +1)
    temperature = 2.0
    for _ in range(moves):
        if cost == 0:
            break
        b, j, new = rng.randrange(m), rng.randrange(infinite), rng.randrange(groups)
        row, old = assign[b], assign[b][j]
        if new == old:
            continue
        other = row.index(new) if new in row else -1
        before = cost
        move(j, old, b, -1)
        move(j, new, b, +1)
        if other >= 0:
            move(other, new, b, -1)
            move(other, old, b, +1)
        delta = cost - before
        if delta <= 0 or rng.random() < math.exp(-delta / temperature):
            row[j] = new
            if other >= 0:
                row[other] = old
        else:
            move(j, new, b, -1)
            move(j, old, b, +1)
            if other >= 0:
                move(other, old, b, -1)
                move(other, new, b, +1)
        temperature = max(0.02, temperature * (1 - 8 / moves))
    return cost, assign


def class_aligned_cover(seed: int = 0, moves: int = 2_000_000) -> list[Block]:
    """The unscheduled n = 300, k = 8 cover described in the module docstring."""
    m, k, e, translated = 37, 8, 4, 5
    _, assign = assign_visits(M_37, m, translated, e, seed, moves)
    point = lambda g, y: g * m + y % m  # noqa: E731
    left_out = {((b + x) % m, b) for b in range(m) for x in M_37}
    probes: list[Block] = []
    for b in range(m):
        probes += [tuple(point(i, a + i * b) for i in range(k)) for a in range(m) if (a, b) not in left_out]
        joins = {g: j for j, g in enumerate(assign[b])}
        for g in range(translated):
            extra = [k * m + joins[g]] if g in joins else []
            probes.append(tuple(sorted([point(g, (g + 1) * b + x) for x in M_37] + extra)))
    for x in M_37:
        probes += [tuple(point(i, b + x + i * b) for i in range(k)) for b in range(m)]
    sub = [tuple(b) for b in fewest_probes_candidate(41, k).blocks]
    replication = np.bincount(np.concatenate(sub), minlength=41)
    inf = sorted(range(41), key=lambda v: (replication[v], v))[:e]
    rest = [v for v in range(41) if v not in inf]
    for g in range(translated, k):
        label = {v: point(g, i) for i, v in enumerate(rest)} | {v: k * m + (j + g) % e for j, v in enumerate(inf)}
        probes += [tuple(sorted(label[v] for v in b)) for b in sub]
    n = k * m + e
    uncovered = pair_counts(probes, n) == 0
    np.fill_diagonal(uncovered, False)
    return probes + complete_greedily(uncovered, list(range(n)), k)


def _fewest_rounds(probes: list[Block], n: int, target: int) -> list[Block]:
    """Probes listed round by round, R lowered by tabu search (3 seeds per R) down to ``target``."""
    from .round_search import schedule_in_rounds  # numba

    rounds = plan_rounds(probes, n)
    probes = [probes[i] for r in rounds for i in r]
    R = len(rounds) - 1
    while target <= R:
        found = next((f for s in range(3) if (f := schedule_in_rounds(probes, n, R, steps=1_000_000, seed=s))), None)
        if found is None:
            break
        probes = [probes[i] for r in found for i in r]
        R -= 1
    return probes


def search(n: int = 300, k: int = 8, target: int = 64, seed: int = 0) -> list[Block]:
    """Build, schedule, refine as ``best`` does, reschedule, fill short probes; round by round."""
    probes = _fewest_rounds(class_aligned_cover(seed), n, target)
    probes = _fewest_rounds([tuple(sorted(b)) for b in remove_redundant(merge_small(probes, k), n)], n, target)
    filled = [list(b) for b in probes]
    for r in ordered_rounds(probes, n):
        busy = {g for i in r for g in probes[i]}
        idle = [g for g in range(n) if g not in busy]
        for i in r:
            need = k - len(filled[i])
            filled[i], idle = sorted(filled[i] + idle[:need]), idle[need:]
    out = [tuple(b) for b in filled]
    assert uncovered_pairs(out, n) == 0
    assert [tuple(sorted(b)) for b in remove_redundant(merge_small(out, k), n)] == out  # best keeps the order
    return out


def entry(seed: int = 0) -> StoredCover:
    """The ``large`` table entry :func:`search` makes (n = 300, k = 8)."""
    found = search(seed=seed)
    rounds = len(ordered_rounds(found, 300))
    return StoredCover(300, 8, tuple(found), first_fit_rounds=rounds, tool="class_search")


if __name__ == "__main__":
    made = entry()
    print(f"n=300, k=8: {len(made.probes)} probes, {made.first_fit_rounds} rounds (first fit in stored order)")
    if "--write" in sys.argv:
        update_table([made])
