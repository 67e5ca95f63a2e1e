"""The paper's greedy Phase 1 cover (FaultSense, APSys '26, §4.2, Algorithm 1)."""

from __future__ import annotations

import numpy as np

__all__ = ["greedy_cover"]


def greedy_cover(n: int, k: int) -> list[tuple[int, ...]]:
    """Cover every GPU and every GPU pair of an ``n``-GPU replica with size-``k`` probes, greedily.

    Each probe starts from the GPU with the most uncovered incident pairs, then repeatedly adds
    the GPU that covers the most uncovered pairs with the GPUs already chosen, until it has
    ``k`` GPUs. Probes are added until no pair is uncovered. Ties go to the smallest GPU id,
    so the result is deterministic.

    Args:
        n: GPUs in the replica (>= 1).
        k: probe size, GPUs per probe (>= 2; capped at ``n``).

    Returns:
        Probes as sorted tuples of 0-based GPU ids, in construction order.

    Raises:
        ValueError: if ``n < 1`` or ``k < 2``.

    Examples:
        >>> probes = greedy_cover(8, 4)
        >>> len(probes)                      # the paper's Figure 2c
        6
        >>> sorted({(a, b) for p in probes for a in p for b in p if a < b}) == [
        ...     (a, b) for a in range(8) for b in range(a + 1, 8)]
        True

    Notes:
        O(n^2 k) time with an n x n uncovered-pair matrix, as in the paper.

    References:
        Harish S A, Vignesh S, A. Kurella, R. Gandhi, P. Tammana, "FaultSense: Fault
        Localization in Large-Scale Mixture-of-Experts Model Serving Infrastructure",
        APSys '26, Algorithm 1.
    """
    if n < 1:
        raise ValueError(f"gpus must be >= 1, got {n}")
    if k < 2:
        raise ValueError(f"probe_size must be >= 2, got {k}")
    k = min(k, n)
    if n == 1:
        return [(0,)]
    uncovered = np.ones((n, n), dtype=bool)
    np.fill_diagonal(uncovered, False)
    degree = uncovered.sum(axis=1)  # uncovered pairs incident to each GPU
    probes: list[tuple[int, ...]] = []
    while degree.any():
        chosen = [int(np.argmax(degree))]
        in_probe = np.zeros(n, dtype=bool)
        in_probe[chosen[0]] = True
        gain = uncovered[chosen[0]].astype(np.int64)  # new pairs each GPU would cover
        while len(chosen) < k:
            # Prefer gain, then the GPU's remaining degree (so a probe never wastes a slot
            # on a fully covered GPU while others still have work), then the smallest id.
            score = np.where(in_probe, -1, gain * (n + 1) + np.minimum(degree, n))
            v = int(np.argmax(score))
            chosen.append(v)
            in_probe[v] = True
            gain += uncovered[v]
        for i in chosen:
            for j in chosen:
                if i != j and uncovered[i, j]:
                    uncovered[i, j] = False
                    degree[i] -= 1
        probes.append(tuple(sorted(chosen)))
    return probes
