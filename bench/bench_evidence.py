"""Localization accuracy under the production-like latency model: adaptive versus evidence.

Every sweep draws its faults and noise from a seed, runs Phase 1 on the best cover, then
Phase 2 twice from the same Phase 1 state: today's binary ``adaptive`` drill-down and the
evidence-weighted one. Noise (``faultsense_pipelines.sim.latency``): sigma 0.03, Student-t
tails (4 degrees of freedom), 2% of measurements stalled 1.5-4x, a shared drift of +-15%,
load bursts (1% per measurement, +30%, 15 measurements long); the spillover family adds
``spillover`` 0.3 (every rank joins every forward).

Per method it reports precision (blamed components that are faulty), recall (faulty
components found), wrong blames per 100 sweeps, sweeps called degraded, probes per sweep, and
for the evidence drill-down a reliability table of its stated confidence.

Usage: ``python bench/bench_evidence.py [--seeds 10] [--out bench/results/evidence.md]
[--families healthy,...] [--methods evidence]`` (``--families healthy --seeds 250 --methods
evidence`` is the 1,000-healthy-sweep run).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import subprocess
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import localize, run_phase1
from faultsense_pipelines.localize.evidence.wiring import run_evidence_phase2
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


def draw(family: str, n: int, rng: random.Random) -> tuple[list[tuple[tuple[int, ...], bool, float, float]], float]:
    """Faults ``(gpus, is_gpu, slowdown, duty)`` of one sweep and its spillover."""
    faults: list[tuple[tuple[int, ...], bool, float, float]] = []
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


def truth_of(faults: Sequence[tuple[tuple[int, ...], bool, float, float]]) -> set[str]:
    return {f"gpu:{g[0]}" if is_gpu else f"link:{g[0]}-{g[1]}" for g, is_gpu, _, _ in faults}


def blamed(verdicts) -> dict[str, float | None]:
    out = {}
    for v in verdicts:
        if v.status == "confirmed":
            name = f"gpu:{v.gpu}" if v.peer_gpu is None else f"link:{v.gpu}-{v.peer_gpu}"
            out[name] = v.confidence
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("bench/results/evidence.md"))
    ap.add_argument("--families", default=",".join(FAMILIES), help="comma-separated subset of " + ", ".join(FAMILIES))
    ap.add_argument("--methods", default="adaptive,evidence", help="comma-separated subset of adaptive, evidence")
    args = ap.parse_args()
    families = [f for f in args.families.split(",") if f]
    methods = [m for m in args.methods.split(",") if m]
    if not families or set(families) - set(FAMILIES) or not methods or set(methods) - {"adaptive", "evidence"}:
        ap.error("--families and --methods must name some of the listed words")
    stats: dict[tuple[str, str], Counter] = defaultdict(Counter)
    reliability: Counter = Counter()
    t0 = time.time()
    load_at_start = os.getloadavg()[0]
    # the code this process imported: the commit at its start (a commit landing mid-run is not in it)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "faultsense_pipelines"], capture_output=True, text=True, check=False
    ).stdout
    commit += "+uncommitted" if dirty.strip() else ""
    for n, k in SHAPES:
        cover = plan_cover(n, k)
        for family in families:
            for seed in range(args.seeds):
                rng = random.Random(f"{n}-{k}-{family}-{seed}")
                faults, spill = draw(family, n, rng)
                truth = truth_of(faults)
                noise = NoiseModel(**PRODUCTION, spillover=spill)
                for method in methods:
                    ex = LatencyModelExecutor(n, LatencyModel(noise, faults, seed=seed))
                    if method == "adaptive":
                        loc = localize(ex, cover, repeats=args.repeats, method="adaptive")
                        degraded, verdicts = loc.replica_degraded, loc.verdicts
                        probes = loc.probes_phase1 + loc.probes_phase2
                    else:
                        p1 = run_phase1(ex, cover, repeats=args.repeats)
                        recs, verdicts = run_evidence_phase2(ex, p1, repeats=args.repeats, seed=seed)
                        degraded, probes = False, len(p1.records) + len(recs)
                    found = blamed(verdicts)
                    s = stats[(family, method)]
                    s["sweeps"] += 1
                    s["degraded"] += degraded
                    s["truth"] += len(truth)
                    s["found"] += len(truth & set(found))
                    s["blamed"] += len(found)
                    s["wrong"] += len(set(found) - truth)
                    s["exact"] += set(found) == truth
                    s["probes"] += probes
                    s["inconclusive"] += sum(v.status == "inconclusive" for v in verdicts)
                    if method == "evidence":
                        for name, conf in found.items():
                            if conf is not None:
                                b = "0.999+" if conf >= 0.999 else "0.99-0.999" if conf >= 0.99 else "<0.99"
                                reliability[(b, "n")] += 1
                                reliability[(b, "right")] += name in truth
            print(f"n={n} k={k} {family}: done ({time.time() - t0:.0f}s)", flush=True)
    lines = [
        "# Localization under production-like latency: adaptive vs evidence",
        "",
        f"Measured by `python bench/bench_evidence.py --seeds {args.seeds} --repeats {args.repeats}"
        + ("" if families == list(FAMILIES) else f" --families {args.families}")
        + ("" if len(methods) == 2 else f" --methods {args.methods}")
        + "` on a 2-core CPU",
        f"machine; shapes {', '.join(f'n={n} k={k}' for n, k in SHAPES)}; {args.seeds} seeds per shape and family;",
        "noise " + ", ".join(f"{k}={v}" for k, v in PRODUCTION.items()) + " (spillover family: spillover 0.3, a 2x GPU).",
        "Faults: slowdowns uniform in 1.3-2.0x (intermittent: 1.5-2.0x, duty 0.5-0.9); mixed = GPUs and links alternating.",
        "",
        "| family | method | sweeps | exact | precision | recall | wrong /100 sweeps | degraded | inconclusive | probes/sweep |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for family in families:
        for method in methods:
            s = stats[(family, method)]
            precision = s["found"] / s["blamed"] if s["blamed"] else 1.0
            recall = s["found"] / s["truth"] if s["truth"] else math.nan
            lines.append(
                f"| {family} | {method} | {s['sweeps']} | {s['exact']} | {precision:.3f} | "
                + ("-" if math.isnan(recall) else f"{recall:.3f}")
                + f" | {100 * s['wrong'] / s['sweeps']:.1f} | {s['degraded']} | {s['inconclusive']} | {s['probes'] / s['sweeps']:.0f} |"
            )
    tot = {m: Counter() for m in methods}
    for (_, m), s in stats.items():
        tot[m].update(s)
    lines += [
        "",
        "| all families | sweeps | precision | recall | wrong /100 sweeps | probes/sweep |",
        "|---|---|---|---|---|---|",
    ]
    for m, s in tot.items():
        precision = f"{s['found'] / s['blamed']:.3f}" if s["blamed"] else "-"  # nothing blamed: no precision to state
        recall = f"{s['found'] / s['truth']:.3f}" if s["truth"] else "-"
        lines.append(
            f"| {m} | {s['sweeps']} | {precision} | {recall} | {100 * s['wrong'] / s['sweeps']:.1f} | {s['probes'] / s['sweeps']:.0f} |"
        )
    lines += ["", "Reliability of the evidence drill-down's stated confidence (confirmed verdicts):", ""]
    lines += ["| stated confidence | verdicts | right | share right |", "|---|---|---|---|"]
    for b in ("0.999+", "0.99-0.999", "<0.99"):
        n_b, r_b = reliability[(b, "n")], reliability[(b, "right")]
        lines.append(f"| {b} | {n_b} | {r_b} | {r_b / n_b:.3f} |" if n_b else f"| {b} | 0 | 0 | - |")
    lines.append("")
    lines.append(
        f"Wall time: {time.time() - t0:.0f} s; finished {datetime.now(UTC):%Y-%m-%d %H:%M} UTC at commit {commit or '?'}, "
        f"load average {load_at_start:.1f} at the start and {os.getloadavg()[0]:.1f} at the end (a shared machine)."
    )
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
