"""Independent checks of covers for the tests: brute force, written out here, not the project's code."""

from __future__ import annotations

from itertools import combinations


def uncovered(probes, n: int) -> set[tuple[int, int]]:
    """Brute force: the GPU pairs of 0..n-1 that no probe holds."""
    covered = {pair for p in probes for pair in combinations(sorted(set(p)), 2)}
    return set(combinations(range(n), 2)) - covered


def first_fit_rounds(probes) -> int:
    """First fit in the given order: each probe joins the first round it is disjoint from."""
    busy: list[set[int]] = []
    for p in probes:
        for used in busy:
            if used.isdisjoint(p):
                used.update(p)
                break
        else:
            busy.append(set(p))
    return len(busy)
