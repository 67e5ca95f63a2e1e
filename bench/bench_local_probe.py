"""``local`` executor benchmark: probe latency, its noise, and the smallest slowdown detected.

For n = 4 (k = 2) and n = 8 (k = 4), one pool each (OLMoE expert shapes: hidden 2048,
intermediate 1024, bf16, 64 tokens per probe):

1. Latency and noise: every Phase 1 cover probe measured ``--latency-repeats`` times;
   median latency and coefficient of variation (stdev / mean over the repeats) per probe.
2. Detection: for each slowdown in 1.0 (control), 1.1, 1.25, 1.5, 2, 3, ``--sweeps``
   localization sweeps with a slow GPU injected (rotating over the GPUs that the noise-free
   simulator localizes exactly for this cover, so a miss is the measurement's fault, not
   the algorithm's). Per sweep, from the same Phase 1 measurements: does the paper's rule
   (T_i > 1.2 x median) and the default robust rule flag exactly the probes that hold the
   slow GPU; and does Phase 1 + Phase 2 with the paper's rule localize exactly that GPU.
   Also the measured ratio of slow to healthy probe latency (how much of the injected
   slowdown the probes see).
   "Reliably" = localized in >= 90 % of sweeps with no false alarm in the control row.

    .venv/bin/python -m bench.bench_local_probe             # ~10-20 min on a shared 2-core machine
    .venv/bin/python -m bench.bench_local_probe --quick     # 3 sweeps per slowdown, n = 8 only

Writes bench/results/local_probe.csv and bench/results/local_probe.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from pathlib import Path

import pandas as pd

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import localize, run_phase1, run_phase2
from faultsense_pipelines.localize.suspects import MedianRatioRule, RobustRule
from faultsense_pipelines.probe.executors.local import LocalExecutor
from faultsense_pipelines.replica.faults import GpuFault
from faultsense_pipelines.sim.simulator import SimulatedReplica

RESULTS = Path(__file__).resolve().parent / "results"
SLOWDOWNS = (1.0, 1.1, 1.25, 1.5, 2.0, 3.0)
PAPER, ROBUST = MedianRatioRule(1.2), RobustRule()


def localizable_gpus(n: int, k: int) -> list[int]:
    """GPUs whose 3x slowdown the noise-free simulator localizes exactly (the control)."""
    cover = plan_cover(n, k)
    return [g for g in range(n) if localize(SimulatedReplica(n, [GpuFault(g, 3.0)]), cover, rule=PAPER).faulty_gpus == [g]]


def latency_rows(ex: LocalExecutor, n: int, k: int, repeats: int) -> list[dict]:
    rows = []
    for probe in plan_cover(n, k).probes:
        lat = ex.run(probe, repeats).latencies_ms
        rows.append(
            {
                "n": n,
                "k": k,
                "probe": "-".join(map(str, probe)),
                "repeats": repeats,
                "median_ms": statistics.median(lat),
                "mean_ms": statistics.fmean(lat),
                "cv": statistics.stdev(lat) / statistics.fmean(lat),
            }
        )
    return rows


def detection_rows(ex: LocalExecutor, n: int, k: int, sweeps: int, repeats: int) -> list[dict]:
    cover = plan_cover(n, k)
    gpus = localizable_gpus(n, k)
    rows = []
    for slowdown in SLOWDOWNS:
        hits = {"paper_p1": 0, "robust_p1": 0, "localized": 0, "false_alarm": 0}
        ratios: list[float] = []  # Phase 1: median latency of probes holding g / of the others
        start = time.perf_counter()
        for s in range(sweeps):
            g = gpus[s % len(gpus)]
            ex.set_injections([] if slowdown == 1.0 else [{"gpu": g, "slowdown": slowdown}])
            phase1 = run_phase1(ex, cover, repeats=repeats, rule=PAPER)
            latencies = [r.latencies_ms for r in phase1.records]
            holding = {i for i, p in enumerate(cover.probes) if g in p}
            want = set() if slowdown == 1.0 else holding
            medians = [statistics.median(lat) for lat in latencies]
            ratios.append(
                statistics.median(medians[i] for i in holding)
                / statistics.median(m for i, m in enumerate(medians) if i not in holding)
            )
            hits["paper_p1"] += set(PAPER.judge(latencies).suspects) == want
            robust = ROBUST.judge(latencies)
            hits["robust_p1"] += set(robust.suspects) == want and not robust.replica_degraded
            loc = run_phase2(ex, phase1, repeats=repeats)
            blamed = loc.faulty_gpus or loc.faulty_links
            hits["localized"] += (loc.faulty_gpus == [g] and not loc.faulty_links) if slowdown > 1.0 else not blamed
            hits["false_alarm"] += bool(blamed) and (slowdown == 1.0 or loc.faulty_gpus != [g] or bool(loc.faulty_links))
        ex.set_injections([])
        rows.append(
            {
                "n": n,
                "k": k,
                "slowdown": slowdown,
                "sweeps": sweeps,
                "repeats": repeats,
                "measured_ratio": statistics.median(ratios),
                **{f"{key}_rate": v / sweeps for key, v in hits.items()},
                "seconds_per_sweep": (time.perf_counter() - start) / sweeps,
            }
        )
        print(rows[-1], flush=True)
    return rows


def smallest_reliable(det: pd.DataFrame) -> dict[int, float | None]:
    out = {}
    for n, group in det.groupby("n"):
        control_ok = float(group.loc[group.slowdown == 1.0, "false_alarm_rate"].iloc[0]) == 0.0
        ok = group[(group.slowdown > 1.0) & (group.localized_rate >= 0.9)]
        out[int(n)] = float(ok.slowdown.min()) if control_ok and len(ok) else None
    return out


def write_markdown(lat: pd.DataFrame, det: pd.DataFrame, load: tuple, elapsed_s: float, args) -> str:
    summary = (
        lat.groupby(["n", "k"])
        .agg(probes=("probe", "size"), median_ms=("median_ms", "median"), cv_median=("cv", "median"), cv_max=("cv", "max"))
        .reset_index()
    )
    best = smallest_reliable(det)
    lines = [
        "# `local` executor: probe latency, noise and detectable slowdown",
        "",
        f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.machine()}, "
        f"{os.cpu_count()} CPU cores, torch gloo, bf16, hidden 2048, intermediate 1024, 64 tokens per probe, "
        f"one worker process per GPU (1 torch thread each). Run time {elapsed_s / 60:.1f} min.",
        "",
        f"**The machine was shared with other work during the run** (load average "
        f"{load[0]:.1f} at the start, {load[1]:.1f} at the end, on 2 cores): absolute latencies are "
        "dominated by CPU scheduling, and the noise below is this machine's, not the method's.",
        "",
        "## Per-probe latency and noise (Phase 1 cover probes)",
        "",
        summary.to_markdown(index=False, floatfmt=".3g"),
        "",
        lat.to_markdown(index=False, floatfmt=".3g"),
        "",
        "## Detection by injected GPU slowdown",
        "",
        f"{args.sweeps} sweeps per row, {args.repeats} repeats per probe. `measured_ratio`: median over "
        "sweeps of (median Phase 1 latency of the probes holding the slow GPU) / (that of the other "
        "probes) — how much of the injected slowdown reaches the probes. `paper_p1`: the paper's rule "
        "(T_i > 1.2 x median) flags exactly the probes holding the slow GPU; `robust_p1`: the default "
        "robust rule does; `localized`: Phase 1 + Phase 2 (paper's rule) confirm exactly the slow GPU "
        "(row 1.0: nothing blamed); `false_alarm`: something else was blamed.",
        "",
        det.to_markdown(index=False, floatfmt=".3g"),
        "",
        "Smallest slowdown localized in >= 90 % of sweeps (with no false alarm in the control): "
        + ", ".join(f"n={n}: {'none up to 3x' if v is None else f'{v:g}x'}" for n, v in best.items())
        + ".",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--latency-repeats", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="3 sweeps per slowdown, n = 8 only")
    args = parser.parse_args()
    configs = [(8, 4)] if args.quick else [(4, 2), (8, 4)]
    if args.quick:
        args.sweeps = 3
    load0, start = os.getloadavg()[0], time.perf_counter()
    lat_rows, det_rows = [], []
    for n, k in configs:
        with LocalExecutor(n, k) as ex:
            lat_rows += latency_rows(ex, n, k, args.latency_repeats)
            det_rows += detection_rows(ex, n, k, args.sweeps, args.repeats)
    lat, det = pd.DataFrame(lat_rows), pd.DataFrame(det_rows)
    elapsed = time.perf_counter() - start
    RESULTS.mkdir(exist_ok=True)
    both = pd.concat([lat.assign(table="latency"), det.assign(table="detection")], ignore_index=True)
    both.to_csv(RESULTS / "local_probe.csv", index=False)
    md = write_markdown(lat, det, (load0, os.getloadavg()[0]), elapsed, args)
    (RESULTS / "local_probe.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
