"""Minder's onset: a change point on the machine's own series, not the first window over the alarm.

Data: the project's generator (faultsense_pipelines/minder/synth.py); faults injected into the
generated array by hand so the truth (machine, onset, size) is known independently of Minder.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from faultsense_pipelines.minder import MinderSettings, scan, train_minder
from faultsense_pipelines.minder.io import MetricArray
from faultsense_pipelines.minder.synth import Injection, generate_fleet

METRICS = ("nvlink_rx_bytes", "nvlink_tx_bytes", "gpu_power_w", "gpu_util", "pcie_tx_bytes", "cpu_util")


@pytest.fixture(scope="module")
def model():
    return train_minder(generate_fleet(48, 1800, 10.0, metrics=METRICS, seed=99).array, MinderSettings(train_steps=40))


def _scaled(array: MetricArray, machine: str, onset_s: float, factors: dict[str, float]) -> MetricArray:
    values = array.values.copy()
    row, t0 = array.machines.index(machine), int(onset_s // array.interval_s)
    for metric, factor in factors.items():
        values[row, t0:, array.metrics.index(metric)] *= factor
    return MetricArray(values, array.machines, array.metrics, array.start, array.interval_s)


def test_a_step_near_the_threshold_is_dated_at_its_start_not_where_it_crossed(model):
    """NVLink down 15% at 00:20:00 (was: reported 5 minutes late, when the score first crossed 14)."""
    array = generate_fleet(48, 2400, 10.0, metrics=METRICS, seed=4).array
    array = _scaled(array, "node-0007", 1200, {"nvlink_tx_bytes": 0.85, "nvlink_rx_bytes": 0.85})
    (fault,) = scan(array, model)
    assert fault.machine == "node-0007"
    truth = pd.Timestamp("2026-01-01T00:20:00Z")
    assert abs((fault.start - truth).total_seconds()) <= 60
    assert fault.confirmed_at > truth + pd.Timedelta(minutes=5)


def test_three_concurrent_faulty_machines_are_each_found_with_their_own_onset(model):
    injections = [
        Injection("nvlink_degraded", "node-0003", 600),
        Injection("gpu_throttle", "node-0021", 780),
        Injection("pcie_degraded", "node-0040", 950),
        Injection("blip", "node-0010", 700, 30.0),
    ]
    fleet = generate_fleet(48, 1800, 10.0, metrics=METRICS, injections=injections, seed=5)
    faults = scan(fleet.array, model)
    truth = dict(fleet.faults)
    assert {f.machine for f in faults} == set(truth)
    for f in faults:
        assert abs((f.start - truth[f.machine]).total_seconds()) <= 60, f


def test_the_onset_fit_does_not_reach_into_the_machines_previous_fault(model):
    injections = [Injection("cpu_contention", "node-0012", 300, 600.0), Injection("nvlink_degraded", "node-0012", 1300)]
    fleet = generate_fleet(48, 2100, 10.0, metrics=METRICS, injections=injections, seed=6)
    starts = sorted(f.start for f in scan(fleet.array, model) if f.machine == "node-0012")
    expected = [fleet.array.start + pd.Timedelta(seconds=s) for s in (300, 1300)]
    assert len(starts) == 2
    assert np.all([abs((a - b).total_seconds()) <= 60 for a, b in zip(starts, expected, strict=True)])
