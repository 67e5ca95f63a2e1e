"""``faultsense probe build|memory|serve``: the probe model checkpoint, its memory per GPU,
and the vLLM command that serves it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from ..validation import shown
from .errors import MAX_SEED, check_cover_args, check_int_option, fail, writing_to
from .options import GpusOption, ProbeSizeOption, VariantOption

if TYPE_CHECKING:
    from faultsense_pipelines.probe.serve import ServePlan

__all__ = ["build", "memory", "register", "serve"]

MIB = 2**20

probe_app = typer.Typer(
    name="probe",
    help="Build the probe model (one OLMoE layer whose routing a probe controls).",
    no_args_is_help=True,
)


@probe_app.command("build")
def build(
    gpus: GpusOption,
    probe_size: ProbeSizeOption,
    out: Annotated[Path, typer.Option("--out", help="Checkpoint folder to write.")],
    variant: VariantOption = "slim",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random weights.")] = 0,
) -> None:
    """Write a Hugging Face checkpoint of the probe model that transformers and vLLM load."""
    check_cover_args(gpus, probe_size)  # the options are checked before torch is imported (seconds)
    check_int_option(seed, "--seed", 0, MAX_SEED)
    if out.exists() and not out.is_dir():
        fail(f"--out {out} exists and is not a folder")
    from faultsense_pipelines.probe.memory import bytes_per_gpu
    from faultsense_pipelines.probe.model import VARIANTS, probe_config

    if variant not in VARIANTS:
        fail(f"--variant must be one of {', '.join(VARIANTS)}, got {shown(variant)}")
    try:
        config = probe_config(gpus, probe_size, variant)
    except ValueError as exc:
        fail(f"--variant {variant} with --gpus {gpus}: {exc}")
    from faultsense_pipelines.probe.checkpoint import write_checkpoint

    with writing_to("--out", out):
        info = write_checkpoint(out, gpus, probe_size, variant, seed)
    per_gpu = bytes_per_gpu(config, gpus)
    typer.echo(
        f"wrote {info.path}: {variant} probe model, {info.n_experts} experts, hidden {info.hidden}, "
        f"top-k {probe_size}; {per_gpu.total_bytes / MIB:.1f} MiB of weights per GPU at {gpus}-way "
        "expert parallelism (bf16)"
    )


@probe_app.command("memory")
def memory(
    gpus: GpusOption,
    probe_size: ProbeSizeOption,
) -> None:
    """Print the probe model's weights per GPU (bf16) for both variants."""
    from faultsense_pipelines.probe.memory import bytes_per_gpu
    from faultsense_pipelines.probe.model import VARIANTS, probe_config

    check_cover_args(gpus, probe_size)
    table = Table(title=f"Probe model weights per GPU, {gpus}-way expert parallelism, k={probe_size}, bf16")
    for column in ("variant", "experts", "experts/GPU", "replicated MiB", "experts MiB", "total MiB", "total MB"):
        table.add_column(column, justify="left" if column == "variant" else "right")
    for variant in VARIANTS:
        try:
            config = probe_config(gpus, probe_size, variant)
        except ValueError:
            table.add_row(variant, "-", "-", "-", "-", "-", f"n/a: {gpus} GPUs do not split 64 experts")
            continue
        m = bytes_per_gpu(config, gpus)
        table.add_row(
            variant,
            str(config.num_experts),
            str(config.num_experts // gpus),
            f"{m.replicated_bytes / MIB:.1f}",
            f"{m.expert_bytes / MIB:.1f}",
            f"{m.total_bytes / MIB:.1f}",
            f"{m.total_bytes / 1e6:.1f}",
        )
    Console(width=140).print(table)


@probe_app.command("serve")
def serve(
    gpus: GpusOption,
    probe_size: ProbeSizeOption,
    device: Annotated[
        str, typer.Option("--device", help="cuda | cpu | auto (default: cuda when nvidia-smi lists a GPU, else cpu).")
    ] = "auto",
    tensor_parallel: Annotated[int, typer.Option("--tensor-parallel", help="TP size T; DP = gpus / T with EP.")] = 1,
    expert_parallel: Annotated[
        bool | None,
        typer.Option(
            "--expert-parallel/--no-expert-parallel",
            help="One expert-parallel rank per GPU (default: on cuda; cpu cannot).",
            show_default=False,
        ),
    ] = None,
    port: Annotated[int, typer.Option("--port", help="Port of the OpenAI server.")] = 8000,
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (prompt embeddings: trusted clients only).")
    ] = "127.0.0.1",
    checkpoint: Annotated[Path, typer.Option("--checkpoint", help="Probe checkpoint folder, built if absent.")] = Path(
        "probe-ckpt"
    ),
    variant: VariantOption = "slim",
    gpu_memory_utilization: Annotated[
        float, typer.Option("--gpu-memory-utilization", help="Share of each GPU vLLM may take (cuda).")
    ] = 0.05,
    max_model_len: Annotated[int, typer.Option("--max-model-len", help="Context length (a probe: tens of tokens).")] = 512,
    kv_cache_gib: Annotated[int, typer.Option("--kv-cache-gib", help="KV cache on cpu, GiB (VLLM_CPU_KVCACHE_SPACE).")] = 1,
    routed_experts: Annotated[
        bool, typer.Option("--routed-experts", help="Return routed experts (GPU builds; Model Runner V2).")
    ] = False,
    python: Annotated[
        str | None,
        typer.Option(
            "--python",
            help="Python of the vLLM environment (default: .venv-vllm/bin/python when it exists, else python3).",
            show_default=False,
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print the command instead of starting vLLM.")] = False,
) -> None:
    """Build or reuse the probe checkpoint and start vLLM on it (or print the command).

    The API key is read by vLLM from $VLLM_API_KEY (never the command line). DP = gpus / T > 1:
    set the replica's vllm.data_parallel_size to DP; the vllm executor pins each probe with X-data-parallel-rank.
    """
    import os

    from faultsense_pipelines.probe.checkpoint import read_checkpoint_info
    from faultsense_pipelines.probe.model import VARIANTS, probe_config, tensor_parallel_problems
    from faultsense_pipelines.probe.serve import API_KEY_ENV, DEVICES, DP_RANK_HEADER, default_python, detect_device, plan_serve

    check_cover_args(gpus, probe_size)
    if variant not in VARIANTS:
        fail(f"--variant must be one of {', '.join(VARIANTS)}, got {shown(variant)}")
    if device not in (*DEVICES, "auto"):
        fail(f"--device must be one of {', '.join(DEVICES)}, auto, got {shown(device)}")
    chosen = detect_device() if device == "auto" else device
    try:
        config = probe_config(gpus, probe_size, variant)
        plan = plan_serve(
            checkpoint,
            gpus,
            tensor_parallel=tensor_parallel,
            expert_parallel=expert_parallel,
            host=host,
            port=port,
            gpu_memory_utilization=gpu_memory_utilization,
            max_model_len=max_model_len,
            routed_experts=routed_experts,
            python=python or default_python(),
            device=chosen,
            kv_cache_gib=kv_cache_gib,
            base_env=os.environ,
        )
    except ValueError as exc:
        fail(str(exc))
    if problems := tensor_parallel_problems(config, tensor_parallel):
        fail(f"--tensor-parallel {tensor_parallel} with --variant {variant}: {problems[0]}")
    if checkpoint.exists() and not checkpoint.is_dir():
        fail(f"--checkpoint {checkpoint} exists and is not a folder")
    reuse = (checkpoint / "probe.json").exists()
    if reuse:
        try:
            info = read_checkpoint_info(checkpoint)
        except ValueError as exc:
            fail(f"--checkpoint: {exc}")
        if (info.n_gpus, info.probe_size, info.variant) != (gpus, probe_size, variant):
            fail(
                f"--checkpoint {checkpoint} was built for --gpus {info.n_gpus} --probe-size {info.probe_size} "
                f"--variant {info.variant}; give another folder or rebuild it"
            )
    action = "reuse" if reuse else ("would build" if dry_run else "build")
    typer.echo(f"checkpoint: {action} {checkpoint} ({variant}, {gpus} GPUs, k={probe_size})")
    typer.echo(_layout_line(plan, gpus, auto=device == "auto"))
    if plan.data_parallel > 1:
        typer.echo(
            f"note: vLLM picks the DP engine per request; give the fleet's replica vllm.data_parallel_size: "
            f"{plan.data_parallel} and the vllm executor pins each probe with the header '{DP_RANK_HEADER}: <rank>'"
        )
    key_set = bool(os.environ.get(API_KEY_ENV))
    typer.echo(
        f"api key: ${API_KEY_ENV} is set (<redacted>); the server requires it as a bearer token"
        if key_set
        else f"api key: none (export {API_KEY_ENV} for the server to require one; never on the command line)"
    )
    if dry_run:
        typer.echo(plan.shell())
        return
    if problem := _vllm_missing(plan.argv[0]):
        fail(problem)
    if not reuse:
        from faultsense_pipelines.probe.checkpoint import write_checkpoint

        write_checkpoint(checkpoint, gpus, probe_size, variant)
    os.execvpe(plan.argv[0], list(plan.argv), {**os.environ, **plan.env})


def _vllm_missing(python: str) -> str | None:
    """Why ``python`` cannot serve (it does not run, or has no ``vllm`` module), in one line
    naming ``--python``; ``None`` when it can. Asks the interpreter itself, without importing vLLM."""
    import subprocess

    probe = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('vllm') else 3)"
    try:
        done = subprocess.run([python, "-c", probe], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"--python {python}: cannot run it ({type(exc).__name__})"
    if done.returncode == 0:
        return None
    return (
        f"--python {python}: no vllm module in that Python; install it (scripts/setup-vllm-cpu.sh on a CPU machine) "
        "or pass --python with the vLLM environment's interpreter"
    )


def _layout_line(plan: ServePlan, gpus: int, *, auto: bool) -> str:
    """The ``layout:`` line of ``probe serve``: the device (and how it was chosen), TP x DP and
    where the experts are."""
    how = " (auto: nvidia-smi lists a GPU)" if auto and plan.device == "cuda" else " (auto: no GPU listed)" if auto else ""
    line = f"layout: {plan.device}{how}, TP {plan.tensor_parallel} x DP {plan.data_parallel}"
    if plan.expert_parallel:
        return line + f", expert parallelism over {gpus} ranks (FaultSense GPU g = EP rank g)"
    if plan.device == "cpu":
        return line + f", one engine process holding all {gpus} GPUs' experts (a functional server, not a timing one)"
    return line


def register(app: typer.Typer) -> None:
    """Add the ``probe`` command group to the ``faultsense`` app."""
    app.add_typer(probe_app, name="probe")
