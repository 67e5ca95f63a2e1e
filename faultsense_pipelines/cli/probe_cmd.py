"""``faultsense probe build|memory``: the probe model checkpoint and its memory per GPU."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from ..validation import shown
from .errors import check_cover_args, fail

__all__ = ["build", "memory", "register"]

MIB = 2**20

probe_app = typer.Typer(
    name="probe",
    help="Build the probe model (one OLMoE layer whose routing a probe controls).",
    no_args_is_help=True,
)


@probe_app.command("build")
def build(
    gpus: Annotated[int, typer.Option("--gpus", help="GPUs in the replica (expert-parallel degree).")],
    probe_size: Annotated[int, typer.Option("--probe-size", help="GPUs per probe k (router top-k), 2 <= k <= --gpus.")],
    out: Annotated[Path, typer.Option("--out", help="Checkpoint folder to write.")],
    variant: Annotated[str, typer.Option("--variant", help="slim (default) | paper.")] = "slim",
    seed: Annotated[int, typer.Option("--seed", help="Seed of the random weights.")] = 0,
) -> None:
    """Write a Hugging Face checkpoint of the probe model that transformers and vLLM load."""
    from faultsense_pipelines.probe.memory import bytes_per_gpu
    from faultsense_pipelines.probe.model import VARIANTS, probe_config

    check_cover_args(gpus, probe_size)
    if variant not in VARIANTS:
        fail(f"--variant must be one of {', '.join(VARIANTS)}, got {shown(variant)}")
    if out.exists() and not out.is_dir():
        fail(f"--out {out} exists and is not a folder")
    try:
        config = probe_config(gpus, probe_size, variant)
    except ValueError as exc:
        fail(f"--variant {variant} with --gpus {gpus}: {exc}")
    from faultsense_pipelines.probe.checkpoint import write_checkpoint

    info = write_checkpoint(out, gpus, probe_size, variant, seed)
    per_gpu = bytes_per_gpu(config, gpus)
    typer.echo(
        f"wrote {info.path}: {variant} probe model, {info.n_experts} experts, hidden {info.hidden}, "
        f"top-k {probe_size}; {per_gpu.total_bytes / MIB:.1f} MiB of weights per GPU at {gpus}-way "
        "expert parallelism (bf16)"
    )


@probe_app.command("memory")
def memory(
    gpus: Annotated[int, typer.Option("--gpus", help="GPUs in the replica (expert-parallel degree).")],
    probe_size: Annotated[int, typer.Option("--probe-size", help="GPUs per probe k (router top-k), 2 <= k <= --gpus.")],
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


def register(app: typer.Typer) -> None:
    """Add the ``probe`` command group to the ``faultsense`` app."""
    app.add_typer(probe_app, name="probe")
