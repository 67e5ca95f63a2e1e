"""The evidence drill-down's array forms against the plain Python loops they replace
(brute force over small random inputs): the probe index, per-GPU sums, the moving baseline
and the per-probe medians."""

from __future__ import annotations

import math
import random
import statistics

import numpy as np
import pytest

from faultsense_pipelines.localize.evidence.drilldown import (
    EvidenceModel,
    ProbeIndex,
    detrended_excess,
    measurement_order,
    time_detrended,
)
from faultsense_pipelines.localize.evidence.drilldown import _low_quantile as low_quantile  # the scalar definition


def _probes(rng: random.Random, n: int) -> list[tuple[tuple[int, ...], float]]:
    return [
        (tuple(sorted(rng.sample(range(n), rng.randint(1, min(n, 5))))), rng.gauss(0.0, 0.3)) for _ in range(rng.randint(0, 40))
    ]


def test_probe_index_holding_and_sums_equal_loops() -> None:
    rng = random.Random(3)
    model = EvidenceModel(sigma=0.03, effect=math.log(1.2))
    scale = model.pair_scale / math.sqrt(2.0)
    for _ in range(100):
        n = rng.randint(2, 12)
        probes = _probes(rng, n)
        index = ProbeIndex.build(n, probes)
        bad = np.array([rng.random() < 0.3 for _ in probes], dtype=bool)
        sums = index.summed(model, bad)
        for g in range(n):
            brute = sum(
                model.llr(x, duty=model.gpu_duty, scale=scale) for i, (p, x) in enumerate(probes) if g in p and not bad[i]
            )
            assert sums[g] == pytest.approx(brute, abs=1e-12)
        for _ in range(5):
            h = tuple(sorted(rng.sample(range(n), rng.randint(1, 2))))
            assert index.holding(h).tolist() == [i for i, (p, _) in enumerate(probes) if set(h) <= set(p)]


def test_probe_index_names_the_first_probe_outside_the_replica() -> None:
    with pytest.raises(ValueError, match=r"probe \[1, 9\] names a GPU outside 0\.\.3"):
        ProbeIndex.build(4, [((0, 1), 0.0), ((1, 9), 0.0), ((-1, 2), 0.0)])


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
