"""Probe model weights per GPU, both variants, n in {1, 2, 4, ..., 64}-way expert parallelism.

The figure is computed from each variant's built config (:func:`probe.memory.bytes_per_gpu`)
and checked against the tensor sizes in real ``model.safetensors`` files: the ``paper``
checkpoint once (its weights do not depend on n; per GPU = non-expert tensors + 1/n of the
expert tensors) and ``slim`` checkpoints for n up to ``--build-slim-up-to`` (each n has its
own E = n experts).

    .venv/bin/python -m bench.bench_probe_memory [--build-slim-up-to 8] [--skip-paper-build]

Writes bench/results/probe_memory.csv and bench/results/probe_memory.md.
"""

from __future__ import annotations

import argparse
import csv
import tempfile
from pathlib import Path

from safetensors import safe_open

from faultsense_pipelines.probe.checkpoint import write_checkpoint
from faultsense_pipelines.probe.memory import bytes_per_gpu
from faultsense_pipelines.probe.model import VARIANTS, probe_config

GPUS = (1, 2, 4, 8, 16, 32, 64)
PROBE_SIZE = 4  # top-k does not change the weights; k = min(4, n)
RESULTS = Path(__file__).resolve().parent / "results"
MIB = 2**20
BYTES = {"BF16": 2, "F16": 2, "F32": 4}


def safetensors_bytes(path: Path) -> tuple[int, int, int]:
    """(non-expert bytes, expert bytes, experts) of a checkpoint, from tensor shapes and dtypes."""
    other = experts = 0
    expert_ids = set()
    with safe_open(str(path / "model.safetensors"), "pt") as f:
        for key in f.keys():  # noqa: SIM118 (safe_open is not iterable)
            tensor = f.get_slice(key)
            size = BYTES[tensor.get_dtype()]
            for dim in tensor.get_shape():
                size *= dim
            if ".experts." in key:
                experts += size
                expert_ids.add(key.split(".experts.")[1].split(".")[0])
            else:
                other += size
    return other, experts, len(expert_ids)


def per_gpu_from_file(path: Path, n: int) -> int:
    other, experts, count = safetensors_bytes(path)
    if count % n:
        raise ValueError(f"{count} experts in {path} do not split over {n} GPUs")
    return other + experts // n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-slim-up-to", type=int, default=8, help="build slim checkpoints for n <= this")
    parser.add_argument("--skip-paper-build", action="store_true", help="do not build the 1.25 GB paper checkpoint")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="probe-memory-") as tmp:
        built: dict[tuple[str, int], Path] = {}
        if not args.skip_paper_build:
            built[("paper", 0)] = write_checkpoint(Path(tmp) / "paper", 1, 1, "paper").path
        for n in GPUS:
            if n <= args.build_slim_up_to:
                built[("slim", n)] = write_checkpoint(Path(tmp) / f"slim-{n}", n, min(n, PROBE_SIZE)).path
        for variant in VARIANTS:
            for n in GPUS:
                config = probe_config(n, min(n, PROBE_SIZE), variant)
                computed = bytes_per_gpu(config, n)
                path = built.get((variant, 0 if variant == "paper" else n))
                actual = per_gpu_from_file(path, n) if path else None
                rows.append(
                    {
                        "variant": variant,
                        "n_gpus": n,
                        "experts": config.num_experts,
                        "experts_per_gpu": config.num_experts // n,
                        "replicated_bytes": computed.replicated_bytes,
                        "expert_bytes": computed.expert_bytes,
                        "per_gpu_bytes": computed.total_bytes,
                        "per_gpu_mib": round(computed.total_bytes / MIB, 2),
                        "per_gpu_mb": round(computed.total_bytes / 1e6, 2),
                        "safetensors_per_gpu_bytes": actual if actual is not None else "",
                        "match": "" if actual is None else actual == computed.total_bytes,
                    }
                )
    RESULTS.mkdir(parents=True, exist_ok=True)
    with open(RESULTS / "probe_memory.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    header = "| variant | n | experts | experts/GPU | per GPU MiB | per GPU MB | safetensors check |"
    lines = [header, "|" + "---|" * 7]
    for r in rows:
        check = {"": "not built", True: "equal", False: "DIFFERS"}[r["match"]]
        lines.append(
            f"| {r['variant']} | {r['n_gpus']} | {r['experts']} | {r['experts_per_gpu']} | "
            f"{r['per_gpu_bytes'] / MIB:.1f} | {r['per_gpu_bytes'] / 1e6:.1f} | {check} |"
        )
    table = "\n".join(lines)
    (RESULTS / "probe_memory.md").write_text(
        "# Probe model weights per GPU (bf16, n-way expert parallelism)\n\n"
        "Computed from each variant's config; 'equal' = the same figure from the tensor sizes of a\n"
        "built model.safetensors. Weights only (no activations, KV cache, framework overhead).\n\n"
        f"{table}\n"
    )
    print(table)
    if any(r["match"] is False for r in rows):
        raise SystemExit("computed bytes differ from the safetensors files")


if __name__ == "__main__":
    main()
