"""``faultsense flowpulse``: the scan JSON contract and one-line errors with exit 2."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from typer.testing import CliRunner

from faultsense_pipelines.cli import app

runner = CliRunner()


def _simulate(tmp_path, *extra: str):
    result = runner.invoke(
        app, ["flowpulse", "simulate", "--out", str(tmp_path), "--buffer-gib", "4", "--iterations", "60", "--seed", "3", *extra]
    )
    assert result.exit_code == 0, result.output
    return tmp_path / "counters.parquet", tmp_path / "topology.json"


def test_scan_json_names_the_lossy_link_with_the_contract_fields(tmp_path):
    counters, topology = _simulate(
        tmp_path, "--loss", "0.01", "--lossy-leaf", "2", "--lossy-spine", "6", "--direction", "down", "--start", "30"
    )
    result = runner.invoke(app, ["flowpulse", "scan", "--counters", str(counters), "--topology", str(topology), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert list(payload) == ["faults", "explained"] and payload["explained"] == []
    (fault,) = payload["faults"]
    assert list(fault)[:5] == ["switch", "port", "peer", "first_iteration", "loss_estimate"]  # the contract, in order
    assert (fault["switch"], fault["port"], fault["peer"], fault["peer_observed"]) == ("leaf02", "up06", "spine06", True)
    assert isinstance(fault["first_iteration"], int) and abs(fault["first_iteration"] - 30) <= 1
    assert 0.007 < fault["loss_estimate"] < 0.013


def test_scan_of_a_healthy_run_with_a_down_link_prints_no_faults(tmp_path):
    counters, topology = _simulate(tmp_path, "--loss", "0", "--down", "1,3", "--leaves-only")
    result = runner.invoke(app, ["flowpulse", "scan", "--counters", str(counters), "--topology", str(topology), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["faults"] == []
    # leaf counters only: with leaf01-spine03 down, ring traffic leaves spine03's link to leaf02
    # idle too (leaf02 receives through spine03 only what leaf01 sends); any explanation is
    # that spine's traffic, never a loss
    assert {e["spine"] for e in payload["explained"]} <= {"spine03"}


def test_scan_json_explains_an_unmarked_down_link_as_traffic_not_loss(tmp_path):
    # the link leaf01-spine03 is down, but the topology file says every link is up: no loss,
    # and the one change is named for what it is
    counters, topology = _simulate(tmp_path, "--loss", "0", "--down", "1,3")
    spec = json.loads(topology.read_text())
    assert [(x["a"], x["b"]) for x in spec["links"] if x["status"] == "down"] == [("leaf01", "spine03")]
    for x in spec["links"]:
        x["status"] = "up"
    topology.write_text(json.dumps(spec))
    result = runner.invoke(app, ["flowpulse", "scan", "--counters", str(counters), "--topology", str(topology), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["faults"] == []
    (change,) = payload["explained"]
    assert (change["kind"], change["leaf"], change["spine"], change["first_iteration"]) == (
        "unmarked down link",
        "leaf01",
        "spine03",
        0,
    )


def test_scan_of_malformed_counters_fails_with_one_line_and_exit_2(tmp_path):
    counters, topology = _simulate(tmp_path, "--loss", "0")
    frame = pd.read_parquet(counters)
    frame.loc[5, "direction"] = "ingress"
    bad = tmp_path / "bad.csv"
    frame.to_csv(bad, index=False)
    result = runner.invoke(app, ["flowpulse", "scan", "--counters", str(bad), "--topology", str(topology)])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: counters: column 'direction' must be 'rx' or 'tx', got 'ingress' (row 5)"


@pytest.mark.parametrize("threshold", ["nan", "inf", "-inf"])
def test_scan_refuses_a_threshold_that_is_not_a_finite_number(tmp_path, threshold):
    # a NaN or infinite CUSUM level would never alarm: "0 lossy links" from a lossy run
    counters, topology = _simulate(tmp_path, "--loss", "0.02", "--lossy-leaf", "1", "--lossy-spine", "2", "--start", "20")
    args = ["flowpulse", "scan", "--counters", str(counters), "--topology", str(topology), "--threshold", threshold]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    assert result.stderr.strip().startswith("error: threshold must be a finite number > 0, got ")


def test_scan_refuses_counters_with_a_header_and_no_rows(tmp_path):
    counters, topology = _simulate(tmp_path, "--loss", "0")
    empty = tmp_path / "header.csv"
    pd.read_parquet(counters).head(0).to_csv(empty, index=False)
    result = runner.invoke(app, ["flowpulse", "scan", "--counters", str(empty), "--topology", str(topology)])
    assert result.exit_code == 2
    assert result.stderr.strip() == f"error: counters file {empty} has no rows"


def test_scan_with_a_missing_topology_file_fails_with_exit_2(tmp_path):
    counters, _ = _simulate(tmp_path, "--loss", "0")
    result = runner.invoke(app, ["flowpulse", "scan", "--counters", str(counters), "--topology", str(tmp_path / "no.yaml")])
    assert result.exit_code == 2
    assert "cannot read topology file" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_simulate_rejects_a_down_link_that_is_not_two_indices(tmp_path):
    result = runner.invoke(app, ["flowpulse", "simulate", "--out", str(tmp_path), "--down", "1,x"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "error: --down takes LEAF,SPINE (two indices), got '1,x'"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--loss", "-0.1"], "loss rate must be in [0, 1), got -0.1"),
        (["--loss", "0.01", "--start", "100"], "--start must be an iteration in 0..39 (--iterations), got 100"),
        (
            ["--loss", "0.01", "--lossy-leaf", "1", "--lossy-spine", "2", "--down", "1,2"],
            "the lossy link 1,2 is also given as --down",
        ),
    ],
)
def test_simulate_refuses_a_negative_loss_a_late_start_or_a_lossy_link_that_is_down(tmp_path, args, message):
    result = runner.invoke(app, ["flowpulse", "simulate", "--out", str(tmp_path / "x"), "--iterations", "40", *args])
    assert result.exit_code == 2 and message in result.output, result.output
    assert not (tmp_path / "x").exists()


def test_scan_option_defaults_are_the_detector_defaults():
    import inspect

    from faultsense_pipelines.cli.flowpulse_cmd import scan_cmd
    from faultsense_pipelines.flowpulse.scan import ScanConfig

    params = inspect.signature(scan_cmd).parameters
    for name in ("model", "traffic", "reference", "lag", "design_loss", "false_alarm_rate", "threshold"):
        assert params[name].default == getattr(ScanConfig(), name), name
