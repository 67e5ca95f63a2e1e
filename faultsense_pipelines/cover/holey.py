"""Holey covers: covers of a group plus "infinite" GPUs that leave the pairs among the infinite GPUs out.

In the transversal-design recursion of :mod:`.best` (a TD(k, m) on k groups plus e infinite
GPUs), every group G of s GPUs must be covered together with the e infinite GPUs I. A full
cover of the s + e GPUs covers the pairs inside I again in every group, k times in all,
although one cover of I suffices. A *holey cover* H(s, e, k) covers only the pairs within G
and between G and I, so I is a hole; then k holey covers plus one cover of I replace the k
full covers. For s = 19, e = 18, k = 8 that is 24 probes per group instead of 30.

Holey covers are found offline by simulated annealing with the hole's pairs marked covered
(:func:`.search.shrink_cover` with ``hole=e``), starting from the full cover, and stored in
``holey_covers.json``; every stored cover is re-checked when loaded. GPUs 0..s-1 are the
group, s..s+e-1 the hole. Regenerate (deterministic; a few minutes on one core):

    .venv/bin/python -m faultsense_pipelines.cover.table            # the whole table, then these
    .venv/bin/python -m faultsense_pipelines.cover.table --holey-only

References:
    D. M. Gordon, G. Kuperberg, O. Patashnik, "New constructions for covering designs",
    J. Combin. Designs 3 (1995) -- coverings from transversal designs with groups and
    infinite points; K. J. Nurmela, P. R. J. Östergård (1993) for the annealing.
"""

from __future__ import annotations

import json
import sys
import time
from functools import lru_cache
from pathlib import Path

import numpy as np

from . import table
from .refine import pair_counts

__all__ = ["HOLEY_PATH", "HOLEY_SEARCHED", "holey_cover", "holey_floor", "missing_pairs", "regenerate_holey"]

HOLEY_PATH = Path(__file__).with_name("holey_covers.json")
# (k, group sizes s, hole sizes e, annealing moves per attempted size): the TD(8, 13) and
# TD(8, 19) groups, which the k=8 plans near n = 112..122 and n = 162..176 use; a later entry
# anneals on from what an earlier one found (the big holes of TD(8, 19) + 14..24 need longer)
HOLEY_SEARCHED: tuple[tuple[int, tuple[int, ...], range, int], ...] = (
    (8, (13, 19), range(2, 25), 400_000),
    (8, (19,), range(14, 25), 3_000_000),
)

Block = tuple[int, ...]


def missing_pairs(blocks, s: int, e: int) -> int:
    """Pairs within the group (GPUs 0..s-1) or between group and hole (s..s+e-1) that no probe holds.

    >>> missing_pairs([(0, 1, 2), (0, 3), (1, 3), (2, 3)], 3, 1)   # complete: the hole is one GPU
    0
    >>> missing_pairs([(0, 2, 3), (1, 2, 3)], 2, 2)                 # {0, 1} missing; {2, 3} is the hole
    1
    """
    n = s + e
    uncovered = pair_counts(blocks, n) == 0
    uncovered[s:, s:] = False
    np.fill_diagonal(uncovered, False)
    return int(uncovered.sum() // 2)


def holey_floor(s: int, e: int, k: int) -> int:
    """A lower bound on H(s, e, k): the required pairs over the k(k-1)/2 pairs of one probe."""
    required = s * (s - 1) // 2 + s * e
    return -(-required // (k * (k - 1) // 2))


@lru_cache(maxsize=1)
def _load() -> dict[tuple[int, int, int], tuple[Block, ...]]:
    if not HOLEY_PATH.exists():
        return {}
    out: dict[tuple[int, int, int], tuple[Block, ...]] = {}
    for key, blocks in json.loads(HOLEY_PATH.read_text()).items():
        k, s, e = (int(t) for t in key.split(","))
        cover = tuple(tuple(int(p) for p in b) for b in blocks)
        valid = all(len(set(b)) == len(b) <= k and all(0 <= p < s + e for p in b) for b in cover)
        if valid and missing_pairs(cover, s, e) == 0:
            out[(s, e, k)] = cover
    return out


_USE_FILE = True


def holey_cover(s: int, e: int, k: int) -> tuple[Block, ...] | None:
    """The stored holey cover H(s, e, k) (group 0..s-1, hole s..s+e-1), or None.

    None while any table is being regenerated, so searches start from the constructions alone.
    """
    if not (_USE_FILE and table.lookup_enabled()):
        return None
    return _load().get((s, e, k))


def regenerate_holey(searched=HOLEY_SEARCHED, log=sys.stderr) -> dict[str, list[list[int]]]:
    """Anneal every H(s, e, k) of ``searched`` down from the full cover (or from what an earlier
    entry found); store those below the full cover."""
    from . import best
    from .search import shrink_cover

    global _USE_FILE
    _USE_FILE = False
    best.clear_caches()
    out: dict[str, list[list[int]]] = {}
    try:
        for k, sizes, holes, iterations in searched:
            for s in sizes:
                for e in holes:
                    start = time.time()
                    full = [tuple(b) for b in best._best(s + e, k).blocks]
                    start_cover = [tuple(b) for b in out.get(f"{k},{s},{e}", full)]
                    found = shrink_cover(s + e, k, start_cover, holey_floor(s, e, k), seed=0, iterations=iterations, hole=e)
                    if len(found) < len(full):
                        out[f"{k},{s},{e}"] = [list(b) for b in found]
                    print(
                        f"holey k={k} s={s} e={e}: full {len(full)}, holey {len(found)}, "
                        f"floor {holey_floor(s, e, k)} ({time.time() - start:.1f} s)",
                        file=log,
                        flush=True,
                    )
    finally:
        _USE_FILE = True
    HOLEY_PATH.write_text(json.dumps(out, separators=(",", ":")) + "\n")
    _load.cache_clear()
    best.clear_caches()
    return out
