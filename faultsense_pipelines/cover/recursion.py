"""Pieces of the transversal-design recursion of :mod:`.best`: which TD orders fit, how GPUs
split into groups, which TD blocks survive truncated groups, and where the "infinite" GPUs go.

A TD(k, m) on k groups of at most m GPUs covers every pair from different groups; the groups,
each together with e "infinite" GPUs, are covered recursively (:mod:`.best`). These helpers
are pure functions of (n, k, m, e) and the sub-covers.

References:
    D. M. Gordon, G. Kuperberg, O. Patashnik, "New constructions for covering designs",
    J. Combin. Designs 3 (1995).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from .designs import td_coordinates
from .fields import factor
from .rounds import ordered_rounds

__all__ = [
    "MAX_INFINITE",
    "TD_EXTRA_M",
    "clear_td_columns",
    "fill_labels",
    "group_sizes",
    "interleaved_rounds",
    "td_alive",
    "td_kept",
    "td_orders",
]

Block = tuple[int, ...]

TD_EXTRA_M = 2  # TD orders tried above the smallest that fits
MAX_INFINITE = 4  # extra "infinite" GPUs tried: 0 .. MAX_INFINITE * k


def td_orders(n: int, k: int) -> list[int]:
    """Orders m admitting a TD(k, m) here: all that hold n GPUs with <= 4k infinite ones and
    k*m <= n, plus the smallest few with k*m > n (truncated groups)."""
    lo = max(2, -(-(n - MAX_INFINITE * k) // k))
    out: list[int] = []
    above = 0
    for m in range(lo, n // 2 + 1):
        if 1 + min(p**a for p, a in factor(m)) >= k:
            out.append(m)
            above += k * m > n
            if above >= TD_EXTRA_M:
                break
    return out


def group_sizes(total: int, k: int, m: int) -> list[int] | None:
    """Split ``total`` GPUs into k groups of at most m, as evenly as possible (None if impossible
    or if a group would hold fewer than two GPUs).

    >>> group_sizes(30, 4, 8), group_sizes(40, 4, 8)
    ([8, 8, 7, 7], None)
    """
    if total > k * m or total < 2 * k:
        return None
    base, extra = divmod(total, k)
    return [base + 1] * extra + [base] * (k - extra)


@lru_cache(maxsize=1024)
def td_alive(k: int, m: int, sizes: tuple[int, ...]) -> int:
    """Blocks of TD(k, m) with at least two GPUs left when group i keeps its first sizes[i] points.

    (Hand-checked: with groups 1..3 cut to point 0, a block survives where one of them is 0:
    one block for b = 0, three for each of the four other b).

    >>> td_alive(4, 5, (5, 5, 5, 5)), td_alive(4, 5, (5, 1, 1, 1))
    (25, 13)
    """
    if sum(s < m for s in sizes) <= k - 2:  # at most k - 2 points cut from any block: all keep two
        return m * m
    return int((td_kept(k, m, sizes) >= 2).sum())


def td_kept(k: int, m: int, sizes: tuple[int, ...]) -> np.ndarray:
    """(m^2,) int8: points each TD(k, m) block keeps when group i keeps its first sizes[i] points
    (rows in the order of :func:`.designs.td_coordinates`)."""
    columns = _td_columns(k, m)
    dropped = np.zeros(m * m, dtype=np.int8)
    for i, s in enumerate(sizes):
        if s < m:  # only a cut group drops points; one contiguous column at a time
            dropped += columns[:, i] >= s
    kept: np.ndarray = k - dropped
    return kept


@lru_cache(maxsize=2)
def _td_columns(k: int, m: int) -> np.ndarray:
    """:func:`.designs.td_coordinates` in column-major order (each group's coordinates contiguous)."""
    out = np.asfortranarray(td_coordinates(k, m))
    out.setflags(write=False)
    return out


def interleaved_rounds(blocks: list[Block], n: int, td_class: dict[Block, int], infinite: set[int]) -> list[list[int]]:
    """First fit with the probes holding infinite GPUs spread out, each batch next to one TD class.

    The infinite GPUs are in many probes (they meet every group), so their probes set the
    number of rounds; putting a batch of them before each parallel class lets first fit pack
    the class's other probes around them instead of adding rounds for them at the end.
    """
    if not td_class:
        return ordered_rounds(blocks, n)
    with_inf = [i for i, b in enumerate(blocks) if infinite.intersection(b)]
    batches = ordered_rounds([blocks[i] for i in with_inf], n)
    classes: dict[int, list[int]] = {}
    for i, b in enumerate(blocks):
        if b in td_class:
            classes.setdefault(td_class[b], []).append(i)
    order: list[int] = []
    for t in range(max(len(batches), len(classes))):
        order += [with_inf[j] for j in batches[t]] if t < len(batches) else []
        order += classes.get(t, [])
    placed = set(order)
    order += [i for i in range(len(blocks)) if i not in placed]
    return ordered_rounds(blocks, n, order)


def fill_labels(sub_blocks: tuple[Block, ...], s: int, e: int, offset: int, infinite: list[int]) -> list[int]:
    """Map a sub-cover on s + e points onto a group (s GPUs from ``offset``) and the infinite GPUs.

    The e least-used points of the sub-cover become the infinite GPUs: they are in every
    group's sub-cover, so this keeps their probe count (and the rounds) low.
    """
    use = np.zeros(s + e, dtype=np.int64)
    for b in sub_blocks:
        use[list(b)] += 1
    order = np.argsort(use, kind="stable")
    label = [0] * (s + e)
    for j, p in enumerate(order[:e]):
        label[int(p)] = infinite[j]
    for j, p in enumerate(sorted(int(p) for p in order[e:])):
        label[p] = offset + j
    return label


def clear_td_columns() -> None:
    """Forget the column-major TD coordinates :func:`td_kept` keeps (a few MB per order)."""
    _td_columns.cache_clear()
