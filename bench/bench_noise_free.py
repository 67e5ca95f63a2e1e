"""The sequential drill-down on noise-free probes, beside the adaptive one: exactness and cost.

The paper's noise-free grid (bench/bench_paper_sim.py's scenarios: n in {25, 100, 300}, k in {4, 8},
d in {1, 2, 4} faults of GPUs, links or both, slowdowns 1.3-3x, links never touching a faulty
GPU), ``--seeds`` scenarios per cell, best cover, one measurement per probe. Per fault kind:
runs, exact runs of each drill-down, wrong blames (components reported faulty that were not
injected), and total probes (Phase 1 + 2) of sequential over adaptive.

Cost (issue #29's target): n = 300, k = 8, d = 4 noise-free, ``--cost-seeds`` scenarios of four
slow GPUs and of two slow GPUs plus two slow links (the grid's ``gpu`` and ``both`` kinds):
Phase 2 probes per fault (target <= 47 per slow GPU) and all pairs / (Phase 1 + 2) (target
>= 25x), next to the fewest Phase 2 probes the sequential test's guarantee allows: the ``j``-th
claim of a sweep is tested at ``alpha / (j (j + 1))``, a round of one measurement a probe can at
most double an e-value (:func:`~faultsense_pipelines.localize.sequential.rounds_lower_bound`),
and a GPU or link claim needs two sub-tests to reject, so ``d`` claims need at least
``sum_j 2 * 2 * rounds_lower_bound(alpha / (j (j + 1)), 1)`` probes before any search.

``--perturb`` adds the grid's robustness to its draw, where faults are densest: each n = 25
scenario with 2 or 4 faults, every fault's slowdown scaled by 0.8, 0.9, 1.1 and 1.25 in turn
(clipped to 1.3-3x), sequential drill-down only; exact variants, wrong blames, the misses.

Run: ``.venv/bin/python -m bench.bench_noise_free --seeds 2 [--cost-seeds 5] [--perturb]``; writes
bench/results/noise_free.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import random
import re
import statistics
import time
import zlib
from collections import defaultdict
from pathlib import Path

from bench._provenance import code_commit
from bench.bench_paper_sim import make_faults, score
from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import localize
from faultsense_pipelines.localize.drilldown.recheck import plan_recheck
from faultsense_pipelines.localize.sequential import rounds_lower_bound
from faultsense_pipelines.localize.sequential.eprocess import PairedTest
from faultsense_pipelines.localize.sequential.wiring import DEFAULT_ALPHA
from faultsense_pipelines.replica.faults import GpuFault
from faultsense_pipelines.sim.simulator import SimulatedReplica

RESULTS = Path(__file__).resolve().parent / "results"
METHODS = ("adaptive", "sequential")
#: the cost target's replica: n, k, d
COST = (300, 8, 4)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2, help="scenarios per grid cell (default 2)")
    ap.add_argument("--cost-seeds", type=int, default=5, help="scenarios per fault kind of the cost target (default 5)")
    ap.add_argument("--cost-repeats", default="1,3", help="measurements per probe of the cost rows (default 1,3)")
    ap.add_argument("--perturb", action="store_true", help="also the n = 25 dense scenarios with scaled slowdowns")
    args = ap.parse_args()
    if args.seeds < 1 or args.cost_seeds < 1:
        ap.error("--seeds and --cost-seeds must be >= 1")
    try:
        cost_repeats = [int(r) for r in args.cost_repeats.split(",")]
    except ValueError:
        ap.error(f"--cost-repeats must be comma-separated integers, got {args.cost_repeats!r}")
    if not cost_repeats or min(cost_repeats) < 1:
        ap.error(f"--cost-repeats must be integers >= 1, got {args.cost_repeats!r}")
    t0 = time.process_time()
    commit = code_commit("bench/bench_noise_free.py")
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
                        for method in METHODS:
                            loc = localize(SimulatedReplica(n, faults), cover, method=method, seed=seed)
                            tp, fp, truth = score(loc, faults)
                            a[f"probes_{method}"] += loc.probes_phase1 + loc.probes_phase2
                            a[f"exact_{method}"] += int(tp == truth and fp == 0)
                            a[f"wrong_{method}"] += fp
                            if method == "sequential" and not (tp == truth and fp == 0):
                                unsettled = [v for v in loc.verdicts if v.status == "inconclusive"]
                                why = sorted({_why(v.reason) for v in unsettled})
                                inexact.append(
                                    f"n={n} k={k} d={d} {kind} seed {seed}: found {tp} of {truth}, {fp} wrong, "
                                    f"{len(unsettled)} inconclusive, Phase 2 {loc.probes_phase2} probes"
                                    + (f"; inconclusive because: {'; '.join(why)}" if why else "")
                                )
    rows = [
        "| kind | runs | exact adaptive | exact sequential | wrong adaptive | wrong sequential | probes sequential / adaptive |",
        "|---|---|---|---|---|---|---|",
    ]
    for kind, a in agg.items():
        rows.append(
            f"| {kind} | {a['runs']} | {a['exact_adaptive']} | {a['exact_sequential']} | {a['wrong_adaptive']} | "
            f"{a['wrong_sequential']} | {a['probes_sequential'] / a['probes_adaptive']:.3f} |"
        )
    grid_s = time.process_time() - t0
    text = "\n".join(
        [
            "# The sequential drill-down on noise-free probes (bench/bench_noise_free.py)",
            "",
            f"`python -m bench.bench_noise_free --seeds {args.seeds} --cost-seeds {args.cost_seeds} --cost-repeats {args.cost_repeats}"
            f"{' --perturb' if args.perturb else ''}` on {commit}; one measurement per probe, best cover,",
            f"sequential at alpha {DEFAULT_ALPHA}, min_slowdown 1.2, its default budget.",
            "",
            f"## The paper's grid: {args.seeds} scenario(s) per cell ({grid_s:.0f} s CPU)",
            "",
            *rows,
            "",
            "Sequential runs not exact: " + ("none" if not inexact else ""),
            *[f"- {line}" for line in inexact],
            "",
            *cost(args.cost_seeds, cost_repeats),
            *(perturbed(args.seeds) if args.perturb else []),
        ]
    )
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "noise_free.md").write_text(text)


def _why(reason: str | None) -> str:
    """An inconclusive verdict's reason without its figures (one line per kind of reason)."""
    text = re.sub(r"(?<![A-Za-z])(?<!Phase )\d+(?:\.\d+)?", "#", reason or "no reason given")
    return text.split(" (e-value")[0]


def clean_rounds(level: float, repeats: int = 1) -> int:
    """Rounds :class:`PairedTest` takes to reject at ``level`` on a perfectly clean 2x signal
    (every test measurement above every reference one): the test's own floor, at or above
    :func:`rounds_lower_bound` (its mixture of bets pays for the bets it does not need)."""
    t = PairedTest(math.log(1.2), level)
    while not t.rejected:
        t.add([2.0] * repeats, [1.0] * repeats)
    return t.rounds


def read_floor(cover_probes: list[tuple[int, ...]], faults: list, k: int) -> int:
    """Probes a binary drill-down spends reading what the slow GPUs hid, and finding the
    slow links, at the least: one probe per re-check probe that
    :func:`~faultsense_pipelines.localize.drilldown.recheck.plan_recheck` packs the hidden
    links into (the planner the adaptive drill-down uses), plus ``ceil(log2(C(k, 2) + k))``
    binary reads per slow link (one of a probe's links or GPUs). A reference for the
    sequential drill-down's search, not a proof of optimality."""
    slow = {f.gpu for f in faults if isinstance(f, GpuFault)}
    passed = [p for p in cover_probes if not slow.intersection(p)]
    cleared = {e for p in passed for e in itertools.combinations(sorted(p), 2)}
    pieces = [tuple(g for g in p if g not in slow) for p in cover_probes if slow.intersection(p)]
    pieces = [q for q in pieces if len(q) >= 2]
    links = {e for q in pieces for e in itertools.combinations(sorted(q), 2) if e not in cleared}
    n_links = sum(not isinstance(f, GpuFault) for f in faults)
    return len(plan_recheck(pieces, links, k)) + n_links * math.ceil(math.log2(math.comb(k, 2) + k))


def cost(seeds: int, repeats: list[int]) -> list[str]:
    """The cost section: n = 300, k = 8, d = 4 noise-free, four slow GPUs and two GPUs plus
    two links, at each of ``repeats`` measurements a probe; markdown lines."""
    t0 = time.process_time()
    n, k, d = COST
    cover = plan_cover(n, k, "best")
    pairs = n * (n - 1) // 2
    levels = [DEFAULT_ALPHA / (j * (j + 1)) for j in range(1, d + 1)]
    claim_floor = {r: sum(2 * 2 * rounds_lower_bound(a, r) for a in levels) for r in repeats}
    rows = [
        "| faults | repeats | drill-down | exact | Phase 1 | Phase 2 mean (min-max) | Phase 2 per fault | "
        "of it: rounds of claims with a verdict / the rest: search reads, cleared claims (probes, mean) | all pairs / total | "
        "floor: claims + reads (mean) | x the floor |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in repeats:
        for kind, label in (("gpu", "4 slow GPUs"), ("both", "2 slow GPUs + 2 slow links")):
            for method in METHODS:
                p2, claims, exact, totals, floors = [], [], 0, [], []
                for seed in range(seeds):
                    rng = random.Random(zlib.crc32(f"{n},{k},{d},{kind},{seed}".encode()))
                    faults = make_faults(n, d, kind, rng, (1.3, 3.0))
                    loc = localize(SimulatedReplica(n, faults), cover, repeats=r, method=method, seed=seed)
                    tp, fp, truth = score(loc, faults)
                    exact += tp == truth and fp == 0
                    p2.append(loc.probes_phase2)
                    totals.append(loc.probes_phase1 + loc.probes_phase2)
                    claims.append(sum(v.probes_used for v in loc.verdicts) if method == "sequential" else 0)
                    floors.append(claim_floor[r] + read_floor(cover.probes, faults, k))
                mean = statistics.mean(p2)
                split = f"{statistics.mean(claims):.1f} / {mean - statistics.mean(claims):.1f}" if method == "sequential" else "-"
                floor = f"{claim_floor[r]} + {statistics.mean(floors) - claim_floor[r]:.1f}" if method == "sequential" else "-"
                times = f"{mean / statistics.mean(floors):.2f}" if method == "sequential" else "-"
                rows.append(
                    f"| {label} | {r} | {method} | {exact}/{seeds} | {len(cover.probes)} | {mean:.1f} ({min(p2)}-{max(p2)}) | "
                    f"{mean / d:.1f} | {split} | {pairs / statistics.mean(totals):.1f}x | {floor} | {times} |"
                )
    need = pairs / 25 - len(cover.probes)
    lines = [
        f"## Cost: n = {n}, k = {k}, d = {d} noise-free, {seeds} scenario(s) per row ({time.process_time() - t0:.0f} s CPU)",
        "",
        f"Targets: <= 47 Phase 2 probes per slow GPU; all pairs ({pairs:,}) / total >= 25x, i.e. at most "
        f"{pairs / 25:.0f} probes in all: Phase 1's {len(cover.probes)} leave {need:.0f} for Phase 2 (~{need / d:.0f} per fault). "
        "A probe is one record (``repeats`` measurements; a round of a paired test is two). "
        "Floor: what the guarantee allows the claims (below) plus what a binary drill-down must read "
        "(one probe per re-check probe the adaptive drill-down's planner packs the hidden links into, "
        "and ceil(log2(C(k, 2) + k)) reads per slow link).",
        "",
        *rows,
        "",
        f"What the guarantee allows: the first {d} claims of a sweep are tested at levels "
        + ", ".join(f"{a:.3g}" for a in levels)
        + "; a GPU or link claim has two sub-tests of two probes a round.",
        "",
        "| repeats | most growth a round | rounds per sub-test, at least | probes for the 4 claims, at least | per fault | "
        "all pairs / total, at best | this test on a clean signal: rounds | probes | x the bound |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in repeats:
        bound = sum(2 * 2 * rounds_lower_bound(a, r) for a in levels)
        floor = sum(2 * 2 * clean_rounds(a, r) for a in levels)
        lines.append(
            f"| {r} | {math.comb(2 * r, r)}x | {', '.join(str(rounds_lower_bound(a, r)) for a in levels)} | {bound} | "
            f"{bound / d:.0f} | {pairs / (len(cover.probes) + bound):.1f}x | {', '.join(str(clean_rounds(a, r)) for a in levels)} | "
            f"{floor} | {floor / bound:.2f} |"
        )
    return [*lines, ""]


SCALES = (0.8, 0.9, 1.1, 1.25)
#: ``--perturb`` misses listed, at most
SHOWN = 20


def perturbed(seeds: int) -> list[str]:
    """The ``--perturb`` section: every n = 25 grid scenario with d = 2 or 4 faults, each
    fault's slowdown scaled by each of :data:`SCALES` in turn (clipped to 1.3-3x), localized
    by the sequential drill-down; markdown lines (a summary table and the inexact variants)."""
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
                            loc = localize(SimulatedReplica(25, varied), cover, method="sequential", seed=seed)
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
        "Not exact: " + ("none" if not misses else f"{len(misses)}" + (f", the first {SHOWN}:" if len(misses) > SHOWN else ":")),
        *[f"- {line}" for line in misses[:SHOWN]],
        "",
    ]


if __name__ == "__main__":
    main()
