"""Issue 2's rounds target at the benchmark sizes: rounds <= 1.5 x ceil((n-1)/(k-1)).

A property of the deterministic plan (no timing). Slow tier: planning all 26 sizes takes
about a minute on 2 cores. Sizes whose cover is a transversal design with "infinite" GPUs
still miss the target at n=275, and so does n=175 (see docs/cover.md): they are listed as expected
failures, strict, so that a fix shows up as an unexpected pass.
"""

from __future__ import annotations

import pytest

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.cover.rounds import rounds_lower_bound

# k=8: n=275 (TD(8,32)+19): the infinite GPUs are in every group's sub-cover and the TD's
# parallel classes leave no group GPU idle (n=275 has too many infinite GPUs for the aligned
# cover); n=175: an annealed table cover of 595 probes whose floor is 37 (<= 37.5), but no
# schedule found below 49. n=75 is met by a cyclic cover (135 probes in 15 rounds,
# faultsense_pipelines/cover/cyclic.py), n=300 by a stored cover (1678 probes in 64 rounds,
# docs/cover_large.md).
OPEN = {(8, 175), (8, 275)}

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
