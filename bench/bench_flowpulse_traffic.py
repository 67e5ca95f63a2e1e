"""FlowPulse under traffic other than ring (issue 31): false alarms and detection delays.

Fabric: 16 leaves x 8 spines x 8 hosts, per-packet spraying, counters from the independent
generator of tests/flowpulse/traffic.py (random multi-ring all-reduce, all-to-all, hot spot),
with 0, 1 or 2 down links that the topology does not mark. Healthy: ``--healthy`` iterations per
pattern and down-link count, every switch reporting and the leaves alone. Detection: a loss on a
link (not a down one) from iteration 20, ``--trials`` seeded trials per cell.

    .venv/bin/python -m bench.bench_flowpulse_traffic                 # 10,000 healthy iterations a row
    .venv/bin/python -m bench.bench_flowpulse_traffic --healthy 1000 --trials 3

Writes bench/results/flowpulse_traffic.{csv,md}.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

from faultsense_pipelines.flowpulse.counters import LinkPairs, SpineBalance, SwitchIngress
from faultsense_pipelines.flowpulse.scan import ScanConfig, judge_fabric
from faultsense_pipelines.flowpulse.topology import fat_tree
from tests.flowpulse import traffic as tg

RESULTS = Path(__file__).resolve().parent / "results"
PATTERNS = ("multiring", "alltoall", "hotspot")
DOWNS = ((), ((2, 1),), ((2, 1), (11, 5)))
TOPO = fat_tree(tg.LEAVES, tg.SPINES, tg.HOSTS)
BLOCK = 500


def _generate(iterations: int, phase: tg.Phase, losses: tuple[tg.Loss, ...] = (), seed: int = 0) -> tg.Counters:
    """The generator in blocks of BLOCK iterations (memory), one seed per block."""
    parts = [
        tg.generate(
            min(BLOCK, iterations - lo),
            (phase,),
            tuple(tg.Loss(f.leaf, f.spine, f.rate, f.direction, max(0, f.start - lo)) for f in losses if f.start < lo + BLOCK),
            seed=seed * 1000 + lo // BLOCK,
        )
        for lo in range(0, iterations, BLOCK)
    ]
    return tg.Counters(*(np.concatenate([getattr(p, k) for p in parts]) for k in ("up_tx", "up_rx", "down_tx", "down_rx")))


def _inputs(c: tg.Counters, leaves_only: bool) -> tuple[list[SwitchIngress], LinkPairs | None, SpineBalance | None]:
    """Ingress, pairs and spine balance straight from the arrays (what counters.* cut from the frame)."""
    t, n_leaves, n_spines = c.up_tx.shape
    its = np.arange(t, dtype=np.int64)
    leaves, spines = TOPO.leaves, TOPO.spines
    up_ports = tuple(f"up{j:02d}" for j in range(n_spines))
    down_ports = tuple(f"down{i:02d}" for i in range(n_leaves))
    ingress = [
        SwitchIngress(leaves[i], its, up_ports, spines, np.ones(n_spines, bool), c.down_rx[:, i, :]) for i in range(n_leaves)
    ]
    if leaves_only:
        links = np.full(n_spines, n_leaves)
        return ingress, None, SpineBalance(its, spines, links, c.up_tx.sum(axis=1), c.down_rx.sum(axis=1))
    ingress += [
        SwitchIngress(spines[j], its, down_ports, leaves, np.ones(n_leaves, bool), c.up_rx[:, :, j]) for j in range(n_spines)
    ]
    senders, sports, receivers, rports, sent, received = [], [], [], [], [], []
    for i in range(n_leaves):
        for j in range(n_spines):
            senders += [leaves[i], spines[j]]
            sports += [up_ports[j], down_ports[i]]
            receivers += [spines[j], leaves[i]]
            rports += [down_ports[i], up_ports[j]]
            sent += [c.up_tx[:, i, j], c.down_tx[:, i, j]]
            received += [c.up_rx[:, i, j], c.down_rx[:, i, j]]
    pairs = LinkPairs(
        its, tuple(senders), tuple(sports), tuple(receivers), tuple(rports), np.column_stack(sent), np.column_stack(received)
    )
    return ingress, pairs, None


def healthy(iterations: int) -> pd.DataFrame:
    rows = []
    for pattern in PATTERNS:
        for d, down in enumerate(DOWNS):
            t0 = time.perf_counter()
            c = _generate(iterations, tg.Phase(0, pattern, 7, down=down), seed=100 + d)
            gen_s = time.perf_counter() - t0
            for leaves_only in (False, True):
                t0 = time.perf_counter()
                report = judge_fabric(*_split(c, leaves_only))
                rows.append(
                    {
                        "pattern": pattern,
                        "unmarked_down": len(down),
                        "counters": "leaves only" if leaves_only else "all switches",
                        "iterations": iterations,
                        "mean_packets_per_link": float(
                            c.up_tx.sum(axis=(0, 1, 2)) / (iterations * tg.LEAVES * tg.SPINES - iterations * len(down))
                        ),
                        "false_alarms": len(report.faults),
                        "down_links_named": sum(e.kind == "unmarked down link" for e in report.explained),
                        "traffic_shifts": sum(e.kind == "traffic shift" for e in report.explained),
                        "generate_s": gen_s,
                        "scan_s": time.perf_counter() - t0,
                    }
                )
                print(rows[-1], flush=True)
            del c
    return pd.DataFrame(rows)


def _split(c: tg.Counters, leaves_only: bool) -> tuple:
    ingress, pairs, balance = _inputs(c, leaves_only)
    return ingress, TOPO, ScanConfig(), pairs, balance


CELLS = (  # rate, direction, counters, target delay (issue 31's Done-when; 0.5%: within 20)
    (0.01, "down", "all switches", 3),
    (0.01, "up", "all switches", 3),
    (0.005, "down", "all switches", 20),
    (0.005, "up", "all switches", 20),
    (0.0025, "down", "all switches", None),
    (0.01, "down", "leaves only", 3),
    (0.005, "down", "leaves only", None),
    (0.01, "up", "leaves only", None),
)


def detection(trials: int) -> pd.DataFrame:
    rows = []
    rng = np.random.default_rng(31)
    for pattern in PATTERNS:
        for rate, direction, who, target in CELLS:
            for trial in range(trials):
                down = DOWNS[trial % 3]
                leaf, spine = int(rng.integers(tg.LEAVES)), int(rng.integers(tg.SPINES))
                while (leaf, spine) in down:
                    leaf, spine = int(rng.integers(tg.LEAVES)), int(rng.integers(tg.SPINES))
                seed = int(rng.integers(2**31))
                c = tg.generate(
                    60, (tg.Phase(0, pattern, seed % 97, down=down),), (tg.Loss(leaf, spine, rate, direction, 20),), seed=seed
                )
                report = judge_fabric(*_split(c, who == "leaves only"))
                truth = {f"leaf{leaf:02d}", f"spine{spine:02d}"}
                hits = [f for f in report.faults if {f.switch, f.peer} == truth or (f.switch in truth and f.peer == "*")]
                first = min(hits, key=lambda f: f.detected_iteration) if hits else None
                rows.append(
                    {
                        "pattern": pattern,
                        "rate": rate,
                        "direction": direction,
                        "counters": who,
                        "target": target,
                        "trial": trial,
                        "unmarked_down": len(down),
                        "detected": first is not None,
                        "named_link": first is not None and first.peer != "*",
                        "delay": first.detected_iteration - 20 + 1 if first else np.nan,
                        "onset_error": first.first_iteration - 20 if first else np.nan,
                        "loss_estimate": first.loss_estimate if first and first.peer != "*" else np.nan,
                        "wrong_links": len(report.faults) - len(hits),
                    }
                )
    return pd.DataFrame(rows)


def _healthy_line(hl: pd.DataFrame) -> str:
    """One sentence on the healthy table against the target (0 false alarms in every row), from its rows."""
    bad = hl[hl["false_alarms"] > 0]
    cells = ", ".join(f"{r.pattern}/{int(r.unmarked_down)} down/{r.counters}: {int(r.false_alarms)}" for r in bad.itertuples())
    return (
        f"Target 0 false alarms in {int(hl['iterations'].min()):,} healthy iterations for each pattern "
        f"({', '.join(sorted(set(hl['pattern'])))}) with {', '.join(str(int(d)) for d in sorted(set(hl['unmarked_down'])))} "
        f"unmarked down links, every switch reporting and leaves only: "
        + (f"met in all {len(hl)} rows." if bad.empty else f"MISSED in {len(bad)} of {len(hl)} rows ({cells}).")
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--healthy", type=int, default=10_000)
    parser.add_argument("--trials", type=int, default=6)
    args = parser.parse_args()
    t0, cpu0 = time.perf_counter(), time.process_time()
    det = detection(args.trials)
    summary = (
        det.groupby(["pattern", "counters", "direction", "rate"], sort=False)
        .agg(
            trials=("trial", "size"),
            target=("target", "first"),
            detected=("detected", "mean"),
            named_link=("named_link", "mean"),
            median_delay=("delay", "median"),
            max_delay=("delay", "max"),
            onset_exact=("onset_error", lambda e: float((e == 0).mean())),
            mean_loss_estimate=("loss_estimate", "mean"),
            wrong_links=("wrong_links", "sum"),
        )
        .reset_index()
    )
    print(summary.to_string(index=False), flush=True)
    hl = healthy(args.healthy)
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    RESULTS.mkdir(parents=True, exist_ok=True)
    pd.concat([summary.assign(table="detection"), hl.assign(table="healthy")]).to_csv(
        RESULTS / "flowpulse_traffic.csv", index=False
    )
    md = [
        "# FlowPulse under random traffic (issue 31)",
        "",
        f"`.venv/bin/python -m bench.bench_flowpulse_traffic --healthy {args.healthy} --trials {args.trials}` "
        f"({wall:.0f} s wall, {cpu:.0f} s CPU, shared 2-core machine). Fabric 16 leaves x 8 spines x 8 hosts, "
        "per-packet spraying; counters from tests/flowpulse/traffic.py (independent of the project's simulator): "
        "`multiring` (8 rings over random host permutations, 16,384 packets a flow), `alltoall`, `hotspot` "
        "(multiring plus every leaf sending 4 flows to leaf 0). Down links (leaf, spine) "
        f"{DOWNS[1:]} are not marked in the topology. Default scan: links with two reporting ends judged by tx vs "
        "rx; with the leaves alone, each spine by the leaves' tx into vs rx out of it, the link named from the leaves' "
        "ports (a leaf-to-spine loss under multi-ring traffic is named at the spine, port `*`: `named_link` 0).",
        "",
        "## Detection (loss from iteration 20; trials cycle through 0, 1, 2 unmarked down links)",
        "",
        "Delay = lossy iterations seen up to and including the alarm (1 = the first lossy iteration); "
        "`onset_exact`: reported first iteration == 20.",
        "",
        summary.to_markdown(index=False, floatfmt=".4g"),
        "",
        "## False alarms on healthy iterations",
        "",
        _healthy_line(hl),
        "",
        hl.to_markdown(index=False, floatfmt=".4g"),
        "",
    ]
    (RESULTS / "flowpulse_traffic.md").write_text("\n".join(md))
    print(f"wrote {RESULTS / 'flowpulse_traffic.md'} ({wall:.0f} s)")


if __name__ == "__main__":
    main()
