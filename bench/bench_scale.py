"""Planning and localization beside the probes' own run time, n = 256 .. 16,384 GPUs, k = 8.

One row per replica size: a simulated replica with two faults (a slow GPU, x1.5, and a slow
link, x1.6; lognormal noise sigma 0.02, seed 1) is planned cold (``plan_cover``, the ``best``
method) and localized (``localize``: Phase 1 + Phase 2 by the drill-down ``faultsense simulate`` uses
by default, :data:`~faultsense_pipelines.replica.vocabulary.DEFAULT_DRILLDOWN`, or ``--drilldown``), each size in a fresh
process so that caches are cold and the peak RSS is that size's own. Columns: CPU seconds of
planning and of localization (``time.process_time``, not wall time: the machine is shared),
the process's peak RSS, probes against Schönheim's bound, rounds of GPU-disjoint probes, and
the probes' own run time, rounds x 20 ms (the simulator's healthy probe latency): what a
sweep would take on the GPUs if every round ran its probes side by side.

Sizes above the CLI's limits (``cover.MAX_GPUS`` = 4096 GPUs, ``bounds.MAX_PLAN_PROBES`` =
1,000,000 probes) are planned with the limits lifted inside the child process: the row
measures what raising them would cost.

    .venv/bin/python -m bench.bench_scale                    # all sizes (16,384 takes minutes)
    .venv/bin/python -m bench.bench_scale --sizes 256 1024   # a subset
    .venv/bin/python -m bench.bench_scale --sizes 16384 --merge   # one size into the last table
    .venv/bin/python -m bench.bench_scale --sizes 4096 --drilldown adaptive --merge   # another Phase 2

Writes bench/results/scale.md (and scale.csv).
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

RESULTS = Path(__file__).resolve().parent / "results"
SIZES = (256, 1024, 2048, 4096, 8192, 16384)
K = 8
BASE_MS = 20.0  # the simulator's healthy probe latency (simulator.DEFAULT_BASE_MS)


def one(n: int, k: int = K, drilldown: str | None = None) -> dict[str, object]:
    """Plan and localize one replica of ``n`` GPUs in this process with the drill-down
    ``drilldown`` (``None``: the CLI's default); the row as a dict."""
    import faultsense_pipelines.cover as cover
    import faultsense_pipelines.cover.bounds as bounds

    cover.MAX_GPUS = max(cover.MAX_GPUS, n)  # lift the CLI's limits for the largest sizes
    bounds.MAX_PLAN_PROBES = max(bounds.MAX_PLAN_PROBES, bounds.schonheim_bound(n, k))
    from faultsense_pipelines.cover.best import best_cover_source
    from faultsense_pipelines.localize import localize
    from faultsense_pipelines.replica.faults import GpuFault, LinkFault
    from faultsense_pipelines.replica.vocabulary import DEFAULT_DRILLDOWN, DrilldownMethod
    from faultsense_pipelines.sim.simulator import SimulatedReplica

    method = DrilldownMethod(drilldown) if drilldown is not None else DEFAULT_DRILLDOWN

    start = time.process_time()
    source = best_cover_source(n, k)  # plans (memoised), so plan_cover below only schedules
    plan = cover.plan_cover(n, k)
    plan_s = time.process_time() - start
    gpu, link = n // 3, (5, n - 7)
    replica = SimulatedReplica(n, [GpuFault(gpu, 1.5), LinkFault(link, 1.6)], noise_sigma=0.02, seed=1, base_ms=BASE_MS)
    start = time.process_time()
    result = localize(replica, plan, method=method)
    found = result.to_dict()
    loc_s = time.process_time() - start
    return {
        "n": n,
        "k": k,
        "drilldown": str(method),
        "probes": len(plan.probes),
        "schonheim": plan.lower_bound,
        "probes_over_L": len(plan.probes) / plan.lower_bound,
        "rounds": len(plan.rounds),
        "rounds_ref": -(-(n - 1) // (k - 1)),
        "plan_cpu_s": plan_s,
        "localize_cpu_s": loc_s,
        "total_cpu_s": plan_s + loc_s,
        "probe_time_s": len(plan.rounds) * BASE_MS / 1000,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "phase2_probes": found["probes"]["phase2"],
        "found": found["faulty_gpus"] == [gpu] and found["faulty_links"] == [list(link)],
        "source": source,
    }


def run(sizes: tuple[int, ...], timeout_s: float, drilldown: str | None = None) -> pd.DataFrame:
    """Each size in its own process (cold caches, its own peak RSS); a size that runs past
    ``timeout_s`` or fails is reported as such."""
    from faultsense_pipelines.replica.vocabulary import DEFAULT_DRILLDOWN

    name = drilldown or str(DEFAULT_DRILLDOWN)
    rows = []
    for n in sizes:
        cmd = [sys.executable, "-m", "bench.bench_scale", "--one", str(n), *(["--drilldown", drilldown] if drilldown else [])]
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=Path(__file__).resolve().parents[1])
        except subprocess.TimeoutExpired:
            print(f"n={n}: over {timeout_s:.0f} s wall, skipped", flush=True)
            rows.append({"n": n, "k": K, "drilldown": name, "source": f"timed out after {timeout_s:.0f} s wall"})
            continue
        if done.returncode != 0:
            print(f"n={n}: failed ({done.returncode}): {done.stderr.strip().splitlines()[-1:]}", flush=True)
            rows.append({"n": n, "k": K, "drilldown": name, "source": f"failed: exit {done.returncode}"})
            continue
        row = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"n={n}: plan {row['plan_cpu_s']:.1f} s, localize {row['localize_cpu_s']:.1f} s CPU, "
            f"{row['peak_rss_mb']:.0f} MB, {row['probes']} probes in {row['rounds']} rounds",
            flush=True,
        )
        rows.append(row)
    return pd.DataFrame(rows)


def write(table: pd.DataFrame) -> None:
    """bench/results/scale.csv and scale.md."""
    RESULTS.mkdir(exist_ok=True)
    table.to_csv(RESULTS / "scale.csv", index=False)
    cols = [
        c
        for c in (
            "n",
            "drilldown",
            "probes",
            "schonheim",
            "probes_over_L",
            "rounds",
            "rounds_ref",
            "plan_cpu_s",
            "localize_cpu_s",
            "total_cpu_s",
            "probe_time_s",
            "peak_rss_mb",
            "phase2_probes",
            "found",
            "source",
        )
        if c in table.columns
    ]
    lines = [
        "# Planning and localization at scale (k = 8, two faults)",
        "",
        f"Measured by `bench/bench_scale.py` on {platform.machine()} / Python {platform.python_version()}, "
        "each size in a fresh process (cold caches; rows of several runs joined with `--merge`). CPU seconds",
        "(`time.process_time`); the machine is shared, so wall time is not reported. `probe_time_s` = rounds x 20 ms: the probes' own run time on the GPUs",
        "with every round's probes side by side. `rounds_ref` = ceil((n-1)/(k-1)), the fewest rounds any cover",
        "can have. Sizes above 4096 GPUs (or 1,000,000 probes) are planned with the CLI's limits lifted.",
        "",
        table[cols].to_markdown(index=False, floatfmt=".2f"),
        "",
    ]
    (RESULTS / "scale.md").write_text("\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--timeout", type=float, default=1800.0, help="wall seconds per size")
    parser.add_argument("--merge", action="store_true", help="replace only these sizes' rows in scale.csv")
    parser.add_argument("--drilldown", help="Phase 2 method (default: the CLI's, DEFAULT_DRILLDOWN)")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the child: one size, one JSON row
    args = parser.parse_args()
    if args.one is not None:
        print(json.dumps(one(args.one, drilldown=args.drilldown)))
        return
    table = run(tuple(args.sizes), args.timeout, args.drilldown)
    if args.merge and (RESULTS / "scale.csv").exists():  # keep the other sizes' rows of the last run
        old = pd.read_csv(RESULTS / "scale.csv")
        if "drilldown" not in old.columns:  # rows from before the column: measured with the adaptive default
            old["drilldown"] = "adaptive"
        keep = ~old.set_index(["n", "drilldown"]).index.isin(table.set_index(["n", "drilldown"]).index)
        table = pd.concat([old[keep], table]).sort_values(["n", "drilldown"], kind="stable")
    print(table.to_string(index=False))
    write(table)


if __name__ == "__main__":
    main()
