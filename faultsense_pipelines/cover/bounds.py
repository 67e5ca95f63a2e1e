"""Lower bounds on the number of size-k probes that cover every GPU pair."""

from __future__ import annotations

from math import ceil

__all__ = ["schonheim_bound", "all_pairs"]


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
