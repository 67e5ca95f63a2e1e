"""Minder end to end on generated fleets: faults found with their onset, decoys ignored."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from faultsense_pipelines.minder import FaultLabel, MinderSettings, load_model, save_model, scan, train_minder
from faultsense_pipelines.minder.io import to_metric_array
from faultsense_pipelines.minder.model import reconstruct
from faultsense_pipelines.minder.synth import FAULT_KINDS, Injection, generate_fleet

METRICS = ("gpu_util", "gpu_power_w", "gpu_temp_c", "nvlink_tx_bytes", "pcie_rx_bytes", "net_tx_bytes",
           "pfc_tx_packets", "cpu_util", "mem_used_bytes")  # fmt: skip
TINY = MinderSettings(hidden=8, latent=2, train_steps=15, batch_size=64)
WINDOW_S = TINY.window_s


@pytest.fixture(scope="module")
def model():
    """A tiny model trained on 20 minutes of a healthy 32-machine fleet."""
    return train_minder(generate_fleet(32, 1200, metrics=METRICS, seed=100).array, TINY)


def _fleet(*injections: Injection, n: int = 64, seed: int = 1, **kwargs):
    return generate_fleet(n, 900, metrics=METRICS, injections=injections, seed=seed, **kwargs)


def test_one_throttled_machine_among_64_is_found_with_its_onset(model):
    fleet = _fleet(Injection("gpu_throttle", "node-0042", onset_s=317.0))
    faults = scan(fleet.array, model)
    assert [f.machine for f in faults] == ["node-0042"]
    onset = pd.Timestamp("2026-01-01T00:05:17Z")
    assert abs((faults[0].start - onset).total_seconds()) <= WINDOW_S
    # confirmed only after ~continuity_s of outlier windows (the first may hold the onset)
    assert (faults[0].confirmed_at - onset).total_seconds() >= TINY.continuity_s - WINDOW_S
    assert faults[0].metric in {"gpu_power_w", "gpu_util", "gpu_temp_c"}


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_every_kind_of_injected_fault_is_found_on_its_machine(model, kind):
    fleet = _fleet(Injection(kind, "node-0007", onset_s=240.0), n=32, seed=5)
    assert [f.machine for f in scan(fleet.array, model)] == ["node-0007"]


def test_a_30_second_blip_is_not_reported_though_it_is_an_outlier_while_it_lasts(model):
    fleet = _fleet(Injection("blip", "node-0010", onset_s=400.0, duration_s=30.0))
    assert scan(fleet.array, model) == ()
    # the blip is a real outlier: with continuity of a single window it would be reported
    short = scan(fleet.array, model, TINY.updated(continuity_s=WINDOW_S, max_gap_windows=0))
    assert "node-0010" in {f.machine for f in short}


def test_a_job_wide_slowdown_is_blamed_on_no_machine(model):
    fleet = _fleet(Injection("job_slowdown", None, onset_s=300.0))
    gpu = fleet.array.values[:, :, fleet.array.metrics.index("gpu_util")]
    assert np.nanmedian(gpu[:, 40:]) < 0.75 * np.nanmedian(gpu[:, :25])  # the slowdown is large
    assert scan(fleet.array, model) == ()


def test_gaps_unsorted_rows_and_a_vanished_machine_neither_crash_nor_skew_the_scan(model):
    fleet = _fleet(
        Injection("pcie_degraded", "node-0003", onset_s=300.0),
        missing_rate=0.05,
        disappear={"node-0020": 350.0, "node-0021": 120.0},
    )
    array = to_metric_array(fleet.to_frame(nan_rate=0.02, shuffle=True))  # as a scraper writes it
    assert array.machines == fleet.array.machines
    faults = scan(array, model)
    assert [f.machine for f in faults] == ["node-0003"]
    assert abs((faults[0].start - pd.Timestamp("2026-01-01T00:05:00Z")).total_seconds()) <= WINDOW_S


def test_a_slow_drift_is_dated_to_where_the_ramp_begins_not_where_it_was_confirmed(model):
    fleet = _fleet(Injection("slow_drift", "node-0001", onset_s=200.0), n=32)
    (fault,) = scan(fleet.array, model)
    onset = pd.Timestamp("2026-01-01T00:03:20Z")
    assert abs((fault.start - onset).total_seconds()) <= WINDOW_S
    assert (fault.confirmed_at - onset).total_seconds() >= TINY.continuity_s - WINDOW_S


def test_saved_and_loaded_model_gives_identical_reconstructions_and_faults(model, tmp_path):
    version = save_model(model, tmp_path / "m")
    loaded = load_model(tmp_path / "m")
    assert loaded.settings == model.settings and loaded.priority == model.priority
    windows = np.random.default_rng(0).standard_normal((50, model.window))
    for metric in model.metrics:
        np.testing.assert_array_equal(reconstruct(loaded.denoisers[metric], windows),
                                      reconstruct(model.denoisers[metric], windows))  # fmt: skip
    fleet = _fleet(Injection("nic_flapping", "node-0005", onset_s=250.0), n=32)
    assert scan(fleet.array, loaded) == scan(fleet.array, model)
    assert len(version) == 12 and save_model(loaded, tmp_path / "again") == version


def test_loading_a_directory_without_a_model_names_what_is_missing(tmp_path):
    with pytest.raises(ValueError, match=r"no Minder model in .* \(need minder.json and minder.safetensors\)"):
        load_model(tmp_path)


def test_scanning_at_another_interval_than_the_model_is_an_error(model):
    fleet = generate_fleet(8, 600, interval_s=5.0, metrics=METRICS, seed=1)
    with pytest.raises(ValueError, match=r"sampled every 5\.0 s, the model every 10\.0 s"):
        scan(fleet.array, model)


def test_labelled_history_puts_the_telling_metric_first():
    history = generate_fleet(
        24, 900, metrics=("cpu_util", "mem_used_bytes", "pfc_tx_packets"), seed=9,
        injections=[Injection("cpu_contention", "node-0002", 300.0), Injection("cpu_contention", "node-0011", 450.0)],
    )  # fmt: skip
    labels = [FaultLabel(m, history.array.time_at(t / 10)) for m, t in (("node-0002", 300), ("node-0011", 450))]
    trained = train_minder(history.array, TINY.updated(train_steps=2), labels)
    # without labels the default order would check pfc_tx_packets first
    assert trained.priority[0] == "cpu_util"
    assert train_minder(history.array, TINY.updated(train_steps=2)).priority[0] == "pfc_tx_packets"


def test_a_fault_already_present_when_the_data_begins_is_dated_to_the_first_window(model):
    fleet = _fleet(Injection("gpu_throttle", "node-0002", onset_s=0.0), n=32)
    (fault,) = scan(fleet.array, model)
    assert fault.machine == "node-0002" and fault.start == fleet.array.start
    assert fault.start < fault.confirmed_at


def test_too_few_machines_to_compare_is_an_error_not_an_empty_answer(model):
    with pytest.raises(ValueError, match="need at least 4 machines to compare, got 3"):
        scan(generate_fleet(3, 600, metrics=METRICS, seed=1).array, model)


def test_two_machines_failing_differently_at_once_are_both_found_with_their_own_onsets(model):
    fleet = _fleet(Injection("nvlink_degraded", "node-0011", 200.0), Injection("cpu_contention", "node-0050", 330.0))
    faults = {f.machine: f for f in scan(fleet.array, model)}
    assert sorted(faults) == ["node-0011", "node-0050"]
    assert abs((faults["node-0011"].start - fleet.array.time_at(20)).total_seconds()) <= WINDOW_S
    assert abs((faults["node-0050"].start - fleet.array.time_at(33)).total_seconds()) <= WINDOW_S
