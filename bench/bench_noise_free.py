"""The evidence drill-down on noise-free probes, beside the adaptive one: exactness and cost.

The paper's noise-free grid (bench/bench_paper_sim.py's scenarios: n in {25, 100, 300}, k in {4, 8},
d in {1, 2, 4} faults of GPUs, links or both, slowdowns 1.3-3x, links never touching a faulty
GPU), ``--seeds`` scenarios per cell, best cover. Per fault kind: runs, exact runs of each
drill-down, wrong blames (components reported faulty that were not injected), and total probes
(Phase 1 + 2) of evidence over adaptive. The issue's target: exact, at most 1.5x the probes.

``--perturb`` adds the grid's robustness to its draw, where faults are densest: each n = 25
scenario with 2 or 4 faults, every fault's slowdown scaled by 0.8, 0.9, 1.1 and 1.25 in turn
(clipped to 1.3-3x), evidence drill-down only; exact variants, wrong blames, the misses.

Run: ``.venv/bin/python -m bench.bench_evidence_noise_free --seeds 2 [--perturb]``; writes
bench/results/evidence_noise_free.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import subprocess
import time
import zlib
from collections import defaultdict
from pathlib import Path

from bench.bench_paper_sim import make_faults, score
from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import localize
from faultsense_pipelines.replica.faults import GpuFault
from faultsense_pipelines.sim.simulator import SimulatedReplica

RESULTS = Path(__file__).resolve().parent / "results"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2, help="scenarios per cell (default 2)")
    ap.add_argument("--perturb", action="store_true", help="also the n = 25 dense scenarios with scaled slowdowns")
    args = ap.parse_args()
    t0 = time.process_time()
    # the code this process imported: the commit at its start
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "faultsense_pipelines"], capture_output=True, text=True, check=False)
    commit += "+uncommitted" if dirty.stdout.strip() else ""
    agg: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    inexact = []
    for n in (25, 100, 300):
        for k in (4, 8):
            cover = plan_cover(n, k, "best")
            for d in (1, 2, 4):
                for kind in ("gpu", "link", "both"):
                    for seed in range(args.seeds):
                        rng = random.Random(zlib.crc32(f"{n},{k},{d},{kind},{seed}".encode()))
                        faults = make_faults(n, d, kind, rng, (1.3, 3.0))
                        a = agg[kind]
                        a["runs"] += 1
                        for method in ("adaptive", "evidence"):
                            loc = localize(SimulatedReplica(n, faults), cover, method=method)
                            tp, fp, truth = score(loc, faults)
                            a[f"probes_{method}"] += loc.probes_phase1 + loc.probes_phase2
                            a[f"exact_{method}"] += int(tp == truth and fp == 0)
                            a[f"wrong_{method}"] += fp
                            if method == "evidence" and not (tp == truth and fp == 0):
                                inexact.append(f"n={n} k={k} d={d} {kind} seed {seed}: found {tp} of {truth}, {fp} wrong")
    rows = [
        "| kind | runs | exact adaptive | exact evidence | wrong adaptive | wrong evidence | probes evidence / adaptive |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, a in agg.items():
        rows.append(
            f"| {kind} | {a['runs']} | {a['exact_adaptive']} | {a['exact_evidence']} | {a['wrong_adaptive']} | "
            f"{a['wrong_evidence']} | {a['probes_evidence'] / a['probes_adaptive']:.3f} |"
        )
    text = "\n".join(
        [
            "# The evidence drill-down on noise-free probes (bench/bench_evidence_noise_free.py)",
            "",
            f"`python -m bench.bench_evidence_noise_free --seeds {args.seeds}{' --perturb' if args.perturb else ''}`: the paper's noise-free grid, "
            f"{args.seeds} scenario(s) per cell, best cover; {time.process_time() - t0:.0f} s CPU; on {commit}.",
            "",
            *rows,
            "",
            "Evidence runs not exact: " + ("none" if not inexact else ""),
            *[f"- {line}" for line in inexact],
            "",
            *(perturbed(args.seeds) if args.perturb else []),
        ]
    )
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "evidence_noise_free.md").write_text(text)


SCALES = (0.8, 0.9, 1.1, 1.25)


def perturbed(seeds: int) -> list[str]:
    """The ``--perturb`` section: every n = 25 grid scenario with d = 2 or 4 faults, each
    fault's slowdown scaled by each of :data:`SCALES` in turn (clipped to 1.3-3x), localized
    by the evidence drill-down; markdown lines (a summary table and the inexact variants)."""
    t0 = time.process_time()
    runs = exact = wrong = 0
    misses = []
    for k in (4, 8):
        cover = plan_cover(25, k, "best")
        for d in (2, 4):
            for kind in ("gpu", "link", "both"):
                for seed in range(seeds):
                    rng = random.Random(zlib.crc32(f"25,{k},{d},{kind},{seed}".encode()))
                    faults = make_faults(25, d, kind, rng, (1.3, 3.0))
                    for j, fault in enumerate(faults):
                        for scale in SCALES:
                            varied = list(faults)
                            varied[j] = dataclasses.replace(fault, slowdown=min(3.0, max(1.3, fault.slowdown * scale)))
                            loc = localize(SimulatedReplica(25, varied), cover, method="evidence")
                            tp, fp, truth = score(loc, varied)
                            runs += 1
                            exact += tp == truth and fp == 0
                            wrong += fp
                            if not (tp == truth and fp == 0):
                                shown = ", ".join(
                                    f"{getattr(f, 'gpu', None) if isinstance(f, GpuFault) else '-'.join(map(str, f.link))} "
                                    f"{f.slowdown:.2f}x"
                                    for f in varied
                                )
                                misses.append(
                                    f"k={k} d={d} {kind} seed {seed}, fault {j} x{scale}: [{shown}]: found {tp} of {truth}, {fp} wrong"
                                )
    return [
        f"## Robustness to the draw (`--perturb`): n = 25, d = 2 and 4, slowdowns x {', '.join(map(str, SCALES))}",
        "",
        "| variants | exact | wrong blames | CPU s |",
        "|---|---|---|---|",
        f"| {runs} | {exact} | {wrong} | {time.process_time() - t0:.0f} |",
        "",
        "Not exact: " + ("none" if not misses else ""),
        *[f"- {line}" for line in misses],
        "",
    ]


if __name__ == "__main__":
    main()
