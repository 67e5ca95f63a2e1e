"""Issue 2's rounds target at the benchmark sizes: rounds <= 1.5 x ceil((n-1)/(k-1)).

A property of the deterministic plan (no timing). Slow tier: planning all 26 sizes takes
about a minute on 2 cores. n=175 still misses the target (see docs/cover.md): it is listed as
an expected failure, strict, so that a fix shows up as an unexpected pass.
"""

from __future__ import annotations

import pytest

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.cover.rounds import rounds_lower_bound

# k=8, n=175: an annealed table cover of 595 probes whose floor is 37 (<= 37.5), but no
# schedule found below 49, and no cover of <= 601 probes (1.10 x L) in 37 rounds found yet
# (docs/cover_large.md). n=75 is met by a cyclic cover (135 probes in 15 rounds,
# faultsense_pipelines/cover/cyclic.py), n=275 and n=300 by stored covers (1512 probes in 60
# rounds, 1678 in 64; docs/cover_large.md).
OPEN = {(8, 175)}

CASES = [
    pytest.param(n, k, marks=pytest.mark.xfail(strict=True, reason="open: see OPEN")) if (k, n) in OPEN
    else (n, k)
    for k in (4, 8) for n in range(25, 326, 25)
]


@pytest.mark.slow
@pytest.mark.parametrize(("n", "k"), CASES)
def test_best_cover_runs_in_at_most_one_and_a_half_times_the_rounds_reference(n, k):
    cover = plan_cover(n, k, "best")
    reference = -(-(n - 1) // (k - 1))  # a GPU meets k-1 others per probe
    assert rounds_lower_bound(cover.probes, n) <= len(cover.rounds)
    assert len(cover.rounds) <= 1.5 * reference
