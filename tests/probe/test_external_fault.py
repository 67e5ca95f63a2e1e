"""A rank throttled from outside FaultSense, on a real ``all_ranks`` pool (exploratory tier).

Nothing is injected by the product: one worker process of a ``LocalExecutor(8, 4,
engine="all_ranks")`` is held to a tenth of a CPU by a cgroup v1 quota (SIGSTOP/SIGCONT duty
cycle where no cgroup is writable; ``bench/_outside_throttle.py``), and the default drill-down
must name it. Measured with the ``evidence`` drill-down that the sequential default replaced,
not yet with the default itself (``bench/results/external_fault.md``,
``.venv/bin/python -m bench.bench_external_fault_sweep --sweeps 5 --gpu 5 --cores 0.1``, its first
run, 2026-12-01): with this test's fixed quota of 0.1 core, named in 3 of 5 sweeps, nothing
blamed in the other 2, no healthy component ever blamed, the rank's own slowdown 1.71x. (The
README's 9 of 10 is another run of that file: a quota calibrated to an own slowdown of 2x,
``--target-own 2``; this test does not calibrate.) This test runs 5 sweeps and asks for no
wrong blame and the throttled GPU named at least twice.
"""

from __future__ import annotations

import pytest

from bench.bench_external_fault_sweep import sweep_counts

# not in CI: it needs a writable cgroup (the SIGSTOP fallback measured no slowdown on a loaded
# machine), takes about 30 minutes, and 3 of 5 measured sweeps make ">= 2 of 5" fail ~9% of runs
pytestmark = [pytest.mark.exploratory, pytest.mark.integration]

SWEEPS, GPU = 5, 5


def test_a_rank_throttled_from_outside_is_named_and_nothing_else_is_blamed():
    counts = sweep_counts(SWEEPS, gpu=GPU, cores=0.1)
    assert counts.own_slowdown > 1.3, counts  # the throttle took hold of the worker
    assert counts.wrong == 0, counts.blamed
    assert counts.named >= 2, counts.blamed
