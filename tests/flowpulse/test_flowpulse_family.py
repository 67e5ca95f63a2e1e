"""The jointly calibrated four-CUSUM family (detect.FAMILY_TESTS), checked by independent smaller computations.

bench/bench_flowpulse_family.py derives each port's effective number of tests m_eff by importance
sampling of the four correlated CUSUMs (200,000 paths a base shift). Here, independently:

- where m_eff is well below 4 (base shifts >= 1.19 but 1.41), a Markov-chain evaluation of each design's
  CUSUM alone (Brook & Evans 1972; a design at >= 8 standard deviations alarms on single rows,
  P(z > h/d + d/2)) and the union bound (the sum of the four rates, no sampling at all) already
  keep the budget with the table's m: the saving there is mostly Siegmund's formula being
  conservative above ~5 standard deviations, not the overlap;
- below, where the saving rests on the overlap, a small importance-sampling run of its own
  (2,000 paths, seed 7, a per-design tilt chosen at random, the union's weight computed from the
  four cumulative log-likelihood ratios) must not exceed the budget beyond its noise.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm

from faultsense_pipelines.flowpulse.detect import (
    DESIGN_LOSSES,
    FALSE_ALARM_RATE,
    FAMILY_BASES,
    FAMILY_RATIOS,
    FAMILY_TESTS,
    MIN_SHIFT,
    cusum_threshold,
    family_tests,
    is_calibrated_family,
)
from tests.flowpulse.brook_evans import cusum_arl


def _single_rate(d: float, h: float) -> float:
    """False alarms per row of one design's CUSUM (log-likelihood ratio d (z - d/2), z ~ N(0, 1))."""
    return 1 / cusum_arl(-d * d / 2, d, h, bins=300) if d < 8 else float(norm.sf(h / d + d / 2))


def _family(base: float) -> np.ndarray:
    d = base * np.asarray(FAMILY_RATIOS)
    return d[d >= MIN_SHIFT]


@pytest.mark.parametrize("base", [b for b in FAMILY_BASES if 1.18 < b < 9 and b != 2**0.5])
def test_the_union_bound_over_exact_single_rates_keeps_the_budget_with_the_tables_m(base):
    d = _family(base)
    h = cusum_threshold(d, FALSE_ALARM_RATE, float(family_tests(base)))
    assert sum(_single_rate(di, hi) for di, hi in zip(d, h, strict=True)) <= 1.05 * FALSE_ALARM_RATE


def _union_rate_is(base: float, m: float, paths: int, seed: int) -> tuple[float, float]:
    """Union false-alarm rate per row of the family's CUSUMs with thresholds at m, and its standard error."""
    rng = np.random.default_rng(seed)
    d = _family(base)
    h = cusum_threshold(d, FALSE_ALARM_RATE, m)
    # mean regeneration cycle under H0 (all statistics back at 0), plain Monte Carlo
    s, length, alive = np.zeros((20_000, d.size)), np.zeros(20_000), np.ones(20_000, dtype=bool)
    while alive.any():
        i = np.flatnonzero(alive)
        s[i] = np.maximum(0.0, s[i] + d * (rng.standard_normal(i.size)[:, None] - d / 2))
        length[i] += 1
        alive[i[(s[i] <= 0).all(axis=1)]] = False
    # P(alarm within a cycle): each path tilted to one design's alternative, weighted by the mixture
    hits = np.zeros(paths)
    for p in range(paths):
        mu = d[rng.integers(d.size)]
        s, cum = np.zeros(d.size), np.zeros(d.size)
        for _ in range(5_000):
            llr = d * (rng.standard_normal() + mu - d / 2)
            cum += llr
            s = np.maximum(0.0, s + llr)
            if (s >= h).any():
                hits[p] = 1.0 / np.mean(np.exp(cum))
                break
            if (s <= 0).all():
                break
    mean_len = length.mean()
    return float(hits.mean() / mean_len), float(hits.std() / math.sqrt(paths) / mean_len)


@pytest.mark.parametrize("base", [0.5, 1.0, 2**0.5])
def test_a_small_independent_importance_sampling_run_keeps_the_budget_where_the_overlap_matters(base):
    m = float(family_tests(base))
    rate, se = _union_rate_is(base, m, paths=2_000, seed=7)
    assert rate <= FALSE_ALARM_RATE * 1.1 + 3 * se
    # and Bonferroni's m = 4 is below the budget there: the family's CUSUMs overlap
    bonferroni, se4 = _union_rate_is(base, 4.0, paths=2_000, seed=8)
    assert bonferroni <= FALSE_ALARM_RATE + 3 * se4


def test_family_tests_takes_the_larger_neighbour_and_applies_only_to_the_default_family():
    i = FAMILY_BASES.index(2.0)
    between = math.sqrt(FAMILY_BASES[i] * FAMILY_BASES[i + 1])
    assert float(family_tests(between)) == max(FAMILY_TESTS[i], FAMILY_TESTS[i + 1])
    assert all(1.0 <= m <= 4.0 for m in FAMILY_TESTS)
    assert is_calibrated_family(DESIGN_LOSSES, FALSE_ALARM_RATE)
    assert is_calibrated_family((0.005, 0.01, 0.02, 0.04), FALSE_ALARM_RATE)
    assert not is_calibrated_family((0.0025, 0.005, 0.01), FALSE_ALARM_RATE)
    assert not is_calibrated_family(DESIGN_LOSSES, 1e-8)


def test_the_down_link_cells_one_percent_design_gets_a_lower_threshold_than_under_bonferroni():
    # 1% at 522k packets on a spine (share 1/32): the 1% design's shift 7.1, the family's base 1.79
    delta = 0.01 * math.sqrt(522_240 * (1 - 1 / 32))
    h_joint = float(cusum_threshold(delta, FALSE_ALARM_RATE, float(family_tests(delta / 4))))
    h_bonf = float(cusum_threshold(delta, FALSE_ALARM_RATE, 4))
    assert h_bonf - h_joint == pytest.approx(math.log(4 / 3.44), abs=1e-6)
