"""Operations on pair covers: truncation, redundancy removal, merging and filling of probes.

A *pair cover* of n GPUs is a list of probes (sets of GPU ids) such that every pair of GPUs lies
in some probe. These operations keep that property: truncating a cover of v >= n points to n
points keeps every pair among the survivors; a probe all of whose pairs are covered elsewhere
is redundant; two probes whose union has at most k GPUs can be replaced by the union; adding
GPUs to a probe only adds coverage.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import cast

import numpy as np

__all__ = [
    "complete_greedily",
    "extend",
    "fill_to_size",
    "merge_small",
    "pair_counts",
    "remove_redundant",
    "sorted_block",
    "truncate",
    "uncovered_pairs",
]

Block = tuple[int, ...]


def sorted_block(b: Sequence[int]) -> Block:
    """``tuple(sorted(b))``, and ``b`` itself when it is that tuple already (a large cover then
    keeps one copy of its probes, not one per step)."""
    t = tuple(sorted(b))
    return b if isinstance(b, tuple) and t == b else t


def pair_counts(blocks: Sequence[Sequence[int]], n: int) -> np.ndarray:
    """(n, n) int32 array: how many probes contain each GPU pair (diagonal: probes per GPU).

    Probes are taken a size at a time as (probes, size) arrays; each position adds one
    bincount of the pair codes ``a * n + b`` it makes with the probe's GPUs, so the cost is
    O(sum of squared probe sizes + n^2) in numpy, not a Python loop per probe. A GPU named
    twice in one probe counts once.

    >>> pair_counts([(0, 1), (0, 1, 2)], 3).tolist()
    [[2, 2, 1], [2, 2, 1], [1, 1, 1]]
    """
    counts = np.zeros(n * n, dtype=np.int32)
    for rows in _by_size(blocks).values():
        for i in range(rows.shape[1]):
            codes = rows[:, i, None] * n + rows
            counts += np.bincount(codes.ravel(), minlength=n * n)  # int64 added in place into int32
    return counts.reshape(n, n)


def _by_size(blocks: Sequence[Sequence[int]]) -> dict[int, np.ndarray]:
    """Probes grouped by size: size -> (probes, size) int64 array of their GPU ids (in probe order)."""
    grouped: dict[int, list[Sequence[int]]] = {}
    for b in blocks:
        b = b if len(set(b)) == len(b) else tuple(set(b))
        grouped.setdefault(len(b), []).append(b)
    return {size: np.asarray(rows, dtype=np.int64).reshape(len(rows), size) for size, rows in grouped.items() if size}


def uncovered_pairs(blocks: Sequence[Sequence[int]], n: int) -> int:
    """Number of GPU pairs {i, j} (i != j) that no probe contains.

    >>> uncovered_pairs([(0, 1, 2), (2, 3)], 4)   # {0, 3} and {1, 3}
    2
    """
    c = pair_counts(blocks, n)
    return int(((c == 0).sum() - np.count_nonzero(np.diag(c) == 0)) // 2)


def truncate(blocks: Sequence[Sequence[int]], v: int, n: int) -> list[Block]:
    """Restrict a pair cover of ``v`` points to ``n <= v`` points.

    The ``v - n`` points deleted are chosen greedily to concentrate on few probes (each step
    deletes the point whose probes have already lost the most points), so that many probes
    shrink to at most one point and disappear. Survivors are relabelled 0..n-1 in order.

    Returns:
        Probes with at least two GPUs, in the original order.

    Notes:
        O((v - n) * v * b) for b probes, as dense matrix-vector products.
    """
    if not 1 <= n <= v:
        raise ValueError(f"need 1 <= n <= v, got n={n}, v={v}")
    incidence = np.zeros((v, len(blocks)), dtype=np.float32)  # (points, probes)
    for i, b in enumerate(blocks):
        incidence[list(b), i] = 1.0
    lost = np.zeros(len(blocks), dtype=np.float32)
    alive = np.ones(v, dtype=bool)
    for _ in range(v - n):
        score = np.where(alive, incidence @ lost, -1.0)
        best = int(np.argmax(score))  # ties: smallest point id
        alive[best] = False
        lost += incidence[best]
    label = np.cumsum(alive) - 1
    out = []
    for b in blocks:
        kept = tuple(int(label[p]) for p in b if alive[p])
        if len(kept) >= 2:
            out.append(kept)
    return out


def extend(blocks: Sequence[Sequence[int]], v: int, n: int, k: int) -> list[Block]:
    """Extend a pair cover of ``v`` GPUs to ``n`` GPUs (1 <= n - v <= k - 2) with new probes.

    The e = n - v new GPUs go together into ceil(v / (k - e)) new probes, each with k - e of
    the old GPUs (consecutive ids); these cover every new-old and new-new pair. A Steiner
    system S(2, k, v) extended so meets Schönheim's bound for e = 1, 2 (e.g. S(2, 8, 120) plus
    one GPU: 255 + 18 = 273 = L(121, 8)).

    >>> extend([(0, 1, 2), (0, 3, 4), (1, 3, 5), (2, 4, 5), (0, 5, 6), (1, 4, 6), (2, 3, 6)], 7, 8, 4)[7:]
    [(0, 1, 2, 7), (3, 4, 5, 7), (6, 7)]

    Raises:
        ValueError: unless 1 <= n - v <= k - 2.
    """
    e = n - v
    if not 1 <= e <= k - 2:
        raise ValueError(f"extend needs 1 <= n - v <= k - 2, got n={n}, v={v}, k={k}")
    new = tuple(range(v, n))
    step = k - e
    return [tuple(b) for b in blocks] + [tuple(range(a, min(a + step, v))) + new for a in range(0, v, step)]


def remove_redundant(blocks: Sequence[Sequence[int]], n: int) -> list[Block]:
    """Drop probes whose every pair (and GPU) is also covered by other probes.

    Probes are examined from last to first, so constructions should list their most
    valuable probes first.

    >>> remove_redundant([(0, 1, 2), (0, 1), (1, 2)], 3)
    [(0, 1, 2)]
    """
    counts = pair_counts(blocks, n)
    keep = [True] * len(blocks)
    # counts only fall, so a probe with a pair (or GPU) in no other probe now is never dropped
    for i in _maybe_redundant(blocks, counts)[::-1]:
        idx = np.asarray(blocks[i], dtype=np.int64)
        sub = counts[idx[:, None], idx[None, :]]
        if sub.min() >= 2:
            counts[idx[:, None], idx[None, :]] -= 1
            keep[i] = False
    return [tuple(b) for b, kept in zip(blocks, keep) if kept]


def _maybe_redundant(blocks: Sequence[Sequence[int]], counts: np.ndarray) -> list[int]:
    """Ascending indices of the probes each of whose pairs and GPUs ``counts`` holds at least twice."""
    n = counts.shape[0]
    flat = counts.ravel()
    out: list[int] = []
    grouped: dict[int, list[int]] = {}
    for i, b in enumerate(blocks):
        grouped.setdefault(len(b), []).append(i)
    for size, ids in grouped.items():
        if not size:
            continue
        rows = np.asarray([blocks[i] for i in ids], dtype=np.int64).reshape(len(ids), size)
        least = np.full(len(ids), np.iinfo(np.int64).max)
        for j in range(size):
            least = np.minimum(least, flat[rows[:, j, None] * n + rows].min(axis=1))
        out += [ids[t] for t in np.flatnonzero(least >= 2)]
    return sorted(out)


def merge_small(blocks: Sequence[Sequence[int]], k: int) -> list[Block]:
    """Replace probes whose union has at most ``k`` GPUs by that union (first fit, largest first).

    >>> merge_small([(0, 1, 2, 3), (4, 5), (6, 7), (4, 8)], 4)
    [(0, 1, 2, 3), (4, 5, 8), (6, 7)]

    Notes:
        Candidate partners come from a GPU -> probe index (overlapping probes) and from
        per-size buckets (disjoint probes that fit), so truncated designs with thousands of
        short probes merge in about linear time.
    """
    full = [tuple(b) for b in blocks if len(b) >= k]
    small = sorted((set(b) for b in blocks if len(b) < k), key=lambda s: (-len(s), min(s)))
    bins: list[set[int]] = []
    by_point: dict[int, list[int]] = {}
    by_size: dict[int, list[int]] = {}
    for s in small:
        target = _partner(s, bins, by_point, by_size, k)
        if target is None:
            target = len(bins)
            bins.append(set())
        elif len(bins[target]) < k:
            by_size[len(bins[target])].remove(target)
        bins[target] |= s
        for p in s:
            by_point.setdefault(p, []).append(target)
        if len(bins[target]) < k:
            by_size.setdefault(len(bins[target]), []).append(target)
    return full + [tuple(sorted(b)) for b in bins]


def _partner(
    s: set[int], bins: list[set[int]], by_point: dict[int, list[int]], by_size: dict[int, list[int]], k: int
) -> int | None:
    """The first bin (lowest id) whose union with ``s`` has at most k GPUs, or None."""
    found: int | None = None
    for p in s:
        for t in by_point.get(p, ()):
            if (found is None or t < found) and len(bins[t] | s) <= k:
                found = t
    for size in range(1, k - len(s) + 1):
        ids = by_size.get(size)
        if ids and (found is None or ids[0] < found):
            found = ids[0]
    return found


def fill_to_size(
    blocks: Sequence[Sequence[int]], rounds: Sequence[Sequence[int]], n: int, k: int, *, presorted: bool = False
) -> list[Block]:
    """Add GPUs idle in a probe's round to probes with fewer than ``k`` GPUs, least-used first.

    Filling only adds coverage and keeps every round GPU-disjoint; a probe whose round has
    too few idle GPUs stays short (execution pads it). ``presorted``: every block is a sorted
    tuple already (not checked), so none is copied.

    >>> fill_to_size([(0, 1), (2, 3, 4)], [[0, 1]], 6, 3)
    [(0, 1, 5), (2, 3, 4)]
    """
    out = list(cast(Sequence[Block], blocks)) if presorted else [sorted_block(b) for b in blocks]
    if all(len(b) >= k for b in out):
        return out
    use = np.bincount(np.fromiter(chain.from_iterable(set(b) for b in out), dtype=np.int64), minlength=n)
    for r in rounds:
        if all(len(out[i]) >= k for i in r):
            continue  # nothing to fill in this round
        busy = np.zeros(n, dtype=bool)
        busy[np.fromiter(chain.from_iterable(out[i] for i in r), dtype=np.int64)] = True
        idle = np.flatnonzero(~busy)
        # least-used first; GPUs handed out leave the queue, and the others' use is unchanged,
        # so one stable sort per round serves every short probe of the round
        queue = idle[np.argsort(use[idle], kind="stable")].tolist()
        taken = 0
        for i in r:
            need = k - len(out[i])
            if need <= 0:
                continue
            extra = queue[taken : taken + need]
            taken += len(extra)
            use[extra] += 1
            out[i] = tuple(sorted(set(out[i]) | set(extra)))
    return out


def complete_greedily(uncovered: np.ndarray, gpus: Sequence[int], k: int) -> list[Block]:
    """Probes of at most k of ``gpus`` covering the pairs among them still ``uncovered``.

    Each probe starts from the GPU with the most uncovered pairs and grows by the GPU that
    adds the most (ties: smallest index), as the paper's Algorithm 1 does for a whole replica.

    Args:
        uncovered: (n, n) bool matrix of uncovered pairs, symmetric, False diagonal; updated
            in place (the new probes' pairs become False).
        gpus: the GPUs whose mutual pairs to cover (ids into ``uncovered``).
        k: probe size.

    Returns:
        The new probes, sorted tuples of GPU ids, in construction order.
    """
    idx = np.asarray(gpus)
    sub = uncovered[np.ix_(idx, idx)]
    out: list[Block] = []
    while sub.any():
        chosen = [int(np.argmax(sub.sum(axis=1)))]
        gain = sub[chosen[0]].astype(np.int64)
        while len(chosen) < min(k, len(idx)):
            gain[chosen] = -1
            v = int(np.argmax(gain))
            if gain[v] <= 0:
                break
            chosen.append(v)
            gain += sub[v]
        sub[np.ix_(chosen, chosen)] = False
        out.append(tuple(sorted(int(idx[v]) for v in chosen)))
    uncovered[np.ix_(idx, idx)] = sub
    return out
