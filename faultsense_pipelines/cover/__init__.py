"""Phase 1 covers: size-k probes that test every GPU and every GPU pair of a replica.

``plan_cover(n, k, method)`` is the one entry point; it is deterministic for a given
(n, k, method) and cached in-process. Methods:

* ``"greedy"`` -- the paper's Algorithm 1 (FaultSense, APSys '26, §4.2), :mod:`.greedy`.
* ``"best"`` (default) -- as close to the Schönheim bound as known designs and local search
  get, never worse than greedy, :mod:`.best`, with covers found offline and stored
  (:mod:`.table`; the searches live in ``tools/cover_search/``, outside the package).

The methods are :class:`CoverMethod` members; plain strings with their values are accepted.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property, lru_cache
from itertools import chain
from typing import Any

import numpy as np

from .bounds import all_pairs, is_large_cover, schonheim_bound
from .greedy import greedy_cover
from .rounds import plan_rounds

__all__ = [
    "COVER_METHODS",
    "MAX_GPUS",
    "Cover",
    "CoverMethod",
    "all_pairs",
    "greedy_cover",
    "plan_cover",
    "schonheim_bound",
    "validate_cover_args",
]


class CoverMethod(StrEnum):
    """How :func:`plan_cover` builds a cover; the values are what the CLI, fleet files and JSON carry.

    >>> CoverMethod("best") is CoverMethod.BEST, CoverMethod.GREEDY == "greedy", f"{CoverMethod.BEST}"
    (True, True, 'best')
    """

    GREEDY = "greedy"  # the paper's Algorithm 1
    BEST = "best"  # designs, transversal designs, stored covers (the default)


#: the method values, in the order error messages list them
COVER_METHODS: tuple[str, ...] = tuple(m.value for m in CoverMethod)


@dataclass(frozen=True)
class Cover:
    """A Phase 1 plan for one replica size.

    Attributes:
        gpus: n, GPUs in the replica.
        probe_size: k, GPUs per probe (probes may hold fewer when n < k).
        method: how it was built: a :class:`CoverMethod` value (a plain ``str``, ``"greedy"`` or ``"best"``).
        probes: sorted tuples of 0-based GPU ids; together they contain every GPU and pair.
        rounds: indices into ``probes``; probes of one round share no GPU.
        lower_bound: Schönheim's bound L(n, k) on the number of probes.
    """

    gpus: int
    probe_size: int
    method: str
    probes: tuple[tuple[int, ...], ...]
    rounds: tuple[tuple[int, ...], ...]
    lower_bound: int

    @property
    def all_pairs(self) -> int:
        """n(n-1)/2: probes needed to test every pair separately."""
        return all_pairs(self.gpus)

    @cached_property
    def members(self) -> np.ndarray | None:
        """The probes as one ``(P, k')`` int32 array of GPU ids (row i: ``probes[i]``,
        ascending), when every probe holds the same number k' of GPUs; ``None`` otherwise
        (or with no probe). Built once per cover (cached), read-only."""
        sizes = {len(p) for p in self.probes}
        if len(sizes) != 1:
            return None
        (width,) = sizes
        flat = np.fromiter(chain.from_iterable(self.probes), dtype=np.int32, count=width * len(self.probes))
        out = flat.reshape(len(self.probes), width)
        out.flags.writeable = False
        return out

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready dict (the ``faultsense plan --json`` contract)."""
        return {
            "gpus": self.gpus,
            "probe_size": self.probe_size,
            "method": self.method,
            "probes": [list(p) for p in self.probes],
            "rounds": [list(r) for r in self.rounds],
            "lower_bound": self.lower_bound,
            "all_pairs": self.all_pairs,
        }


#: Largest replica planned (a fleet file allows the same): planning time and memory grow as n^2.
MAX_GPUS = 4096


def validate_cover_args(n: int, k: int, method: CoverMethod | str) -> None:
    """Raise ``ValueError`` naming the bad value if (n, k, method) cannot be planned.

    ``method`` is a :class:`CoverMethod` or its value (``"greedy"``, ``"best"``).
    """
    if not isinstance(n, int) or n < 2:
        raise ValueError(f"gpus must be an integer >= 2, got {n!r}")
    if n > MAX_GPUS:
        raise ValueError(f"gpus must be <= {MAX_GPUS} (one replica's expert-parallel GPUs), got {n}")
    if not isinstance(k, int) or k < 2:
        raise ValueError(f"probe_size must be an integer >= 2, got {k!r}")
    if k > n:
        raise ValueError(f"probe_size must be <= gpus, got probe_size={k} > gpus={n}")
    if method not in COVER_METHODS:
        raise ValueError(f"method must be one of {', '.join(COVER_METHODS)}, got {method!r}")


@lru_cache(maxsize=256)
def plan_cover(n: int, k: int, method: CoverMethod | str = CoverMethod.BEST) -> Cover:
    """Build (or fetch from the in-process cache) the Phase 1 cover for ``n`` GPUs and probe size ``k``.

    Args:
        n: GPUs in the replica (>= 2).
        k: probe size (2 <= k <= n).
        method: :class:`CoverMethod` (or its value): ``"greedy"`` (paper's Algorithm 1) or ``"best"``.

    Returns:
        A :class:`Cover` whose probes contain every GPU and every GPU pair.

    Raises:
        ValueError: naming the bad argument.

    >>> plan_cover(8, 4, "greedy").probes[:2]
    ((0, 1, 2, 3), (4, 5, 6, 7))
    """
    validate_cover_args(n, k, method)
    method = CoverMethod(method)
    if method is CoverMethod.GREEDY:
        probes = greedy_cover(n, k)
    else:
        from .best import best_cover, clear_caches

        probes = best_cover(n, k)
        if is_large_cover(n, k):  # the memoised candidates hold copies of millions of probes
            clear_caches()
    # a large cover keeps about its construction's rounds: first fit only, no recolouring or tabu search
    rounds = plan_rounds(probes, n, squeeze=not is_large_cover(n, k))
    return Cover(
        gpus=n,
        probe_size=k,
        method=method.value,
        probes=tuple(tuple(p) for p in probes),
        rounds=tuple(tuple(r) for r in rounds),
        lower_bound=schonheim_bound(n, k),
    )
