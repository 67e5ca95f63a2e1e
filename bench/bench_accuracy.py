"""Localization accuracy under the production-like latency model: adaptive versus sequential.

Every sweep draws its faults and noise from a seed, runs Phase 1 on the best cover once, then
Phase 2 twice from that same Phase 1 state (the executor is copied after Phase 1, so both
drill-downs see the same Phase 1 measurements and the same noise stream after it): the binary
``adaptive`` drill-down and the anytime-valid ``sequential`` one (docs/verdicts.md). Noise
(``faultsense_pipelines.sim.latency``): sigma 0.03, Student-t tails (4 degrees of freedom), 2% of
measurements stalled 1.5-4x, a shared drift of +-15%, load bursts (1% per measurement, +30%,
15 measurements long); the spillover family adds ``spillover`` 0.3 (every rank joins every
forward).

Per method it reports precision (blamed components that are faulty), recall (faulty
components found; all injected slowdowns are >= 1.3x, so the overall recall is the recall
for slowdowns >= 1.3x, also split by slowdown and by duty), wrong blames (healthy components
confirmed) per 100 sweeps, sweeps called degraded, Phase 1 and Phase 2 probes (median, max)
and, for ``sequential``, Phase 2 against its budget and a reliability table of its stated
confidence.

Usage: ``python -m bench.bench_accuracy [--seeds 10] [--repeats 3] [--out bench/results/accuracy_r3.md]
[--families healthy,...] [--methods sequential]``.
"""

from __future__ import annotations

import argparse
import copy
import math
import os
import random
import statistics
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from bench._provenance import code_commit
from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import run_phase1, run_phase2
from faultsense_pipelines.localize.sequential import default_budget
from faultsense_pipelines.localize.sequential.wiring import DEFAULT_ALPHA
from faultsense_pipelines.replica.executor import ProbeMeasurement
from faultsense_pipelines.sim.latency import LatencyModel, NoiseModel

PRODUCTION = {
    "sigma": 0.03,
    "tail_df": 4.0,
    "stall_rate": 0.02,
    "stall_max": 4.0,
    "drift": 0.15,
    "burst_rate": 0.01,
    "burst_height": 0.3,
    "burst_length": 15,
}
SHAPES = ((32, 4), (64, 8), (128, 8), (256, 8), (300, 4), (300, 8))
FAMILIES = ("healthy", "gpu", "link", "mixed2", "mixed4", "intermittent", "spillover")
METHODS = ("adaptive", "sequential")
#: reliability bins of stated confidence: (label, low, high)
BINS = (
    ("< 0.99", 0.0, 0.99),
    ("[0.99, 0.999)", 0.99, 0.999),
    ("[0.999, 0.9999)", 0.999, 0.9999),
    (">= 0.9999", 0.9999, math.inf),
)

Fault = tuple[tuple[int, ...], bool, float, float]


class LatencyModelExecutor:
    """Probe executor over :class:`LatencyModel` (a simulated replica with production-like noise)."""

    name = "simulated"

    def __init__(self, n: int, model: LatencyModel) -> None:
        self.gpus = n
        self.model = model

    def run(self, gpus: Sequence[int], repeats: int = 1) -> ProbeMeasurement:
        return ProbeMeasurement(tuple(sorted(gpus)), self.model.measure(tuple(gpus), repeats))

    def close(self) -> None:
        pass


def draw(family: str, n: int, rng: random.Random) -> tuple[list[Fault], float]:
    """Faults ``(gpus, is_gpu, slowdown, duty)`` of one sweep and its spillover."""
    faults: list[Fault] = []
    used: set[int] = set()

    def gpu(slow: float, duty: float = 1.0) -> None:
        g = rng.choice([x for x in range(n) if x not in used])
        used.add(g)
        faults.append(((g,), True, slow, duty))

    def link(slow: float) -> None:
        a, b = rng.sample([x for x in range(n) if x not in used], 2)
        used.update((a, b))
        faults.append((tuple(sorted((a, b))), False, slow, 1.0))

    if family == "gpu":
        gpu(rng.uniform(1.3, 2.0))
    elif family == "link":
        link(rng.uniform(1.3, 2.0))
    elif family in ("mixed2", "mixed4"):
        for i in range(2 if family == "mixed2" else 4):
            (gpu if i % 2 == 0 else link)(rng.uniform(1.3, 2.0))
    elif family == "intermittent":
        gpu(rng.uniform(1.5, 2.0), duty=rng.uniform(0.5, 0.9))
    elif family == "spillover":
        gpu(2.0)
    return faults, (0.3 if family == "spillover" else 0.0)


def name_of(fault: Fault) -> str:
    """The ledger component of one drawn fault: ``gpu:3`` or ``link:3-40``."""
    g, is_gpu, _, _ = fault
    return f"gpu:{g[0]}" if is_gpu else f"link:{g[0]}-{g[1]}"


def blamed(verdicts) -> dict[str, float | None]:
    """Confirmed components (links named low end first) and their stated confidence."""
    out = {}
    for v in verdicts:
        if v.status == "confirmed":
            name = f"gpu:{v.gpu}" if v.peer_gpu is None else f"link:{min(v.gpu, v.peer_gpu)}-{max(v.gpu, v.peer_gpu)}"
            out[name] = v.confidence
    return out


def fault_class(fault: Fault) -> str:
    """Recall bucket of one fault: slowdown 1.3-1.5x or 1.5-2.0x, or intermittent (duty < 1)."""
    _, _, slow, duty = fault
    if duty < 1.0:
        return "intermittent (1.5-2.0x, duty 0.5-0.9)"
    return "1.3-1.5x" if slow < 1.5 else "1.5-2.0x"


def _mm(xs: list[int]) -> str:
    """``median / max`` of a list of counts ('-' when empty)."""
    return f"{statistics.median(xs):g} / {max(xs)}" if xs else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10, help="sweeps per shape and family (default 10)")
    ap.add_argument("--repeats", type=int, default=3, help="measurements per probe (default 3)")
    ap.add_argument("--out", type=Path, default=None, help="default bench/results/accuracy_r<repeats>.md")
    ap.add_argument("--families", default=",".join(FAMILIES), help="comma-separated subset of " + ", ".join(FAMILIES))
    ap.add_argument("--methods", default=",".join(METHODS), help="comma-separated subset of " + ", ".join(METHODS))
    args = ap.parse_args()
    families = [f for f in args.families.split(",") if f]
    methods = [m for m in args.methods.split(",") if m]
    if not families or set(families) - set(FAMILIES):
        ap.error(f"--families must name some of {', '.join(FAMILIES)}, got {args.families!r}")
    if not methods or set(methods) - set(METHODS):
        ap.error(f"--methods must name some of {', '.join(METHODS)}, got {args.methods!r}")
    if args.seeds < 1 or args.repeats < 1:
        ap.error("--seeds and --repeats must be >= 1")
    out = args.out or Path(f"bench/results/accuracy_r{args.repeats}.md")
    stats: dict[tuple[str, str], Counter] = defaultdict(Counter)
    probes: dict[tuple[str, str, str], list[int]] = defaultdict(list)  # (family or shape, method, phase) -> counts
    recall_by: dict[tuple[str, str], Counter] = defaultdict(Counter)  # (class, method) -> n, found
    reliability: Counter = Counter()
    over_budget: list[str] = []
    spent_share: list[float] = []
    t0 = time.time()
    load_at_start = os.getloadavg()[0]
    commit = code_commit("bench/bench_accuracy.py")
    for n, k in SHAPES:
        cover = plan_cover(n, k)
        budget = default_budget(len(cover.probes), DEFAULT_ALPHA, args.repeats)
        shape = f"n={n} k={k}"
        for family in families:
            for seed in range(args.seeds):
                rng = random.Random(f"{n}-{k}-{family}-{seed}")
                faults, spill = draw(family, n, rng)
                truth = {name_of(f) for f in faults}
                noise = NoiseModel(**PRODUCTION, spillover=spill)
                ex = LatencyModelExecutor(n, LatencyModel(noise, faults, seed=seed))
                p1 = run_phase1(ex, cover, repeats=args.repeats)
                for method in methods:
                    loc = run_phase2(copy.deepcopy(ex), p1, method=method, repeats=args.repeats, seed=seed)
                    found = blamed(loc.verdicts)
                    s = stats[(family, method)]
                    s["sweeps"] += 1
                    s["degraded"] += loc.replica_degraded
                    s["truth"] += len(truth)
                    s["found"] += len(truth & set(found))
                    s["blamed"] += len(found)
                    s["wrong"] += len(set(found) - truth)
                    s["exact"] += set(found) == truth
                    s["inconclusive"] += sum(v.status == "inconclusive" for v in loc.verdicts)
                    p1_runs = loc.probes_phase1 + loc.phase1.remeasured
                    for key in (family, shape):
                        probes[(key, method, "p1")].append(p1_runs)
                        probes[(key, method, "p2")].append(loc.probes_phase2)
                    for f in faults:
                        c = recall_by[(fault_class(f), method)]
                        c["n"] += 1
                        c["found"] += name_of(f) in found
                    if method == "sequential":
                        spent_share.append(loc.probes_phase2 / budget)
                        if loc.probes_phase2 > budget:
                            over_budget.append(f"{shape} {family} seed {seed}: {loc.probes_phase2} > {budget}")
                        for name, conf in found.items():
                            if conf is None:
                                reliability[("none", "n")] += 1
                                reliability[("none", "right")] += name in truth
                                continue
                            for label, low, high in BINS:
                                if low <= conf < high:
                                    reliability[(label, "n")] += 1
                                    reliability[(label, "right")] += name in truth
            print(f"{shape} {family}: done ({time.time() - t0:.0f}s)", flush=True)
    text = report(args, families, methods, stats, probes, recall_by, reliability, over_budget, spent_share)
    text += (
        f"\nWall time: {time.time() - t0:.0f} s; finished {datetime.now(UTC):%Y-%m-%d %H:%M} UTC at commit {commit}, "
        f"load average {load_at_start:.1f} at the start and {os.getloadavg()[0]:.1f} at the end (a shared 2-core machine).\n"
    )
    print(text)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)


def report(
    args: argparse.Namespace,
    families: list[str],
    methods: list[str],
    stats: dict[tuple[str, str], Counter],
    probes: dict[tuple[str, str, str], list[int]],
    recall_by: dict[tuple[str, str], Counter],
    reliability: Counter,
    over_budget: list[str],
    spent_share: list[float],
) -> str:
    """The results file's markdown, less its closing wall-time line."""
    cmd = f"python -m bench.bench_accuracy --seeds {args.seeds} --repeats {args.repeats}"
    cmd += "" if families == list(FAMILIES) else f" --families {args.families}"
    cmd += "" if methods == list(METHODS) else f" --methods {args.methods}"
    lines = [
        f"# Localization under production-like latency: {' vs '.join(methods)}, {args.repeats} repeat(s)",
        "",
        f"Measured by `{cmd}` on a 2-core CPU machine; shapes {', '.join(f'n={n} k={k}' for n, k in SHAPES)};",
        f"{args.seeds} seeds per shape and family; one Phase 1 per sweep, both drill-downs from it;",
        "noise " + ", ".join(f"{k}={v}" for k, v in PRODUCTION.items()) + " (spillover family: spillover 0.3, a 2x GPU).",
        "Faults: slowdowns uniform in 1.3-2.0x (intermittent: 1.5-2.0x, duty 0.5-0.9); mixed = GPUs and links alternating.",
        f"`sequential`: alpha {DEFAULT_ALPHA}, min_slowdown 1.2, default Phase 2 budget (Phase 1's probe count, at least",
        "four minimal claims). Probes: records (one per probe, each `repeats` measurements); Phase 1 counts",
        "its re-measured probes too.",
        "",
        "| family | method | sweeps | exact | precision | recall | wrong /100 sweeps | degraded | inconclusive | "
        "Phase 1 median / max | Phase 2 median / max |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for family in families:
        for method in methods:
            s = stats[(family, method)]
            precision = f"{s['found'] / s['blamed']:.3f}" if s["blamed"] else "-"  # nothing blamed: no precision to state
            recall = f"{s['found'] / s['truth']:.3f}" if s["truth"] else "-"
            lines.append(
                f"| {family} | {method} | {s['sweeps']} | {s['exact']} | {precision} | {recall} | "
                f"{100 * s['wrong'] / s['sweeps']:.1f} | {s['degraded']} | {s['inconclusive']} | "
                f"{_mm(probes[(family, method, 'p1')])} | {_mm(probes[(family, method, 'p2')])} |"
            )
    tot = {m: Counter() for m in methods}
    for (_, m), s in stats.items():
        tot[m].update(s)
    lines += [
        "",
        "| all families | sweeps | exact | precision | recall (all >= 1.3x) | wrong /100 sweeps | worst family wrong /100 | degraded |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for m, s in tot.items():
        precision = f"{s['found'] / s['blamed']:.3f}" if s["blamed"] else "-"
        recall = f"{s['found'] / s['truth']:.3f}" if s["truth"] else "-"
        worst = max(100 * stats[(f, m)]["wrong"] / stats[(f, m)]["sweeps"] for f in families)
        lines.append(
            f"| {m} | {s['sweeps']} | {s['exact']} | {precision} | {recall} | {100 * s['wrong'] / s['sweeps']:.1f} | "
            f"{worst:.1f} | {s['degraded']} |"
        )
    classes = sorted({c for c, _ in recall_by})
    lines += ["", "Recall by fault:", "", "| fault | " + " | ".join(methods) + " |", "|---|" + "---|" * len(methods)]
    for c in classes:
        cells = [f"{recall_by[(c, m)]['found']}/{recall_by[(c, m)]['n']}" for m in methods]
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    lines += ["", "Probes by shape (median / max over the families above):", ""]
    lines += ["| shape | " + " | ".join(f"{m} Phase 1 | {m} Phase 2" for m in methods) + " |"]
    lines += ["|---|" + "---|---|" * len(methods)]
    for n, k in SHAPES:
        key = f"n={n} k={k}"
        lines.append(
            f"| {key} | " + " | ".join(f"{_mm(probes[(key, m, 'p1')])} | {_mm(probes[(key, m, 'p2')])}" for m in methods) + " |"
        )
    if "sequential" in methods:
        budgets = ", ".join(
            f"n={n} k={k}: {default_budget(len(plan_cover(n, k).probes), DEFAULT_ALPHA, args.repeats)}" for n, k in SHAPES
        )
        lines += [
            "",
            f"Sequential Phase 2 budget ({budgets}): {len(spent_share) - len(over_budget)} of {len(spent_share)} sweeps "
            f"within it; the most spent {max(spent_share):.2f} of the budget"
            + ("." if not over_budget else "; over: " + "; ".join(over_budget[:10])),
            "",
            "Reliability of the sequential drill-down's stated confidence (confirmed verdicts):",
            "",
            "| stated confidence | verdicts | right | share right |",
            "|---|---|---|---|",
        ]
        rows = [label for label, _, _ in BINS] + (["none"] if reliability[("none", "n")] else [])
        for b in rows:
            n_b, r_b = reliability[(b, "n")], reliability[(b, "right")]
            lines.append(f"| {b} | {n_b} | {r_b} | {r_b / n_b:.4f} |" if n_b else f"| {b} | 0 | 0 | - |")
        n_top = sum(reliability[(b, "n")] for b in ("[0.999, 0.9999)", ">= 0.9999"))
        r_top = sum(reliability[(b, "right")] for b in ("[0.999, 0.9999)", ">= 0.9999"))
        lines.append(f"| >= 0.999 (all) | {n_top} | {r_top} | " + (f"{r_top / n_top:.4f} |" if n_top else "- |"))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
