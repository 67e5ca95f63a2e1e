"""Validity and cost of ``--drilldown sequential`` (beside ``adaptive`` on request), over noise families.

For each noise family, case and seed: one simulated sweep through :func:`localize` with each
drill-down, one measurement per probe (``--repeats`` to change). Counts healthy components
confirmed (the guarantee: at most ``alpha`` per sweep in expectation), exact sweeps, and
Phase 1 / Phase 2 probes. Prints a table and writes ``bench/results/sequential.md``.

    python -m bench.bench_sequential [--seeds 6] [--repeats 1] [--methods sequential,adaptive]
    python -m bench.bench_sequential --cases shared --out bench/results/sequential_shared.md

``--cases shared``: 64 GPUs on 8 nodes of 8, two nodes a leaf switch, the topology given to
both drill-downs: a healthy replica, and a slow NIC, NVSwitch or leaf switch (with a slow GPU
beside the NIC), in every noise family.
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
    # healthy probes 3% slower per node spanned beyond the first (8 GPUs a node at n = 64,
    # 4 at n = 32 and 8); the replica's topology is given to the drill-down
    "node gap 0.03": {"sigma": 0.02, "node_gap": 0.03},
}
#: name -> (n, k, faults, extra scenario keys)
CASES: dict[str, tuple[int, int, list[dict[str, object]], dict[str, object]]] = {
    "healthy n=64 k=8": (64, 8, [], {}),
    "gpu 1.5x n=64 k=8": (64, 8, [{"gpu": 17, "slowdown": 1.5}], {}),
    "link 1.5x n=64 k=8": (64, 8, [{"link": [3, 40], "slowdown": 1.5}], {}),
    "gpu 1.8x + link 1.56x n=32 k=4": (32, 4, [{"gpu": 9, "slowdown": 1.8}, {"link": [3, 21], "slowdown": 1.56}], {}),
    "two links at GPU 0, 1.5x, n=8 k=4": (8, 4, [{"link": [0, 3], "slowdown": 1.5}, {"link": [0, 6], "slowdown": 1.5}], {}),
}
#: 64 GPUs, 8 a node, 2 nodes a leaf switch: name -> (n, k, faults, extra scenario keys)
TOPOLOGY = {"gpus_per_node": 8, "nodes_per_switch": 2}
SHARED_CASES: dict[str, tuple[int, int, list[dict[str, object]], dict[str, object]]] = {
    "healthy n=64 k=8, 8 nodes, 4 switches": (64, 8, [], {"topology": TOPOLOGY}),
    "nic 1.5x": (64, 8, [{"nic": 3, "slowdown": 1.5}], {"topology": TOPOLOGY}),
    "nic 1.5x + gpu 1.6x": (64, 8, [{"nic": 3, "slowdown": 1.5}, {"gpu": 60, "slowdown": 1.6}], {"topology": TOPOLOGY}),
    "nvswitch 1.5x": (64, 8, [{"nvswitch": 5, "slowdown": 1.5}], {"topology": TOPOLOGY}),
    "switch 1.5x": (64, 8, [{"switch": 1, "slowdown": 1.5}], {"topology": TOPOLOGY}),
}
#: Cases with their own noise, run once whatever the families: name -> (n, k, faults, noise, extra keys)
SPECIAL = {
    "link 1.1x n=64 k=8, sigma 0.01, min_slowdown 1.05": (
        64,
        8,
        [{"link": [3, 40], "slowdown": 1.1}],
        {"sigma": 0.01},
        {"min_slowdown": 1.05},
    ),
    "link 1.1x n=64 k=8, sigma 0.01, default min_slowdown": (64, 8, [{"link": [3, 40], "slowdown": 1.1}], {"sigma": 0.01}, {}),
}


def _truth(faults: list[dict[str, object]]) -> set[str]:
    out = set()
    for f in faults:
        if "gpu" in f:
            out.add(f"gpu:{f['gpu']}")
        elif "nic" in f or "nvswitch" in f:
            kind = "nic" if "nic" in f else "nvswitch"
            out.add(f"{kind}:node{f[kind]}")
        elif "switch" in f:
            out.add(f"switch:{f['switch']}")
        else:
            a, b = sorted(f["link"])  # type: ignore[call-overload]
            out.add(f"link:{a}-{b}")
    return out


def _cell(
    n: int,
    k: int,
    faults: list[dict[str, object]],
    noise: dict[str, object],
    extra: dict[str, object],
    method: str,
    args: argparse.Namespace,
) -> tuple[int, int, int, int, int, int]:
    """(exact, healthy blamed, inconclusive verdicts, Phase 1, Phase 2 median, Phase 2 max) over the seeds."""
    cover = plan_cover(n, k)
    truth = _truth(faults)
    wrong = exact = unsettled = 0
    p2: list[int] = []
    for seed in range(args.seeds):
        obj = {"gpus": n, "probe_size": k, "faults": faults, "noise": noise, "seed": seed, **extra}
        if "node_gap" in noise and "topology" not in obj:
            obj["topology"] = {"gpus_per_node": 8 if n >= 64 else 4}
        sc = parse_scenario(obj)
        res = localize(
            sc.replica(),
            cover,
            repeats=args.repeats,
            method=method,
            seed=seed,
            topology=sc.topology,
            min_slowdown=sc.min_slowdown,
            alpha=sc.alpha,
        )
        confirmed = {v.component for v in res.verdicts if v.status == "confirmed"}
        wrong += len(confirmed - truth)
        exact += confirmed == truth
        unsettled += sum(v.status == "inconclusive" for v in res.verdicts)
        p2.append(res.probes_phase2)
    p2.sort()
    return exact, wrong, unsettled, len(cover.probes), p2[len(p2) // 2], p2[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=6)
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--methods", default="sequential", help="comma-separated drill-downs")
    ap.add_argument("--cases", choices=("gpus-links", "shared"), default="gpus-links")
    ap.add_argument("--out", type=Path, default=Path("bench/results/sequential.md"))
    args = ap.parse_args()
    methods = args.methods.split(",")
    rows = []
    cases = SHARED_CASES if args.cases == "shared" else CASES
    cells = [
        (fam, case, n, k, faults, noise, extra)
        for fam, noise in FAMILIES.items()
        for case, (n, k, faults, extra) in cases.items()
    ]
    if args.cases != "shared":
        cells += [("own", case, n, k, faults, noise, extra) for case, (n, k, faults, noise, extra) in SPECIAL.items()]
    for fam, case, n, k, faults, noise, extra in cells:
        for method in methods:
            rows.append((fam, case, method, *_cell(n, k, faults, noise, extra, method, args)))
            print(" | ".join(map(str, rows[-1])), flush=True)
    head = (
        "| noise | case | drill-down | exact | healthy blamed | inconclusive | Phase 1 | Phase 2 median | Phase 2 max |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
    )
    body = "".join("| " + " | ".join(map(str, r)) + " |\n" for r in rows)
    args.out.write_text(
        f"# The sequential drill-down over noise families\n\n`python -m bench.bench_sequential --seeds {args.seeds} --repeats {args.repeats}"
        f" --methods {args.methods} --cases {args.cases}` ({args.seeds} seeds a cell, one sweep each; CPU, no GPU)\n\n{head}{body}"
    )


if __name__ == "__main__":
    main()
