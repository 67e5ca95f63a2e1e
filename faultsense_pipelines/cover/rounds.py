"""Arrange probes into rounds of GPU-disjoint probes that can run at the same time."""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["first_fit_rounds"]


def first_fit_rounds(probes: Sequence[Sequence[int]], n: int) -> list[list[int]]:
    """Pack probes into rounds, each round a list of indices into ``probes`` whose GPU sets are disjoint.

    Probes are taken largest first (ties by index) and put into the first round where none
    of their GPUs is busy. Every probe index appears in exactly one round.

    Notes:
        Each GPU appears in r probes, so at least max(r) rounds are needed; first fit on a
        cover with replication r ~ (n-1)/(k-1) typically needs a little more.
    """
    order = sorted(range(len(probes)), key=lambda i: (-len(probes[i]), i))
    rounds: list[list[int]] = []
    busy: list[set[int]] = []
    for i in order:
        gpus = set(probes[i])
        for r, used in enumerate(busy):
            if not gpus & used:
                rounds[r].append(i)
                used |= gpus
                break
        else:
            rounds.append([i])
            busy.append(set(gpus))
    return [sorted(r) for r in rounds]
