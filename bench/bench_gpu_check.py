"""GPU check of the probe model: memory and latency on CUDA, and a real vLLM server.

Run through ``scripts/gpu-check.sh`` on a machine with CUDA GPUs. For each variant it
builds the checkpoint for n = the visible GPUs, loads it with transformers on ``cuda:0``
(the whole model on one GPU: the n = 1 figure) and records the allocated bytes next to the
computed weights, then the median latency of a probe forward (CUDA-synchronized, ms). With
a vLLM venv it serves the ``slim`` checkpoint once per layout -- TP T x DP n/T with expert
parallelism, for every T in 1, 2, 4, 8 that divides n, from the command
``faultsense probe serve --dry-run`` prints (also recorded) -- with
``--enable-return-routed-experts`` (Model Runner V2), and runs every probe of size k with the
``vllm`` executor, routing checked against the routed experts the server returns. With n > 1 it
also runs the ``local`` executor on NCCL in both engine modes (``member_only``, ``all_ranks``).

    PYTHON=<python with CUDA torch> VLLM_VENV=<venv with vLLM> scripts/gpu-check.sh

Writes bench/results/gpu_check.json. Exits 2 at once when no CUDA GPU is visible.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

from faultsense_pipelines.probe.checkpoint import write_checkpoint
from faultsense_pipelines.probe.encoding import probe_embeddings, probe_experts
from faultsense_pipelines.probe.executors.vllm_http import VllmExecutor
from faultsense_pipelines.probe.memory import bytes_per_gpu
from faultsense_pipelines.probe.model import VARIANTS, probe_config
from faultsense_pipelines.probe.reference import load_reference_model, reference_forward
from faultsense_pipelines.probe.serve import plan_serve
from faultsense_pipelines.probe.vllm_server import VllmServer, VllmServerError, vllm_python

RESULTS = Path(__file__).resolve().parent / "results"


def transformers_on_cuda(path: Path, n: int, k: int, tokens: int, repeats: int) -> dict:
    """Load a checkpoint on cuda:0; weights allocated, and probe forward latency (ms)."""
    torch.cuda.empty_cache()
    before = torch.cuda.memory_allocated(0)
    model = load_reference_model(path, device="cuda:0")
    allocated = torch.cuda.memory_allocated(0) - before
    config = model.config
    embeds = probe_embeddings(tuple(range(k)), n, config.num_experts, k, config.hidden_size, tokens).cuda()
    routed = reference_forward(model, embeds).routed_experts  # warm-up and routing check
    latencies = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        start = time.perf_counter()
        reference_forward(model, embeds)
        torch.cuda.synchronize()
        latencies.append((time.perf_counter() - start) * 1000.0)
    del model
    torch.cuda.empty_cache()
    return {
        "cuda_allocated_bytes": allocated,
        "computed_weights_bytes_1gpu": bytes_per_gpu(config, 1).total_bytes,
        "routing_ok": torch.equal(routed, probe_experts(tuple(range(k)), n, config.num_experts, k, tokens)),
        "forward_ms_median": statistics.median(latencies),
        "forward_ms_cv": statistics.pstdev(latencies) / statistics.mean(latencies),
        "repeats": repeats,
    }


# flags VllmServer sets itself (with their values), left out of the probe-serve command
_SERVER_OWN = {
    "--model": 1,
    "--host": 1,
    "--port": 1,
    "--max-model-len": 1,
    "--enable-prompt-embeds": 0,
    "--enable-per-request-metrics": 0,
}


def serve_args(path: Path, n: int, tp: int) -> list[str]:
    """The api_server arguments of ``faultsense probe serve`` for TP ``tp`` over ``n`` GPUs with
    routed experts, less those :class:`VllmServer` sets itself."""
    argv = list(plan_serve(path, n, tensor_parallel=tp, expert_parallel=True, routed_experts=True).argv[3:])
    out, i = [], 0
    while i < len(argv):
        if argv[i] in _SERVER_OWN:
            i += 1 + _SERVER_OWN[argv[i]]
            continue
        out.append(argv[i])
        i += 1
    return out


def probe_serve_dry_run(path: Path, n: int, k: int, tp: int) -> dict:
    """What ``faultsense probe serve --dry-run`` prints for this layout (exit code, lines)."""
    import subprocess

    cmd = [str(Path(sys.executable).with_name("faultsense")), "probe", "serve", "--gpus", str(n), "--probe-size", str(k)]
    cmd += ["--tensor-parallel", str(tp), "--checkpoint", str(path), "--routed-experts", "--dry-run"]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    return {"exit_code": run.returncode, "stdout": run.stdout.splitlines(), "stderr": run.stderr[-2000:]}


def vllm_probes(path: Path, venv: Path, n: int, k: int, tokens: int, repeats: int, timeout_s: float, tp: int = 1) -> dict:
    """Serve the checkpoint with vLLM at TP ``tp`` x DP ``n / tp`` (EP over all n GPUs when
    n > 1) and run every size-k probe with routing checked."""
    extra = serve_args(path, n, tp) if n > 1 else ["--enable-return-routed-experts", "--gpu-memory-utilization", "0.05"]
    server = VllmServer(
        path,
        venv=venv,
        extra_args=extra,
        # dev mode serves /server_info, which the executor's check_layout reads (trusted loopback only)
        env={"VLLM_USE_V2_MODEL_RUNNER": "1", "VLLM_SERVER_DEV_MODE": "1"},
        ready_timeout_s=timeout_s,
        log_path=RESULTS / f"gpu_check_vllm_tp{tp}.log",
    )
    probes = {}
    # DP n/tp engines behind one URL: every probe pinned to the engine of its lowest GPU (X-data-parallel-rank)
    dp = n // tp if n > 1 else None
    pinning = {"data_parallel_size": dp, "dp_rank": "member", "check_layout": True}
    with server, VllmExecutor(n, k, url=server.url, tokens=tokens, check_routing=True, **pinning) as executor:
        for gpus in itertools.combinations(range(n), k):
            result = executor.run(gpus, repeats=repeats)
            details = executor.last_details
            server_ttft = [v for v in details.server_ttft_ms if v is not None] if details else []
            probes[",".join(map(str, gpus))] = {
                "error": result.error,
                "client_ttft_ms_median": statistics.median(result.latencies_ms) if result.ok else None,
                "server_ttft_ms_median": statistics.median(server_ttft) if server_ttft else None,
                "routing": details.routing if details else None,
                "dp_rank": details.dp_rank if details else None,
            }
        layout = executor.served_layout
    return {"extra_args": extra, "probes": probes, "served_layout": None if layout is None else vars(layout)}


def local_engines(n: int, k: int, repeats: int) -> dict:
    """The ``local`` executor on NCCL in both engine modes: median latency of every size-k probe."""
    from faultsense_pipelines.probe.executors.local import LocalExecutor

    out: dict = {}
    for engine in ("member_only", "all_ranks"):
        try:
            with LocalExecutor(n, k, engine=engine, backend="nccl") as ex:
                out[engine] = {
                    ",".join(map(str, g)): (
                        statistics.median(m.latencies_ms) if (m := ex.run(g, repeats)).ok else {"error": m.error}
                    )
                    for g in itertools.combinations(range(n), k)
                }
        except Exception as exc:  # recorded, not fatal: the rest of the check still runs
            out[engine] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probe-size", type=int, default=0, help="k (default: min(2, GPUs))")
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--vllm-venv", type=Path, default=None)
    parser.add_argument("--vllm-timeout-s", type=float, default=600.0)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print(
            f"gpu-check: no CUDA GPU visible to torch {torch.__version__} ({sys.executable}); "
            "run on a CUDA machine with a CUDA build of torch (set PYTHON)",
            file=sys.stderr,
        )
        return 2
    n = torch.cuda.device_count()
    k = args.probe_size or min(2, n)
    report: dict = {
        "gpus": n,
        "device": torch.cuda.get_device_name(0),
        "probe_size": k,
        "tokens": args.tokens,
        "torch": torch.__version__,
        "variants": {},
    }
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        paths = {}
        for variant in VARIANTS:
            try:
                probe_config(n, k, variant)
            except ValueError as exc:
                report["variants"][variant] = {"skipped": str(exc)}
                continue
            paths[variant] = write_checkpoint(Path(tmp) / variant, n, k, variant).path
            entry = transformers_on_cuda(paths[variant], n, k, args.tokens, args.repeats)
            entry["computed_weights_bytes_per_gpu"] = bytes_per_gpu(probe_config(n, k, variant), n).total_bytes
            report["variants"][variant] = entry
        venv = args.vllm_venv
        if venv is None or vllm_python(venv) is None:
            report["vllm"] = {"skipped": f"no vLLM venv at {venv} (pass --vllm-venv / VLLM_VENV)"}
        else:
            report["vllm"] = {}
            for tp in [t for t in (1, 2, 4, 8) if n % t == 0 and (n > 1 or t == 1)]:
                key = f"tp{tp}_dp{n // tp}"
                report["vllm"][key] = {"probe_serve": probe_serve_dry_run(paths["slim"], n, k, tp)}
                try:
                    report["vllm"][key] |= vllm_probes(
                        paths["slim"], venv, n, k, args.tokens, args.repeats, args.vllm_timeout_s, tp
                    )
                except VllmServerError as exc:
                    report["vllm"][key]["error"] = str(exc)
        if n > 1:
            report["local_nccl"] = local_engines(n, k, args.repeats)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "gpu_check.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
