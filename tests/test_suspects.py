"""Suspect rules: the paper's median ratio and the noise-aware robust rule."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from faultsense_pipelines.localize.suspects import MedianRatioRule, RobustRule, probe_fails, probe_zone, repeat_noise
from tests.hypothesis_profiles import examples

LATENCIES = st.lists(st.floats(min_value=1.0, max_value=100.0), min_size=3, max_size=60)


@settings(max_examples=examples(60), deadline=None)
@given(LATENCIES, st.floats(min_value=0.2, max_value=20.0))
@example([1.0, 1.0, 1.1], 0.875)  # a fresh draw once found this: the probe at the threshold turned suspect
def test_a_uniform_shift_of_all_probes_changes_no_suspect(latencies, factor):
    for rule in (MedianRatioRule(), RobustRule()):
        before = rule.judge([[v] for v in latencies])
        after = rule.judge([[v * factor] for v in latencies])
        assert after.suspects == before.suspects
        assert after.replica_degraded == before.replica_degraded


@pytest.mark.parametrize(
    ("latencies", "factor"),
    [
        ([1.0, 1.0, 1.1], 0.875),  # RobustRule: 1.1 is exactly min_slowdown above the baseline
        ([1.0, 1.0, 1.2], 0.875),  # MedianRatioRule: 1.2 is exactly alpha above the median
        ([1.0, 1.0, 1.1, 1.2, 1.0], 1 / 3),
        ([5.0, 5.0, 5.5, 6.0], 7.0),
    ],
)
def test_a_probe_exactly_at_the_threshold_stays_below_it_under_any_scaling(latencies, factor):
    for rule in (MedianRatioRule(), RobustRule()):
        before = rule.judge([[v] for v in latencies])
        after = rule.judge([[v * factor] for v in latencies])
        assert (after.suspects, after.replica_degraded) == (before.suspects, before.replica_degraded)


@pytest.mark.parametrize("base", [5.0, 20.0, 400.0])
def test_identical_healthy_probes_give_no_suspect(base):
    for rule in (MedianRatioRule(), RobustRule()):
        v = rule.judge([[base]] * 40)
        assert v.suspects == () and not v.replica_degraded
        assert v.baseline_ms == pytest.approx(base)


def test_the_paper_rule_flags_probes_above_alpha_times_the_median():
    v = MedianRatioRule(alpha=1.25).judge([[10.0], [12.4], [12.6], [10.0], [9.0]])
    assert v.baseline_ms == 10.0 and v.threshold_ms == 12.5
    assert v.suspects == (2,)


def test_robust_rule_uses_the_median_of_repeats_so_one_outlier_repeat_is_ignored():
    probes = [[20.0, 20.1, 19.9]] * 30 + [[20.0, 90.0, 20.1]]
    assert RobustRule().judge(probes).suspects == ()


def test_robust_rule_keeps_its_baseline_when_a_fault_touches_half_the_probes():
    # n=8, k=4: a slow GPU is in 3 of the 6 probes; the median alone would sit between
    probes = [[20.0], [36.0], [20.0], [36.0], [20.0], [36.0]]
    v = RobustRule().judge(probes)
    assert v.baseline_ms == pytest.approx(20.0)
    assert v.suspects == (1, 3, 5) and not v.replica_degraded


def test_when_most_probes_are_slow_the_replica_is_degraded_and_nobody_is_suspect():
    probes = [[20.0]] * 10 + [[30.0]] * 14 + [[33.0]] * 6
    v = RobustRule().judge(probes)
    assert v.replica_degraded and v.suspects == ()


def test_robust_rule_false_alarm_rate_under_lognormal_noise_is_within_its_budget():
    # 400 healthy sweeps of 100 probes, sigma 0.03: the rule promises <= 1% sweeps with a suspect
    rng = random.Random(1)
    rule = RobustRule(false_alarm=0.01)
    alarms = sum(bool(rule.judge([[20.0 * math.exp(rng.gauss(0, 0.03))] for _ in range(100)]).suspects) for _ in range(400))
    assert alarms <= 12  # 1% of 400 = 4 expected; binomial tail allows a few more


def test_robust_rule_finds_a_1_3x_slowdown_under_3_percent_noise():
    rng = random.Random(2)
    probes = [[20.0 * math.exp(rng.gauss(0, 0.03))] for _ in range(100)]
    probes[17] = [26.0 * math.exp(rng.gauss(0, 0.03))]
    assert RobustRule().judge(probes).suspects == (17,)


def test_probe_fails_compares_the_median_of_repeats():
    assert probe_fails([10.0, 30.0, 11.0], 10.5)
    assert not probe_fails([10.0, 30.0, 10.2], 10.5)


@pytest.mark.parametrize(
    "make, field",
    [
        (lambda: MedianRatioRule(alpha=1.0), "alpha"),
        (lambda: MedianRatioRule(alpha=float("nan")), "alpha"),
        (lambda: RobustRule(false_alarm=0.0), "false_alarm"),
        (lambda: RobustRule(min_slowdown=0.9), "min_slowdown"),
        (lambda: RobustRule(max_sigma=-1.0), "max_sigma"),
    ],
)
def test_bad_rule_parameters_are_named(make, field):
    with pytest.raises(ValueError, match=field):
        make()


@pytest.mark.parametrize("bad", [[[]], [[float("nan")]], [[-1.0]], [[0.0]]])
def test_bad_latencies_are_rejected(bad):
    with pytest.raises(ValueError):
        RobustRule().judge(bad)


def _loaded_sweep(slow: float) -> list[list[float]]:
    """6 probes x 5 repeats: repeat noise sigma ~0.25 (a loaded machine), medians of the
    first three spread by +-0.15 in log, the last three ``slow`` times the first three."""
    noise = [0.7, 1.0, 1.3, 0.85, 1.15]
    healthy = [20.0 * math.exp(d) for d in (-0.15, 0.0, 0.15)]
    return [[b * m for m in noise] for b in healthy] + [[slow * b * m for m in noise] for b in healthy]


def test_noise_measured_within_probes_explains_a_wide_healthy_spread_so_half_slow_is_not_degraded():
    # between-probe MAD of 3 healthy probes alone reads the sweep as having no healthy cluster
    assert RobustRule(min_slowdown=2.0, use_repeats=False).judge(_loaded_sweep(3.0)).replica_degraded
    v = RobustRule(min_slowdown=2.0).judge(_loaded_sweep(3.0))
    assert not v.replica_degraded and v.suspects == (3, 4, 5)
    healthy = RobustRule(min_slowdown=2.0).judge(_loaded_sweep(1.0))
    assert not healthy.replica_degraded and healthy.suspects == ()


def test_repeat_noise_needs_three_repeats_and_ignores_a_fault_that_slows_every_repeat():
    assert repeat_noise([[10.0, 11.0]] * 4) is None
    quiet = repeat_noise([[10.0, 10.5, 9.5]] * 6)
    assert repeat_noise([[10.0, 10.5, 9.5]] * 5 + [[30.0, 31.5, 28.5]]) == pytest.approx(quiet)


def test_with_repeats_a_wide_healthy_spread_is_degraded_only_when_suspects_do_not_stand_apart():
    # quiet repeats (sigma ~0.01) but healthy medians spread +-0.2 in log: noise can't explain it
    noise = [0.99, 1.0, 1.01, 0.995, 1.005]
    spread = [20.0 * math.exp(d) for d in (-0.2, 0.0, 0.2)]
    apart = [[b * m for m in noise] for b in spread] + [[60.0 * m for m in noise]] * 3
    v = RobustRule(min_slowdown=2.0).judge(apart)
    assert not v.replica_degraded and v.suspects == (3, 4, 5)
    # a continuum 20 .. 52 ms: the "slow" probes are just the top of the spread
    continuum = [[20.0 * math.exp(0.2 * i) * m for m in noise] for i in range(6)]
    assert RobustRule(min_slowdown=1.1).judge(continuum).replica_degraded


@pytest.mark.parametrize(
    ("ratio", "zone", "settled"),
    [(1.3, "fail", "fail"), (1.1, "again", "fail"), (1.2, "again", "fail"), (1.2**0.5, "pass", "pass"), (1.0, "pass", "pass")],
)
def test_the_three_zone_judgement_fails_above_t_passes_below_half_and_otherwise_measures_again(ratio, zone, settled):
    # a probe exactly at the threshold (1.2) or at its root (sqrt 1.2) is not above it, under any scaling
    t = math.log(1.2)
    for base in (1.0, 0.875, 7.3):
        x = math.log(ratio * base) - math.log(base)
        assert probe_zone(x, t) == zone
        assert probe_zone(x, t, remeasured=True) == settled
