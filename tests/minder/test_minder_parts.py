"""Minder's pure parts: fleet distances, outlier scores, continuity, onset, priority."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from faultsense_pipelines.minder.continuity import _split_sse, confirmed_runs, estimate_onset
from faultsense_pipelines.minder.priority import default_priority, learn_priority
from faultsense_pipelines.minder.similarity import fleet_distances, outlier_scores
from tests.hypothesis_profiles import examples


def _brute_force(windows: np.ndarray, valid: np.ndarray) -> np.ndarray:
    n, n_windows, length = windows.shape
    out = np.full((n, n_windows), np.nan)
    for w in range(n_windows):
        members = np.flatnonzero(valid[:, w])
        for i in members:
            others = [j for j in members if j != i]
            if others:
                out[i, w] = np.sqrt(np.mean([np.sum((windows[i, w] - windows[j, w]) ** 2) for j in others]) / length)
    return out


@settings(max_examples=examples(60), deadline=None)
@given(
    windows=arrays(np.float64, st.tuples(st.integers(1, 7), st.integers(1, 3), st.integers(1, 5)), elements=st.floats(-100, 100)),
    data=st.data(),
)
def test_fleet_distance_is_the_rms_distance_to_every_other_valid_machine(windows, data):
    valid = data.draw(arrays(bool, windows.shape[:2]))
    np.testing.assert_allclose(fleet_distances(windows, valid), _brute_force(windows, valid), rtol=1e-6, atol=1e-6)


def test_shifting_every_machine_together_leaves_scores_unchanged():
    rng = np.random.default_rng(0)
    windows = rng.standard_normal((20, 4, 6))
    windows[3] += 5.0
    valid = np.ones((20, 4), bool)
    before = outlier_scores(fleet_distances(windows, valid), min_spread=0.01)
    after = outlier_scores(fleet_distances(windows * 1.0 - 30.0, valid), min_spread=0.01)
    np.testing.assert_allclose(before, after, atol=1e-9)
    assert np.all(np.argmax(before, axis=0) == 3)


def test_windows_with_too_few_machines_get_no_score():
    d = np.array([[1.0, 1.0], [2.0, np.nan], [3.0, np.nan], [9.0, 2.0]])
    scores = outlier_scores(d, min_spread=0.1, min_machines=3)
    assert np.isnan(scores[:, 1]).all() and not np.isnan(scores[:, 0]).any()


def test_runs_shorter_than_the_continuity_are_not_confirmed():
    scores = np.zeros((3, 10))
    scores[0, 2:6] = 9.0  # 4 windows
    scores[1, 1:6] = 9.0  # 5 windows
    scores[2, [1, 2, 4, 5, 6]] = 9.0  # 6 windows with one gap
    assert [r.machine for r in confirmed_runs(scores, 5.0, 5)] == [1]
    runs = confirmed_runs(scores, 5.0, 5, max_gap=1)
    assert [(r.machine, r.first, r.last, r.confirmed) for r in runs] == [(1, 1, 5, 5), (2, 1, 6, 5)]


def test_nan_scores_never_count_as_outliers():
    scores = np.full((2, 6), np.nan)
    scores[0] = 9.0
    assert [r.machine for r in confirmed_runs(scores, 5.0, 6)] == [0]


@pytest.mark.parametrize("onset", [5, 17, 33])
def test_onset_of_a_noisy_step_is_found_within_two_samples(onset):
    rng = np.random.default_rng(onset)
    y = rng.normal(0, 0.3, 40)
    y[onset:] += 2.0
    y[[3, 25]] = np.nan
    assert abs(estimate_onset(y) - onset) <= 2


def test_onset_of_a_noisy_ramp_is_where_it_leaves_the_flat():
    rng = np.random.default_rng(1)
    t = np.arange(60.0)
    y = np.maximum(0.0, t - 20) * 0.2 + rng.normal(0, 0.2, 60)
    assert abs(estimate_onset(y) - 20) <= 4


def test_split_errors_match_least_squares_fits_at_every_split():
    """Brute force: for each split, a mean on the left and a fitted line on the right (lstsq)."""
    rng = np.random.default_rng(3)
    t = np.sort(rng.choice(80, 30, replace=False)).astype(float)  # uneven times, as with gaps
    y = rng.normal(0, 1, 30) + np.where(t > 40, 0.1 * (t - 40), 0.0)
    expected = []
    for k in range(1, 30):
        left = np.sum((y[:k] - y[:k].mean()) ** 2)
        design = np.column_stack([np.ones(30 - k), t[k:]])
        fit = np.linalg.lstsq(design, y[k:], rcond=None)[0]
        expected.append(left + np.sum((y[k:] - design @ fit) ** 2))
    np.testing.assert_allclose(_split_sse(y, t), expected, rtol=1e-9, atol=1e-9)


@given(
    st.integers(3, 37),  # the break
    st.floats(-5, 5),  # healthy level
    st.floats(0.5, 5) | st.floats(-5, -0.5),  # jump
    st.floats(-0.25, 0.25),  # slope after the break, per sample (jump - slope != 0: not one line)
)
@settings(max_examples=examples(60))
def test_a_noiseless_level_then_line_is_split_at_its_break(onset, level, jump, slope):
    """Constant, then a line with its own jump and slope: the one split with zero error. (A jump
    equal to the slope would make the last healthy sample part of the line: no unique break.)"""
    t = np.arange(40.0)
    y = np.where(t < onset, level, level + jump + slope * (t - onset))
    assert estimate_onset(y) == onset


def test_decision_tree_priority_ranks_the_separating_metric_first():
    rng = np.random.default_rng(0)
    z = np.abs(rng.standard_normal((400, 3)))
    faulty = rng.random(400) < 0.2
    z[faulty, 1] += 6.0  # only metric b tells faulty windows apart
    assert learn_priority(z, faulty, ("a", "b", "c"))[0] == "b"
    with pytest.raises(ValueError, match="both faulty and healthy"):
        learn_priority(z, np.zeros(400, bool), ("a", "b", "c"))


def test_default_priority_keeps_unknown_metrics_last_by_name():
    assert default_priority(("zz", "mem_used_bytes", "pfc_tx_packets", "aa")) == (
        "pfc_tx_packets", "mem_used_bytes", "aa", "zz")  # fmt: skip
