"""One round as the sequential drill-down's oracle asks for it, for the test replicas."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence


def shuffled_round(
    latency: Callable[[tuple[int, ...]], float], order: random.Random, probes: Sequence[tuple[int, ...]], r: int
) -> tuple[tuple[float, ...], ...]:
    """``r`` latencies (ms) of each probe (the tests, then the reference), the measurements
    taken in an order drawn from ``order`` (the randomization the test's guarantee rests on)."""
    slots = [i for i in range(len(probes)) for _ in range(r)]
    order.shuffle(slots)
    got: list[list[float]] = [[] for _ in probes]
    for i in slots:
        got[i].append(latency(probes[i]))
    return tuple(tuple(x) for x in got)
