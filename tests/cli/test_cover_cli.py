"""`faultsense plan`: the JSON contract other work builds on, and one-line errors for bad input."""

from __future__ import annotations

import json
from itertools import combinations

import pytest
from typer.testing import CliRunner

from faultsense_pipelines.cli import app

runner = CliRunner()


@pytest.mark.parametrize("method", ["greedy", "best"])
def test_plan_json_is_one_object_with_probes_rounds_and_bound(method):
    result = runner.invoke(app, ["plan", "--gpus", "32", "--probe-size", "4", "--method", method, "--json"])
    assert result.exit_code == 0, result.output
    obj = json.loads(result.stdout)  # exactly one JSON object, nothing else on stdout
    assert {"gpus", "probe_size", "method", "probes", "rounds", "lower_bound", "all_pairs"} <= set(obj)
    assert (obj["gpus"], obj["probe_size"], obj["method"]) == (32, 4, method)
    assert obj["lower_bound"] == 88  # ceil(32/4 * ceil(31/3)) = 8 * 11
    assert obj["all_pairs"] == 496
    covered = {pair for p in obj["probes"] for pair in combinations(sorted(p), 2)}
    assert covered == set(combinations(range(32), 2))
    assert sorted(i for r in obj["rounds"] for i in r) == list(range(len(obj["probes"])))


def test_plan_defaults_to_best_and_n8_k4_needs_six_probes():
    result = runner.invoke(app, ["plan", "--gpus", "8", "--probe-size", "4", "--json"])
    obj = json.loads(result.stdout)
    assert obj["method"] == "best" and len(obj["probes"]) == 6


def test_plan_table_names_probes_bound_and_rounds():
    result = runner.invoke(app, ["plan", "--gpus", "13", "--probe-size", "4"])
    assert result.exit_code == 0
    for word in ("probes", "Schönheim bound 13", "rounds"):
        assert word in result.stdout


@pytest.mark.parametrize("n, k, listed", [(8, 4, 6), (175, 8, 12)])
def test_plan_table_lists_the_first_probes_one_per_line_by_round_as_in_the_json(n, k, listed):
    """The probe list used to be a caption that wrapped in the middle of a probe."""
    text = runner.invoke(app, ["plan", "--gpus", str(n), "--probe-size", str(k)], env={"COLUMNS": "60"}).stdout
    obj = json.loads(runner.invoke(app, ["plan", "--gpus", str(n), "--probe-size", str(k), "--json"]).stdout)
    round_of = {i: r for r, ids in enumerate(obj["rounds"]) for i in ids}
    lines = [line for line in text.splitlines() if line.startswith("round ")]
    assert len(lines) == listed
    seen = []
    for line in lines:
        head, gpus = line.split(": ", 1)
        r, i = int(head.split()[1]), int(head.split()[3])
        assert round_of[i] == r and json.loads(gpus) == obj["probes"][i]
        seen.append((r, i))
    assert seen == sorted(seen)
    assert (f"... {len(obj['probes']) - listed} more probes; --json for all" in text) == (len(obj["probes"]) > listed)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--gpus", "3", "--probe-size", "4"], "probe_size=4 > gpus=3"),
        (["--gpus", "8", "--probe-size", "1"], "got 1"),
        (["--gpus", "8", "--probe-size", "4", "--method", "fastest"], "'fastest'"),
        (["--gpus", "eight", "--probe-size", "4"], "'eight'"),
        (["--gpus", "1", "--probe-size", "2"], "--gpus"),
    ],
)
def test_plan_bad_input_is_one_stderr_line_naming_the_value_and_exit_2(args, named):
    result = runner.invoke(app, ["plan", *args, "--json"])
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0]


def test_plan_refuses_a_cover_above_the_probe_limit_before_planning_naming_gpus_k_and_the_bound():
    """n=4096, k=2 once planned 8.4 million probes for minutes at 5.7 GB; every pair is its own
    probe there, so the Schönheim bound is n(n-1)/2 = 4096 * 4095 / 2 = 8,386,560."""
    result = runner.invoke(app, ["plan", "--gpus", "4096", "--probe-size", "2", "--json"])
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        "error: --gpus/--probe-size: a cover of gpus=4096 with probe_size=2 needs at least 8,386,560 probes "
        "(Schönheim bound), more than the limit of 1,000,000; use a larger probe size"
    ]


def test_the_probe_limit_sits_between_n_1414_and_n_1415_for_pairs():
    from faultsense_pipelines.cli.errors import MAX_PLAN_PROBES, cover_too_large

    assert MAX_PLAN_PROBES == 1_000_000
    assert cover_too_large(1414, 2) is None  # 1414 * 1413 / 2 = 998,991 probes
    assert "needs at least 1,000,405 probes" in cover_too_large(1415, 2)  # 1415 * 1414 / 2
    assert cover_too_large(4096, 8) is None  # the largest replica with the paper's k = 8: 299,520


def test_simulate_refuses_a_scenario_whose_cover_is_above_the_probe_limit(tmp_path):
    path = tmp_path / "huge.json"
    path.write_text(json.dumps({"gpus": 4096, "probe_size": 3, "faults": []}))
    result = runner.invoke(app, ["simulate", "--scenario", str(path), "--json"])
    assert result.exit_code == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert (
        len(lines) == 1 and f"scenario {path}: a cover of gpus=4096 with probe_size=3 needs at least 2,796,203 probes" in lines[0]
    )
