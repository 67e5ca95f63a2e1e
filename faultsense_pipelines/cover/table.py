"""Stored covers: the one loader (and writer) of the tables the offline searches produced.

Small covers C(n, k, 2) are where constructions are weakest and where the transversal-design
recursion of :mod:`.best` spends its probes, so better small covers improve large plans too;
annealing them at planning time would cost seconds per size, so they are searched once,
offline (``tools/cover_search/``, not part of the installed package), and stored in
``data/*.json`` next to this module (like the La Jolla Covering Repository, but produced by
our own searches). Five tables, one format:

=============== ============================================ ===========================================
table           what ``best`` uses it for                    written by (``python -m tools.cover_search.X``)
=============== ============================================ ===========================================
``small``       covers of n <= 100 GPUs (:func:`tabled_cover`) ``small`` (then ``holey``)
``large``       k = 8 covers of 112..312 GPUs                ``orbit_search``, ``class_search``, ``schedule_anneal``
``holey``       holey covers H(s, e, k) (:func:`holey_cover`)  ``holey``
``resolvable``  covers in GPU-disjoint rounds                ``resolvable``
``cyclic``      developed cyclic covers in rounds            ``cyclic_search``
=============== ============================================ ===========================================

The format (``data/<table>.json``, one entry per line)::

    {"format": "faultsense-covers/1", "covers": [
    {"n": 37, "k": 8, "hole": 18, "probes": ["00010203040506", ...]},
    ...
    ]}

Entry fields: ``n`` GPUs (ids 0..n-1) and probe size ``k``; ``probes``, each a hex string of
``id_bytes`` (default 1; 2 above 256 GPUs) big-endian bytes per sorted GPU id, in the order
``best`` uses them; optional ``hole`` e (the last e GPUs form a hole: their pairs need no
probe -- a holey cover H(n - e, e, k)); optional ``rounds``, the sizes of consecutive
GPU-disjoint rounds the probes split into; optional ``first_fit_rounds``, the rounds first fit
in the stored order needs at most; optional ``cyclic`` ``{"m", "classes"}`` (round t is round 0
developed by t over Z_m); optional ``tool`` and ``recipe``, what wrote the entry and its
arguments. Every entry is re-checked when first used (every required pair covered, probes of at
most k distinct GPUs in range, rounds GPU-disjoint); one that fails is ignored.

The offline tools search "from the constructions alone" by replacing tables in memory with
:func:`override_tables` (``best.planning_with_tables`` also clears ``best``'s caches).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from .refine import pair_counts

__all__ = [
    "FORMAT",
    "TABLES",
    "TABLE_DIR",
    "StoredCover",
    "clear_cache",
    "cyclic_cover",
    "decode_probes",
    "encode_probes",
    "holey_cover",
    "is_cover",
    "large_cover",
    "lookup",
    "override_tables",
    "read_table",
    "resolvable_cover",
    "table_path",
    "tabled_cover",
    "valid_rounds",
    "write_table",
]

FORMAT = "faultsense-covers/1"
TABLE_DIR = Path(__file__).with_name("data")
TABLES: tuple[str, ...] = ("small", "large", "holey", "resolvable", "cyclic")

Block = tuple[int, ...]
Rounds = tuple[tuple[Block, ...], ...]
Key = tuple[int, int, int]  # (n, k, hole)


@dataclass(frozen=True)
class StoredCover:
    """One entry of a stored table (see the module docstring for the file format).

    Attributes:
        n: GPUs, ids 0..n-1.
        k: probe size (probes hold at most k GPUs).
        probes: sorted GPU-id tuples, in stored order.
        hole: the last ``hole`` GPUs form a hole whose pairs need no probe (0: a full cover).
        rounds: sizes of the consecutive GPU-disjoint rounds the probes split into, or None.
        first_fit_rounds: rounds first fit in the stored order needs at most, or None.
        cyclic: ``(m, classes)`` of a cover developed over Z_m, or None.
        tool: the offline tool that wrote the entry, or None.
        recipe: that tool's arguments for this entry, or None.
    """

    n: int
    k: int
    probes: tuple[Block, ...]
    hole: int = 0
    rounds: tuple[int, ...] | None = None
    first_fit_rounds: int | None = None
    cyclic: tuple[int, int] | None = None
    tool: str | None = None
    recipe: str | None = None

    @property
    def key(self) -> Key:
        """``(n, k, hole)``: what a table is keyed by."""
        return (self.n, self.k, self.hole)

    def in_rounds(self) -> Rounds:
        """The probes split into their stored rounds (one round of all probes if none are stored).

        >>> StoredCover(4, 2, ((0, 1), (2, 3), (0, 2)), rounds=(2, 1)).in_rounds()
        (((0, 1), (2, 3)), ((0, 2),))
        """
        sizes = self.rounds if self.rounds is not None else (len(self.probes),)
        starts = np.cumsum([0, *sizes])
        return tuple(self.probes[int(starts[j]) : int(starts[j + 1])] for j in range(len(sizes)))

    def is_valid(self) -> bool:
        """Every required pair covered (:func:`is_cover`), and the stored rounds GPU-disjoint."""
        if self.rounds is not None and (sum(self.rounds) != len(self.probes) or min(self.rounds, default=0) < 0):
            return False
        if not is_cover(self.probes, self.n, self.k, self.hole):
            return False
        return self.rounds is None or all(len({g for b in r for g in b}) == sum(map(len, r)) for r in self.in_rounds())


def is_cover(probes: Sequence[Sequence[int]], n: int, k: int, hole: int = 0) -> bool:
    """Whether ``probes`` cover every pair of GPUs 0..n-1 except those inside the hole.

    Args:
        probes: GPU-id sequences; each must hold at most ``k`` distinct ids in 0..n-1.
        n: GPUs.
        k: probe size.
        hole: the last ``hole`` GPUs form a hole (their pairs need no probe; 0 for a full cover).

    Returns:
        True iff every probe is valid and every required pair is in some probe. O(sum of
        squared probe sizes + n^2).

    >>> is_cover([(0, 1, 2), (0, 3), (1, 3), (2, 3)], 4, 3), is_cover([(0, 1), (2, 3)], 4, 2)
    (True, False)
    >>> is_cover([(0, 2, 3), (1, 2, 3)], 4, 3, hole=2)   # {0, 1} is missing; {2, 3} is the hole
    False
    """
    if not all(len(set(b)) == len(b) <= k and all(0 <= int(p) < n for p in b) for b in probes):
        return False
    uncovered = pair_counts(probes, n) == 0
    uncovered[n - hole :, n - hole :] = False
    np.fill_diagonal(uncovered, False)
    return not uncovered.any()


def valid_rounds(rounds: Rounds, n: int, k: int) -> bool:
    """A pair cover of ``n`` GPUs (:func:`is_cover`) whose rounds are each GPU-disjoint.

    >>> valid_rounds((((0, 1), (2, 3)), ((0, 2), (1, 3)), ((0, 3), (1, 2))), 4, 2)
    True
    """
    disjoint = all(len({g for b in r for g in b}) == sum(len(b) for b in r) for r in rounds)
    return disjoint and is_cover([b for r in rounds for b in r], n, k)


def encode_probes(probes: Iterable[Iterable[int]], id_bytes: int = 1) -> list[str]:
    """Probes as hex strings, ``id_bytes`` bytes (2 x ``id_bytes`` hex digits) per sorted GPU id.

    >>> encode_probes([(0, 1, 171)]), encode_probes([(0, 299)], id_bytes=2)
    (['0001ab'], ['0000012b'])

    Raises:
        OverflowError: if a GPU id does not fit in ``id_bytes`` bytes (ids < 256 for one byte).
    """
    return [b"".join(int(g).to_bytes(id_bytes, "big") for g in sorted(b)).hex() for b in probes]


def decode_probes(text: Iterable[str], id_bytes: int = 1) -> tuple[Block, ...]:
    """The inverse of :func:`encode_probes`.

    >>> decode_probes(['0001ab']), decode_probes(['0000012b'], id_bytes=2)
    (((0, 1, 171),), ((0, 299),))
    """
    return tuple(
        tuple(int.from_bytes(raw[i : i + id_bytes], "big") for i in range(0, len(raw), id_bytes))
        for raw in map(bytes.fromhex, text)
    )


def _id_bytes(n: int) -> int:
    return 1 if n <= 256 else 2


def _to_json(c: StoredCover) -> dict[str, Any]:
    entry: dict[str, Any] = {"n": c.n, "k": c.k}
    if c.hole:
        entry["hole"] = c.hole
    if _id_bytes(c.n) != 1:
        entry["id_bytes"] = _id_bytes(c.n)
    if c.rounds is not None:
        entry["rounds"] = list(c.rounds)
    if c.first_fit_rounds is not None:
        entry["first_fit_rounds"] = c.first_fit_rounds
    if c.cyclic is not None:
        entry["cyclic"] = {"m": c.cyclic[0], "classes": c.cyclic[1]}
    if c.tool is not None:
        entry["tool"] = c.tool
    if c.recipe is not None:
        entry["recipe"] = c.recipe
    entry["probes"] = encode_probes(c.probes, _id_bytes(c.n))
    return entry


def _from_json(entry: Mapping[str, Any]) -> StoredCover:
    cyclic = entry.get("cyclic")
    rounds = entry.get("rounds")
    return StoredCover(
        n=int(entry["n"]),
        k=int(entry["k"]),
        probes=decode_probes(entry["probes"], int(entry.get("id_bytes", 1))),
        hole=int(entry.get("hole", 0)),
        rounds=None if rounds is None else tuple(int(r) for r in rounds),
        first_fit_rounds=None if entry.get("first_fit_rounds") is None else int(entry["first_fit_rounds"]),
        cyclic=None if cyclic is None else (int(cyclic["m"]), int(cyclic["classes"])),
        tool=entry.get("tool"),
        recipe=entry.get("recipe"),
    )


def read_table(path: Path, *, validate: bool = True) -> list[StoredCover]:
    """The entries of the table file ``path`` (empty if there is none), in stored order.

    Args:
        path: a file in the format of the module docstring.
        validate: drop entries that fail :meth:`StoredCover.is_valid` (or are malformed).

    Raises:
        ValueError: if the file is not in the format :data:`FORMAT`.
    """
    if not path.exists():
        return []
    raw = json.loads(path.read_text())
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        raise ValueError(f"{path} is not a stored-cover table of format {FORMAT!r}")
    out = []
    for entry in raw.get("covers", []):
        try:
            cover = _from_json(entry)
        except (KeyError, TypeError, ValueError):
            if validate:
                continue
            raise
        if not validate or cover.is_valid():
            out.append(cover)
    return out


def write_table(path: Path, covers: Iterable[StoredCover]) -> None:
    """Write ``covers`` to ``path`` in the format of the module docstring, sorted by (k, n, hole).

    One entry per line, so a regenerated table diffs entry by entry; the same covers always
    give the same bytes. Clears the loader's cache (:func:`clear_cache`).

    Raises:
        ValueError: two entries with one (n, k, hole).
    """
    ordered = sorted(covers, key=lambda c: (c.k, c.n, c.hole))
    keys = [c.key for c in ordered]
    if len(set(keys)) != len(keys):
        raise ValueError(f"two entries with one (n, k, hole) in {path}")
    lines = [json.dumps(_to_json(c), separators=(",", ":")) for c in ordered]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'{{"format":"{FORMAT}","covers":[\n' + ",\n".join(lines) + "\n]}\n")
    clear_cache()


def table_path(name: str) -> Path:
    """The file of table ``name`` (one of :data:`TABLES`) under :data:`TABLE_DIR`.

    Raises:
        ValueError: an unknown table name.
    """
    if name not in TABLES:
        raise ValueError(f"table must be one of {', '.join(TABLES)}, got {name!r}")
    return TABLE_DIR / f"{name}.json"


@lru_cache(maxsize=len(TABLES))
def _entries(name: str) -> dict[Key, StoredCover]:
    """Every entry of table ``name``, decoded but not yet checked."""
    return {c.key: c for c in read_table(table_path(name), validate=False)}


@lru_cache(maxsize=1024)
def _checked(name: str, key: Key) -> StoredCover | None:
    cover = _entries(name).get(key)
    return cover if cover is not None and cover.is_valid() else None


_OVERRIDES: dict[str, Mapping[Key, StoredCover]] = {}


def clear_cache() -> None:
    """Forget the tables read so far (after a table file changed)."""
    _entries.cache_clear()
    _checked.cache_clear()


@contextmanager
def override_tables(**tables: Mapping[Key, StoredCover]) -> Iterator[None]:
    """While active, the named tables answer from the given mappings instead of their files.

    The offline searches use it to plan from the constructions alone (``small={}``) or with the
    covers found so far (a dict they keep adding to). Entries are checked as stored ones are.
    ``best`` memoises sub-covers: use ``best.planning_with_tables``, which clears its caches.

    >>> with override_tables(small={}, large={}):
    ...     tabled_cover(34, 4) is None
    True

    Raises:
        ValueError: an unknown table name.
    """
    unknown = sorted(set(tables) - set(TABLES))
    if unknown:
        raise ValueError(f"unknown tables {unknown}; tables are {', '.join(TABLES)}")
    saved = dict(_OVERRIDES)
    _OVERRIDES.update(tables)
    try:
        yield
    finally:
        _OVERRIDES.clear()
        _OVERRIDES.update(saved)


def lookup(name: str, n: int, k: int, hole: int = 0) -> StoredCover | None:
    """The checked entry (n, k, hole) of table ``name`` (or of its override), or None.

    Raises:
        ValueError: an unknown table name.
    """
    if name not in TABLES:
        raise ValueError(f"table must be one of {', '.join(TABLES)}, got {name!r}")
    key = (n, k, hole)
    if name in _OVERRIDES:
        cover = _OVERRIDES[name].get(key)
        return cover if cover is not None and cover.is_valid() else None
    return _checked(name, key)


def large_cover(n: int, k: int) -> tuple[Block, ...] | None:
    """The probes of the ``large`` table's cover of ``n`` GPUs by size-``k`` probes, or None."""
    cover = lookup("large", n, k)
    return None if cover is None else cover.probes


def tabled_cover(n: int, k: int) -> tuple[Block, ...] | None:
    """The stored cover of ``n`` GPUs by size-``k`` probes (``small`` table, else ``large``), or None.

    >>> len(tabled_cover(34, 4))   # C(34, 4, 2) <= 98; Schönheim's bound is 95
    98
    """
    small = lookup("small", n, k)
    return small.probes if small is not None else large_cover(n, k)


def holey_cover(s: int, e: int, k: int) -> tuple[Block, ...] | None:
    """The stored holey cover H(s, e, k) (group 0..s-1, hole s..s+e-1), or None.

    It covers every pair inside the group and between group and hole, none needed inside the
    hole (Gordon, Kuperberg, Patashnik, J. Combin. Designs 3 (1995): coverings from
    transversal designs with infinite points).

    >>> len(holey_cover(19, 18, 8))   # the full cover of 37 GPUs needs 30
    24
    """
    cover = lookup("holey", s + e, k, e)
    return None if cover is None else cover.probes


def resolvable_cover(s: int, k: int) -> Rounds | None:
    """The stored cover of ``s`` GPUs with probe size ``k`` in GPU-disjoint rounds, or None.

    >>> r = resolvable_cover(25, 8)
    >>> len(r), sum(map(len, r)), all(len({g for b in rnd for g in b}) == 8 * len(rnd) for rnd in r)
    (6, 15, True)
    """
    cover = lookup("resolvable", s, k)
    return None if cover is None else cover.in_rounds()


def cyclic_cover(n: int, k: int) -> Rounds | None:
    """The stored cyclic resolvable cover of ``n`` GPUs with probe size ``k`` (rounds), or None.

    Round t is round 0 developed by t over Z_m (GPU ``j * m + i`` is (i, j) of Z_m x
    {0..classes-1}); Abel, Buratti, "Difference families", Handbook of Combinatorial Designs,
    2nd ed. (2007), ch. VI.16.

    >>> r = cyclic_cover(75, 8)  # rounds, probes
    >>> len(r), sum(map(len, r))
    (15, 135)
    """
    cover = lookup("cyclic", n, k)
    return None if cover is None else cover.in_rounds()
