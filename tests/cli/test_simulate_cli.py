"""`faultsense simulate --scenario FILE --json`: the contract other work builds on."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from faultsense_pipelines.cli import app

SCENARIO = {
    "gpus": 32,
    "probe_size": 4,
    "faults": [{"gpu": 9, "slowdown": 1.8}, {"link": [3, 21], "slowdown": 1.56}],
    "noise": {"sigma": 0.02},
    "seed": 7,
}

runner = CliRunner()


def _simulate(tmp_path, scenario, *flags):
    path = tmp_path / "scenario.json"
    path.write_text(scenario if isinstance(scenario, str) else json.dumps(scenario))
    return runner.invoke(app, ["simulate", "--scenario", str(path), *flags])


@pytest.mark.parametrize("cover", ["greedy", "best"])
@pytest.mark.parametrize("drilldown", ["adaptive", "paper"])
def test_the_issue_scenario_prints_the_contract_json(tmp_path, cover, drilldown):
    result = _simulate(tmp_path, SCENARIO, "--json", "--cover", cover, "--drilldown", drilldown)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["faulty_gpus"] == [9]
    assert out["faulty_links"] == [[3, 21]]
    assert out["masked_links"] == []
    assert out["replica_degraded"] is False
    assert out["probes"]["phase1"] > 0 and out["probes"]["phase2"] > 0
    assert out["cover_method"] == cover


def test_the_default_cover_is_best_and_runs_are_reproducible(tmp_path):
    first = _simulate(tmp_path, SCENARIO, "--json")
    again = _simulate(tmp_path, SCENARIO, "--json")
    assert json.loads(first.stdout)["cover_method"] == "best"
    assert first.stdout == again.stdout


def test_alpha_switches_to_the_paper_rule_and_repeats_are_accepted(tmp_path):
    result = _simulate(tmp_path, SCENARIO, "--json", "--alpha", "1.2", "--repeats", "3")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["threshold_ms"] == pytest.approx(1.2 * out["baseline_ms"])


def test_a_scenarios_repeats_is_used_unless_the_flag_overrides_it(tmp_path):
    def out(scenario, *flags):
        result = _simulate(tmp_path, scenario, "--json", *flags)
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    once, thrice = out(SCENARIO), out(SCENARIO, "--repeats", "3")
    assert once["baseline_ms"] != thrice["baseline_ms"]  # a median of three draws, not the first draw
    assert out({**SCENARIO, "repeats": 3}) == thrice
    assert out({**SCENARIO, "repeats": 3}, "--repeats", "1") == once


def test_the_nic_example_as_written_names_the_nic_and_the_unrelated_gpu():
    """docs/components.md's worked example: examples/components/nic.json, run with no flags."""
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "components" / "nic.json"
    result = runner.invoke(app, ["simulate", "--scenario", str(path), "--json"])
    assert result.exit_code == 0, result.output
    found = {(c["kind"], c.get("node", c.get("gpu"))) for c in json.loads(result.stdout)["faulty_components"]}
    assert found == {("nic", 3), ("gpu", 60)}


def test_without_json_a_table_names_the_faults(tmp_path):
    result = _simulate(tmp_path, SCENARIO)
    assert result.exit_code == 0
    assert "GPU 9" in result.stdout and "link 3-21" in result.stdout


@pytest.mark.parametrize(
    "scenario, field",
    [
        ({**SCENARIO, "faults": [{"gpu": 32, "slowdown": 1.8}]}, "faults[0].gpu"),
        ({**SCENARIO, "faults": [{"gpu": 3, "slowdown": 0}]}, "slowdown"),
        ({**SCENARIO, "faults": [{"gpu": 3, "slowdown": -1.5}]}, "slowdown"),
        ({**SCENARIO, "faults": [{"link": [4, 4], "slowdown": 1.5}]}, "faults[0].link"),
        ({**SCENARIO, "faults": [{"link": [4, 40], "slowdown": 1.5}]}, "faults[0].link"),
        ({**SCENARIO, "faults": [{"gpu": 3, "slowdown": 1.5}, {"gpu": 3, "slowdown": 2}]}, "faults[1]"),
        ({**SCENARIO, "probe_size": 40}, "probe_size"),
        ({k: v for k, v in SCENARIO.items() if k != "gpus"}, "gpus"),
        ({**SCENARIO, "noise": {"sigma": -0.1}}, "noise.sigma"),
        ({**SCENARIO, "seed": "x"}, "seed"),
        ({**SCENARIO, "repeats": 0}, "repeats"),
        ({**SCENARIO, "repeats": 101}, "repeats must be an integer in 1..100, got 101"),
        ({**SCENARIO, "repeats": True}, "repeats"),
        ({**SCENARIO, "repeats": "3"}, "repeats"),
        ('{"gpus": 32, "probe_size": 4, "faults": [', "malformed JSON"),
    ],
)
def test_bad_scenarios_exit_2_with_one_line_naming_the_field(tmp_path, scenario, field):
    result = _simulate(tmp_path, scenario, "--json")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0], result.stderr


def test_a_scenario_s_error_budget_out_of_range_names_the_scenario_not_the_rule_s_flag(tmp_path):
    # the scenario's "alpha" is the sequential drill-down's error budget; --alpha is the
    # paper's suspect rule (a ratio above 1): an error in one must not name the other
    result = _simulate(tmp_path, {**SCENARIO, "alpha": 2}, "--json")
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: scenario {tmp_path / 'scenario.json'}: ") and "--alpha" not in line


@pytest.mark.parametrize(
    "flags, name",
    [
        (("--cover", "magic"), "--cover"),
        (("--drilldown", "x"), "--drilldown"),
        (("--repeats", "0"), "--repeats"),
        (("--repeats", "101"), "--repeats must be an integer in 1..100, got '101'"),
        (("--repeats", "abc"), "--repeats must be an integer in 1..100, got 'abc'"),
        (("--repeats", "2.5"), "--repeats must be an integer in 1..100, got '2.5'"),
        (("--alpha", "0.9"), "--alpha: "),
        (("--drilldown", "sequential", "--error-budget", "0"), "--error-budget must be a finite number in [1e-06, 0.5], got 0.0"),
        (
            ("--drilldown", "sequential", "--error-budget", "nan"),
            "--error-budget must be a finite number in [1e-06, 0.5], got nan",
        ),
        # in (0, 0.5] but too small to settle any claim: it overflowed the rounds bound
        (("--error-budget", "5e-324"), "--error-budget must be a finite number in [1e-06, 0.5], got 5e-324"),
        (("--error-budget", "1e-310"), "--error-budget must be a finite number in [1e-06, 0.5], got 1e-310"),
        (("--drilldown", "sequential", "--min-slowdown", "1.0"), "--min-slowdown must be a finite number in (1, 100], got 1.0"),
        (("--drilldown", "sequential", "--phase2-budget", "-3"), "--phase2-budget must be an integer in [0, 10000000], got -3"),
        (
            ("--drilldown", "paper", "--error-budget", "0.05"),
            "--error-budget is an option of --drilldown sequential, got --drilldown paper",
        ),
        (
            ("--drilldown", "adaptive", "--phase2-budget", "9"),
            "--phase2-budget is an option of --drilldown sequential, got --drilldown adaptive",
        ),
        (("--no-recheck",), "--no-recheck is an option of --drilldown adaptive, got --drilldown sequential"),
        (("--drilldown", "paper", "--no-recheck"), "--no-recheck is an option of --drilldown adaptive, got --drilldown paper"),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(tmp_path, flags, name):
    result = _simulate(tmp_path, SCENARIO, "--json", *flags)
    assert result.exit_code == 2 and name in result.stderr


def test_a_missing_scenario_file_exits_2_naming_it(tmp_path):
    result = runner.invoke(app, ["simulate", "--scenario", str(tmp_path / "nope.json"), "--json"])
    assert result.exit_code == 2 and "nope.json" in result.stderr and "cannot read" in result.stderr


@pytest.mark.parametrize("command", [["plan", "--gpus", "100000", "--probe-size", "8"], ["simulate"]])
def test_a_replica_beyond_max_gpus_is_refused_before_any_planning(tmp_path, command):
    """100,000 GPUs once ran the machine out of memory instead of getting a one-line error."""
    scenario = tmp_path / "big.json"
    scenario.write_text(json.dumps({"gpus": 100000, "probe_size": 4, "faults": []}))
    args = command + (["--scenario", str(scenario), "--json"] if command == ["simulate"] else [])
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "gpus must be <= 4096" in result.output, result.output
    assert len(result.output.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"noise": {"sigma": 500}}, "noise.sigma must be a finite number in [0, 1], got 500"),
        ({"noise": {"sigma": 1.01}}, "noise.sigma must be a finite number in [0, 1], got 1.01"),
        (
            {"faults": [{"gpu": 9, "slowdown": 1e307}]},
            "faults[0].slowdown: must be <= 1000 (slower is a fail-stop, not a gray failure), got 1e+307",
        ),
        (
            {"faults": [{"link": [3, 21], "slowdown": 1000.5}]},
            "faults[0].slowdown: must be <= 1000 (slower is a fail-stop, not a gray failure), got 1000.5",
        ),
    ],
)
def test_a_scenario_that_would_overflow_the_latency_is_refused_in_one_line_naming_field_and_value(tmp_path, changes, message):
    """sigma 500 and slowdown 1e307 once ended in a numpy overflow warning and a traceback."""
    result = _simulate(tmp_path, {**SCENARIO, **changes}, "--json")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [f"error: scenario {tmp_path / 'scenario.json'}: {message}"]


def test_the_bounds_themselves_are_accepted_and_localize_the_slowest_fault(tmp_path):
    # the adaptive drill-down, which trusts each probe: a 1000x GPU passes even sigma 1.0 noise
    scenario = {**SCENARIO, "faults": [{"gpu": 9, "slowdown": 1000}], "noise": {"sigma": 1.0}, "seed": 3}
    result = _simulate(tmp_path, scenario, "--json", "--repeats", "5", "--drilldown", "adaptive")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["faulty_gpus"] == [9]


@pytest.mark.parametrize(
    "content, message",
    [
        (b"\xff\xfe{}", "not a UTF-8 text file (byte 0xff at offset 0)"),
        ('{"gpus": 32, "note": "caf\u00e9"}'.encode("latin-1"), "not a UTF-8 text file (byte 0xe9 at offset 25)"),
        (('{"gpus": ' + "[" * 100_000 + "]" * 100_000 + "}").encode(), "malformed JSON: nested too deeply"),
    ],
)
def test_an_unreadable_scenario_is_one_line_naming_the_file_not_a_traceback(tmp_path, content, message):
    """A newcomer's break-it pass: these ended in UnicodeDecodeError / RecursionError tracebacks, exit 1."""
    path = tmp_path / "scenario.json"
    path.write_bytes(content)
    result = runner.invoke(app, ["simulate", "--scenario", str(path), "--json"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [f"error: --scenario {path}: {message}"]


@pytest.mark.parametrize("path", ["/dev/zero", "."])
def test_a_scenario_path_that_is_not_a_regular_file_is_refused_before_reading(path):
    """/dev/zero used to be read until memory ran out."""
    result = runner.invoke(app, ["simulate", "--scenario", path, "--json"])
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [f"error: --scenario {path}: not a regular file"]


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--drilldown", "nope"], "--drilldown"),
        (["--no-recheck"], "--no-recheck is an option of --drilldown adaptive, got --drilldown sequential"),
    ],
)
def test_sweep_refuses_a_bad_drilldown_in_one_line_before_any_run(tmp_path, flags, message):
    result = runner.invoke(app, ["sweep", "--ledger", str(tmp_path / "ledger"), *flags])
    assert result.exit_code == 2 and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not (tmp_path / "ledger").exists()


def test_simulate_json_lists_every_verdict_with_what_its_test_guarantees(tmp_path) -> None:
    """The default drill-down is the sequential one: each confirmed verdict's confidence is at
    least 1 - alpha (the sweep's error budget, 0.01 by default: docs/verdicts.md), its slowdown
    near the injected one; the binary drill-downs state no confidence."""
    scenario = tmp_path / "s.json"
    faults = [{"gpu": 17, "slowdown": 1.5}, {"link": [3, 40], "slowdown": 2.0}]
    scenario.write_text(json.dumps({"gpus": 64, "probe_size": 8, "faults": faults, "noise": {"sigma": 0.02}, "seed": 1}))
    got = json.loads(runner.invoke(app, ["simulate", "--scenario", str(scenario), "--json"]).stdout)
    named = json.loads(
        runner.invoke(app, ["simulate", "--scenario", str(scenario), "--json", "--drilldown", "sequential"]).stdout
    )
    assert named == got
    assert got["faulty_gpus"] == [17] and got["faulty_links"] == [[3, 40]]
    verdicts = {v["component"]: v for v in got["verdicts"]}
    assert set(verdicts) == {"gpu:17", "link:3-40"}
    assert all(v["status"] == "confirmed" and 0.99 <= v["confidence"] <= 1 for v in verdicts.values())
    assert verdicts["gpu:17"]["slowdown"] == pytest.approx(1.5, rel=0.05)
    assert verdicts["link:3-40"]["slowdown"] == pytest.approx(2.0, rel=0.05)
    plain = runner.invoke(app, ["simulate", "--scenario", str(scenario), "--json", "--drilldown", "adaptive"]).stdout
    assert [v["confidence"] for v in json.loads(plain)["verdicts"]] == [None, None]
