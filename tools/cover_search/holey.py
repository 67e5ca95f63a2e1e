"""Offline search for the ``holey`` table: covers of a group plus a hole of "infinite" GPUs.

In the transversal-design recursion of ``faultsense_pipelines.cover.best`` (a TD(k, m) on k
groups plus e infinite GPUs), every group G of s GPUs must be covered together with the e
infinite GPUs I. A *holey cover* H(s, e, k) covers only the pairs within G and between G and
I, so I is a hole; k holey covers plus one cover of I replace k full covers of s + e GPUs
(s = 19, e = 18, k = 8: 24 probes per group instead of 30).

Each H(s, e, k) of :data:`HOLEY_SEARCHED` is annealed with the hole's pairs marked covered
(:func:`.anneal.shrink_cover` with ``hole=e``, seed 0), from the full cover ``best`` plans
without holey covers (or from what an earlier entry found), and stored (entry ``n = s + e``,
``hole = e``) where it beats the full cover. Regenerate (deterministic; ~6 minutes on one core;
uses the stored small table, so run after :mod:`.small`):

    .venv/bin/python -m tools.cover_search.holey

References:
    D. M. Gordon, G. Kuperberg, O. Patashnik, "New constructions for covering designs",
    J. Combin. Designs 3 (1995) -- coverings from transversal designs with groups and
    infinite points; K. J. Nurmela, P. R. J. Östergård (1993) for the annealing.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO

from faultsense_pipelines.cover import best
from faultsense_pipelines.cover.table import StoredCover

from .anneal import shrink_cover
from .store import replace_table

__all__ = ["HOLEY_SEARCHED", "holey_floor", "regenerate_holey"]

# (k, group sizes s, hole sizes e, annealing moves per attempted size): the TD(8, 13) and
# TD(8, 19) groups, which the k=8 plans near n = 112..122 and n = 162..176 use; a later entry
# anneals on from what an earlier one found (the big holes of TD(8, 19) + 14..24 need longer)
HOLEY_SEARCHED: tuple[tuple[int, tuple[int, ...], range, int], ...] = (
    (8, (13, 19), range(2, 25), 400_000),
    (8, (19,), range(14, 25), 3_000_000),
)


def holey_floor(s: int, e: int, k: int) -> int:
    """A lower bound on H(s, e, k): the required pairs over the k(k-1)/2 pairs of one probe.

    >>> holey_floor(19, 18, 8)   # 171 + 342 pairs, 28 per probe
    19
    """
    required = s * (s - 1) // 2 + s * e
    return -(-required // (k * (k - 1) // 2))


def regenerate_holey(
    searched: tuple[tuple[int, tuple[int, ...], range, int], ...] = HOLEY_SEARCHED,
    *,
    write: bool = True,
    log: TextIO = sys.stderr,
) -> list[StoredCover]:
    """Anneal every H(s, e, k) of ``searched`` down from the full cover (or from what an earlier
    entry found); keep those below the full cover and, with ``write``, replace the table."""
    out: dict[tuple[int, int, int], StoredCover] = {}
    with best.planning_with_tables(holey={}):
        for k, sizes, holes, iterations in searched:
            for s in sizes:
                for e in holes:
                    start = time.time()
                    full = [tuple(b) for b in best.fewest_probes_candidate(s + e, k).blocks]
                    earlier = out.get((s + e, k, e))
                    start_cover = list(earlier.probes) if earlier is not None else full
                    floor = holey_floor(s, e, k)
                    found = shrink_cover(s + e, k, start_cover, floor, seed=0, iterations=iterations, hole=e)
                    if len(found) < len(full):
                        out[(s + e, k, e)] = StoredCover(s + e, k, tuple(found), hole=e)
                    print(
                        f"holey k={k} s={s} e={e}: full {len(full)}, holey {len(found)}, floor {floor} ({time.time() - start:.1f} s)",
                        file=log,
                        flush=True,
                    )
    if write:
        replace_table(out.values(), name="holey")
    return list(out.values())


if __name__ == "__main__":
    regenerate_holey()
