"""Lower bounds on the number of size-k probes that cover every GPU pair."""

from __future__ import annotations

from math import ceil

__all__ = ["LARGE_COVER_PROBES", "MAX_PLAN_PROBES", "all_pairs", "cover_too_large", "is_large_cover", "schonheim_bound"]

#: The most probes a cover may need to be planned at all (``faultsense plan``, ``simulate`` and
#: every fleet replica). A replica whose Schönheim lower bound L(n, k) exceeds it is refused
#: before any planning: n = 4096, k = 2 needs 8,386,560 probes (minutes and ~5.7 GB to plan, and a
#: Phase 1 of 8 million probes), while n = 1024, k = 2 (523,776) and n = 4096, k = 8
#: (299,520) are allowed. See docs/input-limits.md.
MAX_PLAN_PROBES = 1_000_000

#: Above this many probes in Schönheim's bound a cover is planned without squeezing
#: (:func:`is_large_cover`); n = 1024, k = 8 (18,816) is below, n = 2048, k = 8 (75,008) above.
LARGE_COVER_PROBES = 20_000


def schonheim_bound(n: int, k: int) -> int:
    """Schönheim's lower bound L(n, k) = ceil(n/k * ceil((n-1)/(k-1))) on the covering number C(n, k, 2).

    Any family of k-subsets of an n-set that covers every pair has at least this many blocks.
    For k >= n one probe suffices and the bound is 1.

    >>> schonheim_bound(8, 4)
    6
    >>> schonheim_bound(13, 4)   # met by the projective plane of order 3
    13

    Raises:
        ValueError: if ``n < 1`` or ``k < 2``.

    References:
        J. Schönheim, "On coverings", Pacific J. Math. 14 (1964) 1405-1411.
    """
    if n < 1:
        raise ValueError(f"gpus must be >= 1, got {n}")
    if k < 2:
        raise ValueError(f"probe_size must be >= 2, got {k}")
    if k >= n:
        return 1
    inner = ceil((n - 1) / (k - 1))
    return ceil(n * inner / k)


def all_pairs(n: int) -> int:
    """Number of probes for testing every GPU pair separately, n(n-1)/2 (the paper's baseline)."""
    return n * (n - 1) // 2


def cover_too_large(n: int, k: int) -> str | None:
    """Why a cover of ``n`` GPUs with probe size ``k`` is too large to plan, or None.

    The cover needs at least Schönheim's bound L(n, k) probes (computed in O(1), before any
    planning); above :data:`MAX_PLAN_PROBES` the plan is refused.

    >>> cover_too_large(4096, 8) is None
    True
    >>> cover_too_large(4096, 2)
    'a cover of gpus=4096 with probe_size=2 needs at least 8,386,560 probes (Schönheim bound), more than the limit of 1,000,000; use a larger probe size'
    """
    bound = schonheim_bound(n, k)
    if bound <= MAX_PLAN_PROBES:
        return None
    return (
        f"a cover of gpus={n} with probe_size={k} needs at least {bound:,} probes (Schönheim bound), "
        f"more than the limit of {MAX_PLAN_PROBES:,}; use a larger probe size"
    )


def is_large_cover(n: int, k: int) -> bool:
    """Whether a cover of ``n`` GPUs with probe size ``k`` is planned without squeezing: more
    than :data:`LARGE_COVER_PROBES` probes in Schönheim's bound L(n, k).

    A large cover keeps its construction's rounds (first fit in construction order): no
    rounds search (tabu, recolouring), no aligned transversal designs, no greedy cover
    (``cover.best``), whose costs grow faster than the cover, so planning stays near-linear
    in the probes. The rounds target and the probe cap still choose among the constructions.

    >>> is_large_cover(1024, 8), is_large_cover(2048, 8)   # L = 18,816 and 75,008
    (False, True)
    """
    return schonheim_bound(n, k) > LARGE_COVER_PROBES
