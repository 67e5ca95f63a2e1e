"""Cyclic resolvable covers (offline): one base round of disjoint probes, developed over Z_m into m rounds.

The n = m * c GPUs are the points (i, j) of Z_m x {0, ..., c - 1} (GPU id ``j * m + i``). A
*base round* is a set of GPU-disjoint probes; its *development* is the m rounds obtained by
adding t = 0, ..., m - 1 to the first coordinate of every GPU. Each translate of a set of
disjoint probes is again a set of disjoint probes, so the development is a schedule in m rounds
by construction -- the hard part of a resolvable cover comes for free.

Whether the development covers every pair is decided by *differences*: a pair {(i, j), (i', j')}
is covered iff some base probe holds two GPUs of classes j, j' whose first coordinates differ by
i' - i (by +-(i' - i) when j = j'). So the n(n - 1)/2 pairs reduce to
``c * floor(m / 2) + m * c * (c - 1) / 2`` *difference requirements*, and the base round is
searched in that small space (:mod:`.cyclic_search`, numba). Each unmet requirement leaves a
whole orbit (m pairs, or m / 2 for the difference m / 2) uncovered.

Found covers are stored developed in the ``cyclic`` table (``faultsense_pipelines/cover/data/
cyclic.json``: the m rounds' probes, ``rounds`` their sizes, ``cyclic`` ``{"m", "classes"}``), and
``faultsense_pipelines.cover.table.cyclic_cover`` re-checks them pair by pair when loaded.

Example: n = 75, k = 8 as Z_15 x {0..4}: 9 base probes developed into 15 rounds of 9 probes
(135 probes) cover all 2775 pairs; no other construction found fewer than 18 rounds.

References:
    R. J. R. Abel, M. Buratti, "Difference families", Handbook of Combinatorial Designs,
    2nd ed., ch. VI.16 (2007) -- base blocks developed over a group; resolvable ones whose
    base blocks form a parallel class are the "1-rotational"/"cyclically resolvable" designs.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["develop", "unmet_differences"]

Block = tuple[int, ...]
Rounds = tuple[tuple[Block, ...], ...]


def develop(base: Sequence[Sequence[int]], m: int, classes: int) -> Rounds:
    """The m rounds of the base round ``base`` developed over Z_m.

    Args:
        base: GPU-disjoint probes on ``m * classes`` GPUs (ids ``j * m + i``).
        m: the cyclic group's order (>= 1); also the number of rounds.
        classes: how many copies of Z_m (>= 1).

    Returns:
        Rounds: round t holds every base probe with t added to each GPU's first coordinate,
        each probe sorted.

    Raises:
        ValueError: a GPU id outside ``0 .. m * classes - 1``, or two base probes sharing a GPU.

    >>> develop([[0, 3], [1, 5]], 3, 2)  # Z_3 x {0, 1}: 0, 1, 2 | 3, 4, 5
    (((0, 3), (1, 5)), ((1, 4), (2, 3)), ((2, 5), (0, 4)))
    """
    n = m * classes
    seen: set[int] = set()
    for probe in base:
        for g in probe:
            if not 0 <= g < n:
                raise ValueError(f"base GPU {g} is outside 0..{n - 1} (m={m}, classes={classes})")
            if g in seen:
                raise ValueError(f"base GPU {g} is in two base probes: a base round must be GPU-disjoint")
            seen.add(g)
    return tuple(tuple(tuple(sorted((g // m) * m + (g % m + t) % m for g in probe)) for probe in base) for t in range(m))


def unmet_differences(base: Sequence[Sequence[int]], m: int, classes: int) -> list[tuple[int, int, int]]:
    """The difference requirements the base round misses: (j, j', d) with j <= j'.

    (j, j, d) for 1 <= d <= m // 2 stands for the pairs {(i, j), (i + d, j)}; (j, j', d) with
    j < j' and 0 <= d < m for {(i, j), (i + d, j')}. The development of ``base`` covers every
    pair iff this list is empty.

    Notes:
        O(sum of probe sizes squared + classes^2 m): one pass over the base probes' pairs.

    >>> unmet_differences([[0, 1], [3, 4]], 3, 2)  # both classes met inside, nothing across
    [(0, 1, 0), (0, 1, 1), (0, 1, 2)]
    """
    met: set[tuple[int, int, int]] = set()
    for probe in base:
        for a in probe:
            for b in probe:
                ja, jb = a // m, b // m
                if a == b or ja > jb:
                    continue
                d = (b % m - a % m) % m
                met.add((ja, jb, min(d, m - d)) if ja == jb else (ja, jb, d))
    need = [(j, j, d) for j in range(classes) for d in range(1, m // 2 + 1)]
    need += [(j, jj, d) for j in range(classes) for jj in range(j + 1, classes) for d in range(m)]
    return [r for r in need if r not in met]
