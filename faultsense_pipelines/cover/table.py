"""A table of small covers found offline by local search, used as building blocks by ``best``.

Small covers C(n, k, 2) are where constructions are weakest and where the transversal-design
recursion spends its probes (every group is covered by a small cover), so better small covers
improve large plans too. Annealing them at planning time would cost seconds per size, so they
are searched once, offline, and stored in ``small_covers.json`` next to this module (like the
La Jolla Covering Repository, but produced by our own :mod:`.search`).

Regenerate (deterministic; about 15 minutes on one core; ``--targets-only`` redoes only the
long anneals of :data:`TARGETS` on top of the stored table; ``--holey-only`` redoes only the
holey covers of :mod:`.holey`, which are always regenerated last):

    .venv/bin/python -m faultsense_pipelines.cover.table

Larger covers (k = 8, n = 112..113 and 173..176, where the constructions land just above
1.10 x Schönheim) come from :mod:`.orbit_search` (needs numba) and are stored in
``large_covers.json``, each probe as a hex string of one-byte GPU ids, listed round by round
(first fit in the stored order uses at most the stored ``rounds``).

Every stored cover is re-checked when loaded; one that does not cover every pair is ignored.
"""

from __future__ import annotations

import json
import sys
import time
from functools import lru_cache
from pathlib import Path

from .bounds import schonheim_bound
from .refine import uncovered_pairs

__all__ = [
    "LARGE_TABLE_PATH",
    "TABLE_PATH",
    "TARGETS",
    "decode_probes",
    "encode_probes",
    "large_cover",
    "lookup",
    "lookup_enabled",
    "regenerate",
    "search_targets",
    "tabled_cover",
]

TABLE_PATH = Path(__file__).with_name("small_covers.json")
LARGE_TABLE_PATH = Path(__file__).with_name("large_covers.json")
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

Block = tuple[int, ...]


@lru_cache(maxsize=1)
def _load() -> dict[tuple[int, int], tuple[Block, ...]]:
    if not TABLE_PATH.exists():
        return {}
    raw = json.loads(TABLE_PATH.read_text())
    out: dict[tuple[int, int], tuple[Block, ...]] = {}
    for k_text, by_n in raw.items():
        for n_text, blocks in by_n.items():
            n, k = int(n_text), int(k_text)
            cover = tuple(tuple(int(p) for p in b) for b in blocks)
            if _is_cover(cover, n, k):
                out[(n, k)] = cover
    return out


def _is_cover(cover: tuple[Block, ...], n: int, k: int) -> bool:
    valid = all(len(set(b)) == len(b) <= k and all(0 <= p < n for p in b) for b in cover)
    return valid and uncovered_pairs(cover, n) == 0


def encode_probes(probes, id_bytes: int = 1) -> list[str]:
    """Probes as hex strings, ``id_bytes`` bytes (2 x ``id_bytes`` hex digits) per GPU id.

    >>> encode_probes([(0, 1, 171)]), encode_probes([(0, 299)], id_bytes=2)
    (['0001ab'], ['0000012b'])

    Raises:
        OverflowError: if a GPU id does not fit in ``id_bytes`` bytes (ids < 256 for one byte).
    """
    return [b"".join(int(g).to_bytes(id_bytes, "big") for g in sorted(b)).hex() for b in probes]


def decode_probes(text: list[str], id_bytes: int = 1) -> tuple[Block, ...]:
    """The inverse of :func:`encode_probes`.

    >>> decode_probes(['0001ab']), decode_probes(['0000012b'], id_bytes=2)
    (((0, 1, 171),), ((0, 299),))
    """
    return tuple(
        tuple(int.from_bytes(raw[i : i + id_bytes], "big") for i in range(0, len(raw), id_bytes))
        for raw in map(bytes.fromhex, text)
    )


@lru_cache(maxsize=4)
def _large_raw(path: Path) -> dict:
    return json.loads(path.read_text()) if path.exists() else {}


@lru_cache(maxsize=64)
def large_cover(n: int, k: int) -> tuple[Block, ...] | None:
    """The cover of ``n`` GPUs stored in ``large_covers.json``, if any and if it covers every pair."""
    entry = _large_raw(LARGE_TABLE_PATH).get(str(k), {}).get(str(n))
    if entry is None:
        return None
    cover = decode_probes(entry["probes"], entry.get("id_bytes", 1))
    return cover if _is_cover(cover, n, k) else None


def tabled_cover(n: int, k: int) -> tuple[Block, ...] | None:
    """The stored cover of ``n`` GPUs by size-``k`` probes (small or large table), or None."""
    small = _load().get((n, k))
    return small if small is not None else large_cover(n, k)


def regenerate(searched: tuple[tuple[int, int, int], ...] = SEARCHED, log=sys.stderr) -> dict:
    """Search every (n, k) of ``searched`` and rewrite the table with the covers that beat the constructions.

    Sizes are searched in increasing n, so larger constructions already use the smaller
    covers found; each starts from the best construction and anneals one probe fewer at a time.
    """
    from . import best
    from .search import shrink_cover

    global _USE_FILE
    _USE_FILE = False  # search from the constructions alone, not from the old table
    _STAGED.clear()
    best.clear_caches()
    table: dict[str, dict[str, list[list[int]]]] = {}
    for k, n_max, iterations in searched:
        table[str(k)] = {}
        for n in range(k + 2, n_max + 1):
            start = time.time()
            built = list(best._best(n, k).blocks)
            bound = schonheim_bound(n, k)
            if len(built) <= bound:
                continue
            found = shrink_cover(n, k, built, bound, seed=1000 * k + n, iterations=iterations)
            if len(found) < len(built):
                table[str(k)][str(n)] = [list(b) for b in found]
                best.clear_caches()
                _STAGED[(n, k)] = tuple(found)
            print(
                f"k={k} n={n}: construction {len(built)}, search {len(found)}, bound {bound} ({time.time() - start:.1f} s)",
                file=log,
                flush=True,
            )
        TABLE_PATH.with_suffix(".partial").write_text(json.dumps(table, separators=(",", ":")) + "\n")
    TABLE_PATH.with_suffix(".partial").unlink(missing_ok=True)
    TABLE_PATH.write_text(json.dumps(table, separators=(",", ":")) + "\n")
    _USE_FILE = True
    _load.cache_clear()
    best.clear_caches()
    return table


_STAGED: dict[tuple[int, int], tuple[Block, ...]] = {}  # found during regenerate, before writing
_USE_FILE = True


def lookup_enabled() -> bool:
    """False while :func:`regenerate` runs (stored covers are then ignored)."""
    return _USE_FILE


def lookup(n: int, k: int) -> tuple[Block, ...] | None:
    """What ``best`` uses: the stored cover (or, while regenerating, the one just found)."""
    return tabled_cover(n, k) if _USE_FILE else _STAGED.get((n, k))


def search_targets(targets: tuple[tuple[int, int, int, int], ...] = TARGETS, log=sys.stderr) -> None:
    """Anneal each target (n, k, probes) from the current best cover (3 seeds); store what is found."""
    import random

    from . import best
    from .search import anneal_cover

    raw = json.loads(TABLE_PATH.read_text()) if TABLE_PATH.exists() else {}
    for n, k, probes, iterations in targets:
        built = list(best._best(n, k).blocks)
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
                raw.setdefault(str(k), {})[str(n)] = [list(b) for b in found]
                break
    TABLE_PATH.write_text(json.dumps(raw, separators=(",", ":")) + "\n")
    _load.cache_clear()
    best.clear_caches()


if __name__ == "__main__":
    from .holey import regenerate_holey

    if "--holey-only" not in sys.argv:
        if "--targets-only" not in sys.argv:
            regenerate()
        search_targets()
    regenerate_holey()
