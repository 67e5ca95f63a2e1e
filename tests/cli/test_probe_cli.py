"""``faultsense probe build|memory|serve``."""

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


def test_probe_serve_dry_run_prints_the_expert_parallel_vllm_command(tmp_path):
    ckpt = tmp_path / "ckpt"
    args = ["probe", "serve", "--gpus", "8", "--probe-size", "4", "--tensor-parallel", "2", "--port", "8123"]
    result = runner.invoke(app, [*args, "--checkpoint", str(ckpt), "--dry-run"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0] == f"checkpoint: would build {ckpt} (slim, 8 GPUs, k=4)"
    assert lines[1] == "layout: TP 2 x DP 4, expert parallelism over 8 ranks (FaultSense GPU g = EP rank g)"
    assert "X-data-parallel-rank: <rank>" in lines[2]
    assert lines[3].split() == [
        "python3", "-m", "vllm.entrypoints.openai.api_server", "--model", str(ckpt),
        "--host", "127.0.0.1", "--port", "8123", "--tensor-parallel-size", "2",
        "--data-parallel-size", "4", "--enable-expert-parallel",
        "--enable-prompt-embeds", "--enable-per-request-metrics",
        "--gpu-memory-utilization", "0.05", "--max-model-len", "512",
    ]  # fmt: skip
    assert not ckpt.exists()  # a dry run builds nothing


def test_probe_serve_dry_run_with_routed_experts_sets_the_v2_runner(tmp_path):
    result = runner.invoke(
        app,
        ["probe", "serve", "--gpus", "4", "--probe-size", "2", "--routed-experts", "--dry-run", "--checkpoint", str(tmp_path)],
    )
    assert result.exit_code == 0, result.output
    command = result.output.strip().splitlines()[-1]
    assert command.startswith("VLLM_USE_V2_MODEL_RUNNER=1 python3 ") and command.endswith("--enable-return-routed-experts")
    assert "DP 4" in result.output  # TP 1: one engine per GPU


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--gpus", "8", "--probe-size", "4", "--tensor-parallel", "3"], "--tensor-parallel 3 must divide --gpus 8"),
        (["--gpus", "8", "--probe-size", "4", "--no-expert-parallel", "--tensor-parallel", "2"], "must equal --gpus (8)"),
        (
            ["--gpus", "16", "--probe-size", "4", "--no-expert-parallel", "--tensor-parallel", "16"],
            "--tensor-parallel 16 with --variant slim: num_key_value_heads=8 is not divisible by tensor-parallel size 16",
        ),
        (["--gpus", "8", "--probe-size", "4", "--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization must be in (0, 1]"),
        (["--gpus", "8", "--probe-size", "9"], "--probe-size: probe_size must be <= gpus"),
    ],
)
def test_probe_serve_rejects_bad_layouts_with_one_line_and_exit_2(tmp_path, args, message):
    result = runner.invoke(app, ["probe", "serve", *args, "--dry-run", "--checkpoint", str(tmp_path / "c")])
    assert result.exit_code == 2
    assert message in result.output and len(result.output.strip().splitlines()) == 1


def test_probe_serve_refuses_a_checkpoint_built_for_another_replica(tmp_path):
    built = runner.invoke(app, ["probe", "build", "--gpus", "2", "--probe-size", "2", "--out", str(tmp_path)])
    assert built.exit_code == 0, built.output
    result = runner.invoke(
        app, ["probe", "serve", "--gpus", "4", "--probe-size", "2", "--dry-run", "--checkpoint", str(tmp_path)]
    )
    assert result.exit_code == 2
    assert "was built for --gpus 2 --probe-size 2 --variant slim" in result.output
    reuse = runner.invoke(app, ["probe", "serve", "--gpus", "2", "--probe-size", "2", "--dry-run", "--checkpoint", str(tmp_path)])
    assert reuse.exit_code == 0 and reuse.output.startswith(f"checkpoint: reuse {tmp_path}")
