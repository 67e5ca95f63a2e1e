"""The time-local baseline against plain Python loops written from its docstrings (brute force
over small random inputs), and the noise scale on a hand-worked sweep."""

from __future__ import annotations

import math
import random
import statistics

import pytest

from faultsense_pipelines.measure.baseline import _low_quantile as low_quantile  # the scalar definition
from faultsense_pipelines.measure.baseline import detrended_excess, estimate_sigma, measurement_order, time_detrended


def _time_detrended_loop(latencies: list[list[float]], baseline_ms: float, window: int) -> list[list[float]]:
    """The moving-window baseline written measurement by measurement (the docstring's rule)."""
    order = measurement_order(latencies)
    values = [latencies[i][j] for i, j in order]
    half = window // 2
    out: list[list[float]] = [[] for _ in latencies]
    for t, (i, _) in enumerate(order):
        lo = max(0, min(t - half, len(values) - window))
        here = values[lo : lo + window]
        out[i].append(values[t] / (low_quantile(here) if len(here) >= 3 else baseline_ms))
    return out


@pytest.mark.parametrize("ragged", [False, True])
def test_time_detrended_equals_the_loop(ragged: bool) -> None:
    rng = random.Random(11)
    for _ in range(150):
        probes, repeats = rng.randint(0, 30), rng.randint(1, 4)
        latencies = [
            [rng.lognormvariate(3.0, 0.4) for _ in range(rng.randint(0, repeats) if ragged else repeats)] for _ in range(probes)
        ]
        window = rng.choice([3, 5, 9])
        got = time_detrended(latencies, 20.0, window)
        want = _time_detrended_loop(latencies, 20.0, window)
        assert len(got) == len(want)
        for a, b in zip(got, want, strict=True):
            assert a == pytest.approx(b, rel=1e-12)


def test_detrended_excess_equals_statistics_median() -> None:
    rng = random.Random(5)
    rows = [[rng.lognormvariate(0.0, 0.2) for _ in range(rng.randint(0, 4))] for _ in range(200)]
    got = detrended_excess(rows)
    for rs, x in zip(rows, got, strict=True):
        if not rs:
            assert x is None
        else:
            assert x == pytest.approx(statistics.median(math.log(r) for r in rs), abs=1e-12)


def test_estimate_sigma_leaves_out_suspects() -> None:
    # the non-suspect excess has MAD 0.1 (values 0, +-0.1): 1.4826 x 0.1; the suspect's 5.0 is left out
    excess = [0.0, 0.1, -0.1, 0.0, 0.1, -0.1, 0.0, 5.0]
    lat = [[1.0]] * len(excess)
    assert abs(estimate_sigma(lat, excess, [7]) - 1.4826 * 0.1) < 1e-12


def test_the_low_quantile_interpolates_between_order_statistics() -> None:
    # 0.3 of the way through 11 sorted values is position 3.0: the fourth; of 6 values 1.5: halfway
    assert low_quantile([float(v) for v in range(10, -1, -1)]) == 3.0
    assert low_quantile([6.0, 1.0, 5.0, 2.0, 4.0, 3.0]) == 2.5
