"""One paired round as the sequential drill-down's oracle asks for it, for the test replicas."""

from __future__ import annotations

import random
from collections.abc import Callable


def shuffled_round(
    latency: Callable[[tuple[int, ...]], float], order: random.Random, test: tuple[int, ...], ref: tuple[int, ...], r: int
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``r`` latencies (ms) of ``test`` and of ``ref``, the ``2r`` measurements taken in an order
    drawn from ``order`` (the randomization the test's guarantee rests on)."""
    sides = [0] * r + [1] * r
    order.shuffle(sides)
    got: tuple[list[float], list[float]] = ([], [])
    for side in sides:
        got[side].append(latency(test if side == 0 else ref))
    return tuple(got[0]), tuple(got[1])
