"""The sweep's error budget and probe budget.

**Error budget.** Every claim a sweep tests ("this GPU / link slows probes by at least
``min_slowdown``") is given a level from one wallet of ``alpha`` when it is opened: the
``j``-th claim gets ``alpha / (j (j + 1))`` (these sum to ``alpha``). A claim's level is fixed
before any of its measurements, and its test is valid at that level whatever happened
before (:mod:`.eprocess`), so the expected number of healthy components blamed in a sweep
is at most ``sum_j alpha_j <= alpha`` -- however many claims are tested, in whatever
data-dependent order (alpha spending; a per-family error rate, Bonferroni's inequality needs
no independence). Claims are opened most-likely-first, so real faults get the large levels.

**Probe budget.** Phase 2 spends at most ``budget`` probes (each round is two) and each claim
at most ``claim_rounds`` rounds; what it cannot settle within them is inconclusive.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["ErrorBudget", "ProbeBudget"]


@dataclass
class ErrorBudget:
    """The wallet of one sweep's false-blame budget.

    Args:
        alpha: expected healthy components blamed per sweep, at most; in (0, 1).

    >>> w = ErrorBudget(0.01)
    >>> [round(w.open(), 6) for _ in range(3)]
    [0.005, 0.001667, 0.000833]
    """

    alpha: float
    opened: int = 0

    def __post_init__(self) -> None:
        if not (math.isfinite(self.alpha) and 0 < self.alpha < 1):
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha!r}")

    def open(self) -> float:
        """The level of the next claim: ``alpha / (j (j + 1))`` for the ``j``-th (1-based)."""
        self.opened += 1
        j = self.opened
        return self.alpha / (j * (j + 1))

    def peek(self) -> float:
        """The level the next claim would get, without opening it."""
        j = self.opened + 1
        return self.alpha / (j * (j + 1))


@dataclass
class ProbeBudget:
    """Phase 2 probes left in this sweep.

    Args:
        total: probes Phase 2 may spend (>= 0).
    """

    total: int
    spent: int = 0

    def __post_init__(self) -> None:
        if self.total < 0:
            raise ValueError(f"phase2_budget must be >= 0, got {self.total!r}")

    @property
    def left(self) -> int:
        """Probes still allowed."""
        return self.total - self.spent

    def take(self, probes: int) -> bool:
        """Spend ``probes`` if that many are left; ``False`` (nothing spent) otherwise."""
        if probes > self.left:
            return False
        self.spent += probes
        return True
