"""Offline search for the ``small`` table (``faultsense_pipelines/cover/data/small.json``).

Every (n, k) of :data:`SEARCHED` is searched in increasing n, from the best construction
planned *without* any stored table (``best.planning_with_tables``) but with the covers found so
far in this run, by dropping one probe at a time and annealing (:func:`.anneal.shrink_cover`,
seed ``1000 k + n``); sizes where the search beats the construction are stored. Then the long,
colder anneals of :data:`TARGETS` run on top of the stored table, and last the holey covers
(:mod:`.holey`), which use the small table.

Regenerate (deterministic; about 20 minutes on one core; ``--targets-only`` redoes only the
targets on top of the stored table, ``--holey-only`` only the holey covers, ~6 minutes):

    .venv/bin/python -m tools.cover_search.small
    .venv/bin/python -m tools.cover_search.small --holey-only

A single entry outside the targets' reach (k != 4, or n < 34) reproduces from the stored
entries of the same k with fewer GPUs alone: :func:`reproduce` (``best``'s recursion for probe
size k only uses covers of probe size k).

References:
    K. J. Nurmela, P. R. J. Östergård, "Upper bounds for covering designs by simulated
    annealing", Congressus Numerantium 96 (1993).
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Mapping
from typing import TextIO

from faultsense_pipelines.cover import best
from faultsense_pipelines.cover.bounds import schonheim_bound
from faultsense_pipelines.cover.table import Key, StoredCover, read_table, table_path

from .anneal import anneal_cover, shrink_cover
from .store import replace_table, update_table

__all__ = ["SEARCHED", "TARGETS", "regenerate", "reproduce", "search_size", "search_targets"]

# (k, largest n searched, annealing moves per attempted size)
SEARCHED: tuple[tuple[int, int, int], ...] = (
    (4, 100, 300_000),
    (8, 64, 400_000),
    (3, 40, 200_000),
    (5, 60, 300_000),
    (6, 64, 300_000),
)

# sizes where a longer, colder anneal from the construction reaches what the sweep above
# did not: (n, k, probes, moves); C(34, 4, 2) = 94 and C(58, 4, 2) = 276 by Mills' theorem
TARGETS: tuple[tuple[int, int, int, int], ...] = ((34, 4, 98, 3_000_000), (58, 4, 289, 4_000_000))

_NO_TABLES: dict[str, Mapping[Key, StoredCover]] = {"large": {}, "holey": {}, "resolvable": {}, "cyclic": {}}


def search_size(n: int, k: int, iterations: int, staged: Mapping[Key, StoredCover]) -> tuple[int, StoredCover | None]:
    """Search one size from the construction planned with only the ``staged`` small covers.

    Returns:
        (probes of the construction, the cover found if it has fewer probes, else None).
    """
    with best.planning_with_tables(small=staged, **_NO_TABLES):
        built = list(best.fewest_probes_candidate(n, k).blocks)
    bound = schonheim_bound(n, k)
    if len(built) <= bound:
        return len(built), None
    found = shrink_cover(n, k, built, bound, seed=1000 * k + n, iterations=iterations)
    return len(built), (StoredCover(n, k, tuple(found)) if len(found) < len(built) else None)


def regenerate(
    searched: tuple[tuple[int, int, int], ...] = SEARCHED, *, write: bool = True, log: TextIO = sys.stderr
) -> list[StoredCover]:
    """Search every (n, k) of ``searched`` (see the module docstring); with ``write``, replace the table."""
    staged: dict[Key, StoredCover] = {}
    for k, n_max, iterations in searched:
        for n in range(k + 2, n_max + 1):
            start = time.time()
            built, found = search_size(n, k, iterations, staged)
            if found is not None:
                staged[found.key] = found
            print(
                f"k={k} n={n}: construction {built}, search {len(found.probes) if found else built}, "
                f"bound {schonheim_bound(n, k)} ({time.time() - start:.1f} s)",
                file=log,
                flush=True,
            )
    if write:
        replace_table(staged.values(), name="small")
    return list(staged.values())


def reproduce(n: int, k: int) -> StoredCover | None:
    """Rerun the search of the stored entry (n, k) from the stored smaller entries of probe size k.

    Raises:
        ValueError: k is not searched, or (n, k) is in the targets' reach (k = 4, n >= 34).
    """
    moves = {kk: it for kk, _, it in SEARCHED}
    if k not in moves or (k == 4 and n >= min(t[0] for t in TARGETS)):
        raise ValueError(f"(n={n}, k={k}) does not reproduce on its own (not searched, or after a target)")
    staged = {c.key: c for c in read_table(table_path("small")) if c.k == k and c.n < n}
    return search_size(n, k, moves[k], staged)[1]


def search_targets(targets: tuple[tuple[int, int, int, int], ...] = TARGETS, *, log: TextIO = sys.stderr) -> None:
    """Anneal each target (n, k, probes) from the current best cover (3 seeds); store what is found."""
    for n, k, probes, iterations in targets:
        best.clear_caches()
        built = list(best.fewest_probes_candidate(n, k).blocks)
        for seed in range(3):
            rng = random.Random(seed)
            start = [list(b) for b in built]
            while len(start) > probes:
                start.pop(rng.randrange(len(start)))
            found = anneal_cover(n, k, start, seed=seed, iterations=iterations, t0=0.5, t_end=0.05)
            print(
                f"k={k} n={n}: target {probes} (construction {len(built)}), seed {seed}: {'found' if found else 'not found'}",
                file=log,
                flush=True,
            )
            if found is not None:
                update_table([StoredCover(n, k, tuple(found))], name="small")
                break
    best.clear_caches()


def main(argv: list[str]) -> int:
    """``[--targets-only | --holey-only]``: the small table, its targets, then the holey covers."""
    from .holey import regenerate_holey

    if "--holey-only" not in argv:
        if "--targets-only" not in argv:
            regenerate()
        search_targets()
    regenerate_holey()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
