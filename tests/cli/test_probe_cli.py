"""``faultsense probe build|memory``."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from faultsense_pipelines.cli import app

runner = CliRunner()


def test_probe_build_writes_a_checkpoint_folder(tmp_path):
    out = tmp_path / "probe"
    result = runner.invoke(app, ["probe", "build", "--gpus", "2", "--probe-size", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert {"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json", "probe.json"} <= {
        p.name for p in out.iterdir()
    }
    config = json.loads((out / "config.json").read_text())
    assert (config["num_experts"], config["num_experts_per_tok"], config["hidden_size"]) == (2, 2, 2048)
    assert "slim probe model, 2 experts" in result.output
    assert "Writing model shards" not in result.output and "it/s" not in result.output


def test_probe_memory_prints_both_variants():
    result = runner.invoke(app, ["probe", "memory", "--gpus", "4", "--probe-size", "2"])
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line for line in result.output.splitlines() if line.count("│") > 2}
    assert "32.0" in rows["slim"]  # 20.0 MiB replicated (8 KV heads) + one 12 MiB expert
    assert "647.3" in rows["paper"]  # MB: 445.9 MB replicated + 16 experts of 12.6 MB


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpus", "0", "--probe-size", "1"], "--gpus: gpus must be an integer >= 2, got 0"),
        (["--gpus", "1", "--probe-size", "1"], "--gpus: gpus must be an integer >= 2, got 1"),
        (["--gpus", "4", "--probe-size", "5"], "--probe-size: probe_size must be <= gpus, got probe_size=5 > gpus=4"),
        (["--gpus", "4", "--probe-size", "1"], "--probe-size: probe_size must be an integer >= 2, got 1"),
        (["--gpus", "4", "--probe-size", "2", "--variant", "huge"], "--variant must be one of slim, paper"),
        (["--gpus", "3", "--probe-size", "2", "--variant", "paper"], "n_gpus=3"),
    ],
)
def test_probe_build_rejects_bad_input_with_one_line_and_exit_2(tmp_path, args, message):
    result = runner.invoke(app, ["probe", "build", *args, "--out", str(tmp_path / "x")])
    assert result.exit_code == 2
    assert message in result.output and len(result.output.strip().splitlines()) == 1
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("args", [["--gpus", "4", "--probe-size", "1"], ["--gpus", "1", "--probe-size", "1"]])
def test_probe_memory_needs_the_same_sizes_as_plan(args):
    plan = runner.invoke(app, ["plan", *args])
    memory = runner.invoke(app, ["probe", "memory", *args])
    assert plan.exit_code == memory.exit_code == 2, (plan.output, memory.output)
    assert plan.output == memory.output  # one shared check: the same one-line error naming the flag
