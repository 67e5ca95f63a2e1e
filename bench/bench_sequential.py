"""Validity and cost of ``--drilldown sequential`` beside ``evidence``, over noise families.

For each noise family, case and seed: one simulated sweep through :func:`localize` with each
drill-down, one measurement per probe (``--repeats`` to change). Counts healthy components
confirmed (the guarantee: at most ``alpha`` per sweep in expectation), exact sweeps, and
Phase 1 / Phase 2 probes. Prints a table and writes ``bench/results/sequential.md``.

    python -m bench.bench_sequential [--seeds 6] [--repeats 1]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import localize
from faultsense_pipelines.sim.scenario import parse_scenario

HEAVY = {
    "sigma": 0.05,
    "tail_df": 3,
    "stall_rate": 0.04,
    "stall_max": 6,
    "burst_rate": 0.01,
    "burst_length": 25,
    "burst_height": 0.5,
    "drift": 0.25,
}
FAMILIES = {
    "gauss 0.02": {"sigma": 0.02},
    "heavy (t3, stalls, bursts, drift)": HEAVY,
    "spillover 0.4": {"sigma": 0.03, "spillover": 0.4},
}
CASES = {
    "healthy n=64 k=8": (64, 8, []),
    "gpu 1.5x n=64 k=8": (64, 8, [{"gpu": 17, "slowdown": 1.5}]),
    "link 1.5x n=64 k=8": (64, 8, [{"link": [3, 40], "slowdown": 1.5}]),
    "gpu 1.8x + link 1.56x n=32 k=4": (32, 4, [{"gpu": 9, "slowdown": 1.8}, {"link": [3, 21], "slowdown": 1.56}]),
}


def _truth(faults: list[dict[str, object]]) -> set[str]:
    out = set()
    for f in faults:
        if "gpu" in f:
            out.add(f"gpu:{f['gpu']}")
        else:
            a, b = sorted(f["link"])  # type: ignore[call-overload]
            out.add(f"link:{a}-{b}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("bench/results/sequential.md"))
    args = ap.parse_args()
    rows = []
    for fam, noise in FAMILIES.items():
        for case, (n, k, faults) in CASES.items():
            cover = plan_cover(n, k)
            truth = _truth(faults)
            for method in ("sequential", "evidence"):
                wrong = exact = 0
                p2: list[int] = []
                for seed in range(args.seeds):
                    sc = parse_scenario({"gpus": n, "probe_size": k, "faults": faults, "noise": noise, "seed": seed})
                    res = localize(sc.replica(), cover, repeats=args.repeats, method=method, seed=seed)
                    confirmed = {v.component for v in res.verdicts if v.status == "confirmed"}
                    wrong += len(confirmed - truth)
                    exact += confirmed == truth
                    p2.append(res.probes_phase2)
                p2.sort()
                rows.append((fam, case, method, exact, wrong, len(cover.probes), p2[len(p2) // 2], p2[-1]))
                print(" | ".join(map(str, rows[-1])), flush=True)
    head = "| noise | case | drill-down | exact | healthy blamed | Phase 1 | Phase 2 median | Phase 2 max |\n|---|---|---|---|---|---|---|---|\n"
    body = "".join("| " + " | ".join(map(str, r)) + " |\n" for r in rows)
    args.out.write_text(
        f"# Sequential vs evidence drill-down\n\n`python -m bench.bench_sequential --seeds {args.seeds} --repeats {args.repeats}`"
        f" ({args.seeds} seeds a cell, one sweep each; CPU, no GPU)\n\n{head}{body}"
    )


if __name__ == "__main__":
    main()
