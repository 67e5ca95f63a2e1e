"""Phase 2 with anytime-valid verdicts (``--drilldown sequential``).

Read in this order: :mod:`.eprocess` (the paired test and its guarantee), :mod:`.pairing`
(shape-matched pairs), :mod:`.budget` (one error budget per sweep, one probe budget),
:mod:`.claims` (GPU and link claims as intersection-union tests), :mod:`.drilldown` (search
proposes, the test disposes).
"""

from .budget import ErrorBudget, ProbeBudget
from .claims import ClaimResult
from .drilldown import SequentialResult, default_budget, rounds_needed, sequential_drilldown
from .eprocess import PairedTest, rounds_lower_bound
from .pairing import Layout, RoundOracle, shape, shaped_reference

__all__ = [
    "ClaimResult",
    "ErrorBudget",
    "Layout",
    "PairedTest",
    "ProbeBudget",
    "RoundOracle",
    "SequentialResult",
    "default_budget",
    "rounds_lower_bound",
    "rounds_needed",
    "sequential_drilldown",
    "shape",
    "shaped_reference",
]
