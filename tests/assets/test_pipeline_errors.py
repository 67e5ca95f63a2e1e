"""Errors: a failing executor, a malformed fleet, secrets that must never leak."""

from __future__ import annotations

import socket
from pathlib import Path

import dagster as dg
import pytest
from typer.testing import CliRunner

from faultsense_pipelines.cli import app
from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.definitions import build_definitions
from faultsense_pipelines.fleet import FleetError
from faultsense_pipelines.ledger import LedgerStore
from faultsense_pipelines.sweeps import run_sweep
from tests.pipeline_helpers import HOUR, add_replicas, new_defs, sweep, write_fleet

pytestmark = pytest.mark.integration  # real in-process Dagster runs

SECRET = "sk-test-DO-NOT-LEAK-4242"


def closed_loopback_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


FLEET_WITH_DEAD_SERVER = """
ledger: {ledger}
replicas:
  - name: prod-dead
    gpus: 8
    probe_size: 4
    executor: vllm
    vllm: {{url: "http://127.0.0.1:PORT", api_key_env: FAULTSENSE_TEST_KEY, timeout_s: 2, retries: 0}}
  - name: sim-faulty
    gpus: 16
    probe_size: 4
    executor: simulated
    simulated: {{faults: [{{gpu: 5, slowdown: 2.0}}], noise_sigma: 0.01, seed: 4}}
"""


def test_a_replica_whose_server_is_down_gets_error_rows_no_faults_and_the_others_complete(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("FAULTSENSE_TEST_KEY", SECRET)
    fleet, ledger = write_fleet(tmp_path, FLEET_WITH_DEAD_SERVER.replace("PORT", str(closed_loopback_port())))
    with dg.DagsterInstance.ephemeral() as instance:
        outcomes, _ = run_sweep(fleet, hour=HOUR, instance=instance)
        events = [str(e) for run in instance.get_runs() for e in instance.all_logs(run.run_id)]
    by_name = {o.replica: o for o in outcomes}
    dead, sim = by_name["prod-dead"], by_name["sim-faulty"]
    assert not dead.success and "could not be measured" in dead.error and "no fault rows" in dead.error
    assert sim.success and sim.confirmed == ["gpu:5"]

    store = LedgerStore(str(ledger))
    runs = store.read_probe_runs(replica="prod-dead")
    assert len(runs) == len(plan_cover(8, 4).probes)  # one error row per cover probe
    assert runs["error"].notna().all() and runs["latency_ms"].isna().all() and runs["repeat"].isna().all()
    assert (runs["executor"] == "vllm").all()
    assert store.read_faults(replica="prod-dead").empty
    dead_batches = {b for b in store.read_table("probe_runs").column("batch").to_pylist() if "prod-dead" in b}
    assert dead_batches == {"faultsense-prod-dead-h08-failed"}  # a failed sweep writes only its attempt's batch
    assert not [b for b in store.read_table("fault_ledger").column("batch").to_pylist() if "prod-dead" in b]
    assert store.read_faults(replica="sim-faulty")["component"].tolist() == ["gpu:5"]

    assert not any(SECRET in e for e in events), "the API key reached the Dagster event log"
    for f in ledger.rglob("*"):
        if f.is_file():
            assert SECRET.encode() not in f.read_bytes(), f"the API key reached {f}"


def test_a_missing_api_key_variable_is_an_executor_error_in_a_dagster_run_not_a_crash(tmp_path: Path, monkeypatch) -> None:
    """A scheduled or UI run (no CLI preflight): the replica's run fails with error rows."""
    monkeypatch.delenv("FAULTSENSE_TEST_KEY", raising=False)
    defs, ledger = new_defs(tmp_path, FLEET_WITH_DEAD_SERVER.replace("PORT", str(closed_loopback_port())))
    with dg.DagsterInstance.ephemeral() as instance:
        add_replicas(instance, defs)
        result = sweep(defs, instance, "prod-dead")
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert "FAULTSENSE_TEST_KEY" in str(failure.step_failure_data) and "not set" in str(failure.step_failure_data)
    assert LedgerStore(str(ledger)).read_probe_runs()["error"].str.contains("could not start").all()


def test_a_missing_api_key_variable_refuses_the_cli_sweep_before_any_run(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("FAULTSENSE_TEST_KEY", raising=False)
    fleet, ledger = write_fleet(tmp_path, FLEET_WITH_DEAD_SERVER.replace("PORT", str(closed_loopback_port())))
    with pytest.raises(FleetError, match=r"replicas\[0\]\.vllm\.api_key_env: environment variable FAULTSENSE_TEST_KEY "):
        run_sweep(fleet, hour=HOUR)  # sim-faulty, later in the file, is not swept either
    assert not ledger.exists()


BAD_FLEET = """
ledger: {ledger}
replicas:
  - {{name: ok, gpus: 8, probe_size: 4, executor: simulated}}
  - {{name: wide, gpus: 8, probe_size: 9, executor: simulated}}
"""


def test_a_malformed_fleet_stops_everything_with_one_line_naming_the_field(tmp_path: Path) -> None:
    fleet, ledger = write_fleet(tmp_path, BAD_FLEET)
    with pytest.raises(FleetError, match=r"replicas\[1\]\.probe_size: must be < gpus \(got 9 > 8\)"):
        build_definitions(fleet)
    result = CliRunner().invoke(app, ["sweep", "--fleet", str(fleet)])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip() and "error:" in line]
    assert len(lines) == 1 and "replicas[1].probe_size: must be < gpus (got 9 > 8)" in lines[0], result.stderr
    assert not ledger.exists()


def test_an_unknown_replica_or_hour_is_refused_before_anything_runs(tmp_path: Path) -> None:
    fleet, ledger = write_fleet(tmp_path)
    unknown = CliRunner().invoke(app, ["sweep", "--fleet", str(fleet), "--replica", "nope"])
    assert unknown.exit_code == 2 and "unknown replica 'nope'" in unknown.stderr
    bad_hour = CliRunner().invoke(app, ["sweep", "--fleet", str(fleet), "--hour", "08:00"])
    assert bad_hour.exit_code == 2 and "--hour must look like" in bad_hour.stderr
    assert not ledger.exists()


@pytest.mark.parametrize(
    "hour, expected",
    [
        ("2099-01-01-00:00", "error: --hour 2099-01-01-00:00 is outside the sweep partitions 2026-11-01-00:00 .. "),
        ("2026-10-31-23:00", "error: --hour 2026-10-31-23:00 is outside the sweep partitions 2026-11-01-00:00 .. "),
        ("2026-13-01-00:00", "error: --hour must look like YYYY-MM-DD-HH:00 (e.g. 2026-11-30-08:00), got '2026-13-01-00:00'"),
        ("2026-11-30-08:30", "error: --hour must look like YYYY-MM-DD-HH:00"),
    ],
)
def test_an_hour_outside_the_partitions_or_malformed_gets_one_line_and_exit_2(tmp_path: Path, hour: str, expected: str) -> None:
    fleet, ledger = write_fleet(tmp_path)
    result = CliRunner().invoke(app, ["sweep", "--fleet", str(fleet), "--replica", "sim-faulty", "--hour", hour])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(expected), result.stderr
    assert "Traceback" not in result.output and not ledger.exists()
    with pytest.raises(ValueError, match="hour"):
        run_sweep(fleet, ["sim-faulty"], hour=hour)


def test_a_ledger_path_that_is_a_file_is_refused_before_any_run(tmp_path: Path) -> None:
    fleet, _ = write_fleet(tmp_path)
    a_file = tmp_path / "lf"
    a_file.write_text("")
    result = CliRunner().invoke(
        app, ["sweep", "--fleet", str(fleet), "--replica", "sim-faulty", "--ledger", str(a_file), "--hour", HOUR]
    )
    assert result.exit_code == 2, result.output
    assert [line for line in result.stderr.splitlines() if "error:" in line] == [
        f"error: ledger {a_file} is a file, not a directory"
    ]
    assert "sim-faulty: " not in result.output  # no run started
    assert a_file.read_text() == ""


def test_a_failed_step_reports_its_innermost_cause() -> None:
    from faultsense_pipelines.sweeps.outcome import failure_message

    @dg.op
    def boom() -> None:
        try:
            raise KeyError("the innermost cause")
        except KeyError as exc:
            raise RuntimeError("wrapper") from exc

    @dg.job
    def fails() -> None:
        boom()

    result = fails.execute_in_process(raise_on_error=False)
    message = failure_message(result)
    assert message.startswith('dagster._core.errors.DagsterExecutionStepExecutionError: Error occurred while executing op "boom"')
    assert message.endswith("KeyError: 'the innermost cause'"), message


def test_sweep_repeats_is_optional_and_at_least_one(tmp_path: Path) -> None:
    import re

    shown = CliRunner().invoke(app, ["sweep", "--help"], env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
    line = next(line for line in shown.output.splitlines() if "--repeats" in line)
    assert "default: 0" not in line and "x>=0" not in line and re.search(r"INTEGER.*>= 1", line), line
    fleet, ledger = write_fleet(tmp_path)
    zero = CliRunner().invoke(app, ["sweep", "--fleet", str(fleet), "--repeats", "0", "--hour", HOUR])
    assert zero.exit_code == 2 and "--repeats" in zero.output and not ledger.exists()
    with pytest.raises(ValueError, match=r"repeats must be an integer in 1..100 or None \(the fleet's\), got 0"):
        run_sweep(fleet, ["sim-faulty"], hour=HOUR, repeats=0)


def test_sweep_prints_no_progress_spinner_when_not_on_a_terminal(tmp_path: Path) -> None:
    fleet, _ = write_fleet(tmp_path)
    result = CliRunner().invoke(app, ["sweep", "--fleet", str(fleet), "--replica", "nope", "--hour", HOUR])
    assert result.exit_code == 2
    assert [line for line in result.stderr.splitlines() if line.strip()] == [
        "error: unknown replica 'nope'; the fleet has sim-faulty, sim-healthy"
    ]


def test_faultsense_fleet_names_the_fleet_when_no_fleet_option_is_given(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fleet, _ledger = write_fleet(tmp_path)
    monkeypatch.setenv("FAULTSENSE_FLEET", str(fleet))
    result = CliRunner().invoke(app, ["sweep", "--replica", "nope"])
    assert result.exit_code == 2 and "unknown replica 'nope'" in result.stderr
    assert "sim-faulty" in result.stderr  # the fleet named by the variable, not the embedded one
    monkeypatch.setenv("FAULTSENSE_FLEET", str(tmp_path / "missing.yaml"))
    missing = CliRunner().invoke(app, ["sweep"])
    assert missing.exit_code == 2 and "missing.yaml: cannot read fleet file" in missing.stderr


@pytest.mark.parametrize("repeats", [-1, 101])
def test_a_run_config_repeats_outside_the_bound_fails_the_run_naming_it(tmp_path, repeats) -> None:
    """A backfill launched from the UI with repeats 99999999999 would probe without end."""
    defs, _ledger = new_defs(tmp_path)
    with dg.DagsterInstance.ephemeral() as instance:
        add_replicas(instance, defs)
        result = sweep(defs, instance, "sim-faulty", repeats=repeats)
    assert not result.success
    failures = [e for e in result.all_events if e.is_step_failure]
    assert any(f"repeats must be in 0..100 (0: the fleet's), got {repeats}" in str(e.event_specific_data.error) for e in failures)
