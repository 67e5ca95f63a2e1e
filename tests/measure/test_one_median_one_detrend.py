"""The sweep-wide forms of a probe's latency and of round detrending are the per-probe ones.

``probe_latencies_ms`` (one array computation) against :func:`statistics.median` of each row,
and ``detrend_rounds`` of a ``(P, R)`` array against the formula written out for lists, float
for float.
"""

from __future__ import annotations

import random
import statistics

import numpy as np
import pytest

from faultsense_pipelines.measure.rounds import detrend_rounds
from faultsense_pipelines.measure.threshold import probe_latencies_ms, probe_latency_ms


def _sweep(seed: int, probes: int, repeats: int) -> list[list[float]]:
    rng = random.Random(seed)
    return [[rng.lognormvariate(3.0, 0.3) for _ in range(repeats)] for _ in range(probes)]


@pytest.mark.parametrize("repeats", [1, 2, 3, 4, 6, 9])
def test_probe_latencies_are_the_median_of_each_probe_float_for_float(repeats: int) -> None:
    rows = _sweep(repeats, 50, repeats)
    expected = [statistics.median(r) for r in rows]
    assert probe_latencies_ms(rows).tolist() == expected
    assert probe_latencies_ms(np.asarray(rows)).tolist() == expected
    assert [probe_latency_ms(r) for r in rows] == expected


def test_probe_latencies_of_unequal_or_bad_rows_go_probe_by_probe() -> None:
    assert probe_latencies_ms([[1.0, 3.0], [5.0]]).tolist() == [2.0, 5.0]
    with pytest.raises(ValueError, match="finite and > 0"):
        probe_latencies_ms([[1.0, 3.0], [float("nan"), 1.0]])
    with pytest.raises(ValueError, match="at least one measured probe"):
        probe_latencies_ms([])


@pytest.mark.parametrize("repeats", [2, 3, 5])
def test_detrending_an_array_gives_the_floats_of_the_list_formula(repeats: int) -> None:
    rows = _sweep(10 + repeats, 40, repeats)
    f = [statistics.median(row[j] for row in rows) for j in range(repeats)]
    typical = statistics.median(f)
    expected = [[v * typical / f[j] for j, v in enumerate(row)] for row in rows]
    assert detrend_rounds(rows) == expected
    assert detrend_rounds(np.asarray(rows)).tolist() == expected


def test_one_round_or_unequal_rounds_are_left_alone() -> None:
    one = np.asarray([[10.0], [30.0]])
    assert detrend_rounds(one) is one
    assert detrend_rounds([[10.0, 11.0], [30.0]]) == [[10.0, 11.0], [30.0]]
