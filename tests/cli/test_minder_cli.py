"""``faultsense minder train`` and ``faultsense minder scan``: the JSON contract and bad input."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from faultsense_pipelines.cli import app
from faultsense_pipelines.minder.synth import Injection, generate_fleet

METRICS = ("gpu_power_w", "gpu_util", "net_tx_bytes", "pfc_tx_packets")
TINY = ["--steps", "10"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("minder")
    generate_fleet(16, 900, metrics=METRICS, seed=3).to_frame().to_csv(root / "history.csv", index=False)
    scanned = generate_fleet(16, 900, metrics=METRICS, seed=4,
                             injections=[Injection("gpu_throttle", "node-0009", 300.0)])  # fmt: skip
    scanned.to_frame(nan_rate=0.01).to_parquet(root / "now.parquet")
    return root


def _run(*args: str):
    return CliRunner().invoke(app, ["minder", *args])


def test_train_then_scan_prints_the_faulty_machine_and_its_onset_as_json(files):
    trained = _run("train", "--metrics", str(files / "history.csv"), "--out", str(files / "model"), *TINY)
    assert trained.exit_code == 0, trained.output
    assert (files / "model" / "minder.safetensors").is_file() and (files / "model" / "minder.json").is_file()
    result = _run("scan", "--metrics", str(files / "now.parquet"), "--model", str(files / "model"), "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert list(report) == ["faults"] and len(report["faults"]) == 1
    (fault,) = report["faults"]
    assert set(fault) == {"machine", "start", "metric", "score"}
    assert fault["machine"] == "node-0009" and fault["metric"] in METRICS
    assert isinstance(fault["score"], float) and fault["score"] > 0
    onset = pd.Timestamp(fault["start"])  # ISO 8601 with its UTC offset
    assert onset.tzinfo is not None
    assert abs((onset - pd.Timestamp("2026-01-01T00:05:00Z")).total_seconds()) <= 60


def test_scan_without_a_model_trains_on_the_file_itself(files):
    result = _run("scan", "--metrics", str(files / "now.parquet"), "--json", *TINY)
    assert result.exit_code == 0, result.output
    assert [f["machine"] for f in json.loads(result.stdout)["faults"]] == ["node-0009"]


def test_scan_of_the_last_minutes_only_sees_what_is_in_them(files):
    # the last 4 minutes hold no healthy lead-in and are shorter than the 5-minute continuity
    result = _run("scan", "--metrics", str(files / "now.parquet"), "--model", str(files / "model"),
                  "--json", "--last-s", "240")  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"faults": []}


@pytest.mark.parametrize(
    ("content", "named"),
    [
        ("timestamp,machine,value\n2026-01-01T00:00:00Z,a,1\n", "missing column 'metric'"),
        ("timestamp,machine,metric,value\n2026-01-01T00:00:00Z,a,m,1\n2026-01-01T00:00:10Z,a,m,fast\n",
         "non-numeric entries, e.g. 'fast'"),
        ("", "empty"),
    ],
)  # fmt: skip
def test_bad_metrics_file_is_one_line_naming_the_problem_and_exit_2(tmp_path, content, named):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    for args in (["scan", "--metrics", str(path), "--json"], ["train", "--metrics", str(path), "--out", str(tmp_path / "m")]):
        result = _run(*args)
        assert result.exit_code == 2
        assert result.stdout == ""
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and named in lines[0]


def test_scan_with_a_directory_that_holds_no_model_exits_2(files, tmp_path):
    result = _run("scan", "--metrics", str(files / "now.parquet"), "--model", str(tmp_path), "--json")
    assert result.exit_code == 2 and "no Minder model in" in result.stderr


def test_train_with_labels_orders_the_metrics_by_the_labelled_faults(tmp_path):
    history = generate_fleet(16, 900, metrics=("cpu_util", "pfc_tx_packets"), seed=8,
                             injections=[Injection("cpu_contention", "node-0003", 300.0)])  # fmt: skip
    history.to_frame().to_csv(tmp_path / "history.csv", index=False)
    (tmp_path / "labels.csv").write_text("machine,start\nnode-0003,2026-01-01T00:05:00Z\n")
    result = _run("train", "--metrics", str(tmp_path / "history.csv"), "--out", str(tmp_path / "m"),
                  "--labels", str(tmp_path / "labels.csv"), "--steps", "2")  # fmt: skip
    assert result.exit_code == 0, result.output
    manifest = json.loads((tmp_path / "m" / "minder.json").read_text())
    assert manifest["priority"] == ["cpu_util", "pfc_tx_packets"]  # the default puts pfc first
    bad = tmp_path / "bad_labels.csv"
    bad.write_text("machine,start\nnode-0003,not-a-time\n")
    result = _run("train", "--metrics", str(tmp_path / "history.csv"), "--out", str(tmp_path / "m2"), "--labels", str(bad))
    assert result.exit_code == 2 and "bad time at row 0" in result.stderr


def test_a_model_trained_at_10_s_scans_1_s_data_averaged_onto_its_interval(tmp_path):
    metrics = ("gpu_power_w", "gpu_util")
    generate_fleet(8, 600, 1.0, metrics=metrics, seed=6).to_frame().to_parquet(tmp_path / "history.parquet")
    fine = generate_fleet(8, 900, 1.0, metrics=metrics, seed=7, injections=[Injection("gpu_throttle", "node-0006", 300.0)])
    fine.to_frame().to_parquet(tmp_path / "now.parquet")
    trained = _run("train", "--metrics", str(tmp_path / "history.parquet"), "--out", str(tmp_path / "m"),
                   "--interval-s", "10", "--steps", "5")  # fmt: skip
    assert trained.exit_code == 0, trained.output
    assert json.loads((tmp_path / "m" / "minder.json").read_text())["interval_s"] == 10.0
    result = _run("scan", "--metrics", str(tmp_path / "now.parquet"), "--model", str(tmp_path / "m"), "--json")
    assert result.exit_code == 0, result.output
    (fault,) = json.loads(result.stdout)["faults"]
    assert fault["machine"] == "node-0006"
    assert abs((pd.Timestamp(fault["start"]) - pd.Timestamp("2026-01-01T00:05:00Z")).total_seconds()) <= 60
