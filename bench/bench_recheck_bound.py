"""Lower bound on Phase 2 probes per slow GPU for exact localization, next to what we spend.

A slow GPU g fails every Phase 1 probe it is in. A link {a, b} (a, b != g) is *hidden behind
g* when every Phase 1 probe containing both a and b also contains g: Phase 1 says nothing
about it. To report the sweep exactly (no missed slow link), each hidden link must end up
in a passing Phase 2 probe, and a passing probe cannot contain g. So Phase 2 needs at least

    ceil(|H_g| / m)

probes for g alone, where H_g is the graph of links hidden behind g and m is the largest
number of H_g's edges that k GPUs can span (densest k-subgraph), bounded from above by a
knapsack over H_g's connected components (:func:`densest_k_edges`). That bound is weak
when H_g mixes (k-1)-cliques with sparser parts (m counts a k-clique that does not exist);
:func:`recheck_bound` weights each component's edges (a small LP) and is the bound
reported. In a cover where two probes through g share only g (designs with lambda = 1)
H_g is r_g disjoint cliques of k-1 GPUs and the bound is r_g ~ (n-1)/(k-1): a probe
avoiding g judges one clique at most (its k-th GPU spans no hidden link).
For d slow GPUs the hidden sets add up (they overlap only in links covered solely by
probes holding two slow GPUs), so ``d x bound`` is the cost of exactness the issue's
25x target must absorb.

The measured column runs the pipeline with the best cover and the adaptive drill-down (with
re-check) on :class:`SimulatedReplica` with one slow GPU (slowdown 2.0) for a few GPUs
per size, and without re-check (``recheck_explained=False``, the paper's accounting, which
misses a slow link hidden behind a slow GPU).

    .venv/bin/python -m bench.bench_recheck_bound      # ~1 min; writes bench/results/recheck_bound.{csv,md}
"""

from __future__ import annotations

import argparse
import math
import time
from collections import defaultdict
from itertools import combinations
from pathlib import Path

import networkx as nx
import pandas as pd
from scipy.optimize import linprog

from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import localize
from faultsense_pipelines.replica.faults import GpuFault
from faultsense_pipelines.sim.simulator import SimulatedReplica

RESULTS = Path(__file__).resolve().parent / "results"


def hidden_links(probes: list[tuple[int, ...]], g: int) -> nx.Graph:
    """H_g: links {a, b} (a, b != g) every covering probe of which contains ``g``."""
    seen_without_g: set[tuple[int, int]] = set()
    seen_with_g: set[tuple[int, int]] = set()
    for p in probes:
        target = seen_with_g if g in p else seen_without_g
        target.update(combinations(sorted(x for x in p if x != g), 2))
    graph = nx.Graph()
    graph.add_edges_from(seen_with_g - seen_without_g)
    return graph


def spanned_edges(graph: nx.Graph, t: int) -> int:
    """Upper bound on the edges of connected ``graph`` that ``t`` of its vertices span.

    Exact (C(t, 2), capped by its edges) for a clique; otherwise the least of its edges,
    C(t, 2) and half the sum of the t largest min(degree, t - 1).
    """
    e, size = graph.number_of_edges(), graph.number_of_nodes()
    if t <= 1:
        return 0
    if e == size * (size - 1) // 2:
        return min(e, t * (t - 1) // 2)
    degrees = sorted((min(d, t - 1) for _, d in graph.degree), reverse=True)[:t]
    return min(e, t * (t - 1) // 2, sum(degrees) // 2)


def densest_k_edges(graph: nx.Graph, k: int) -> int:
    """Upper bound on the edges of ``graph`` that k vertices can span.

    k vertices split over the connected components; t of them in a component span at most
    :func:`spanned_edges` of its edges, and none across components. A knapsack over the
    components (capacity k) maximises that sum: O(components x k^2).
    """
    best = [0] * (k + 1)  # best[c]: most edges with c vertices over the components seen so far
    for comp in nx.connected_components(graph):
        sub = graph.subgraph(comp)
        f = [spanned_edges(sub, t) for t in range(min(k, len(comp)) + 1)]
        best = [max(best[c - t] + f[t] for t in range(min(c, len(comp)) + 1)) for c in range(k + 1)]
    return best[k]


def recheck_bound(graph: nx.Graph, k: int) -> int:
    """Fewest probes of k GPUs that can span every edge of ``graph``: an LP lower bound.

    ceil(|E| / densest_k_edges) is weak when components differ: a probe holding a whole
    (k-1)-clique has one GPU left, which spans nothing in another component, so r_g
    disjoint (k-1)-cliques need r_g probes, not r_g (k-2) / k. Weighting each component's
    edges fixes it: for weights w >= 0 with sum_C w_C f_C(t_C) <= 1 for every way to put
    t_C <= |C| of k GPUs in each component C (f_C = :func:`spanned_edges`), every probe
    covers at most weight 1, so probes >= sum_C w_C |E_C|. The best w is a small LP over
    the component types (components with equal f share a weight); its optimum is the
    bound. At w = 1 / densest_k_edges it is ceil(|E| / m).
    """
    if graph.number_of_edges() == 0:
        return 0
    types: dict[tuple[int, ...], list[int]] = {}  # f over t = 0..k -> [components, edges]
    for comp in nx.connected_components(graph):
        sub = graph.subgraph(comp)
        f = tuple(spanned_edges(sub, t) if t <= len(comp) else 0 for t in range(k + 1))
        entry = types.setdefault(f, [0, 0])
        entry[0] += 1
        entry[1] += sub.number_of_edges()
    keys = list(types)
    rows: list[list[float]] = []

    def configs(start: int, room: int, load: list[float]) -> None:
        # every way to share k GPUs over the types (a type may take several components;
        # more constraints than strictly possible only lower the bound)
        if any(load):
            rows.append(list(load))
        for i in range(start, len(keys)):
            for t in (t for t in range(2, room + 1) if keys[i][t]):
                load[i] += keys[i][t]
                configs(i + 1 if types[keys[i]][0] == 1 else i, room - t, load)
                load[i] -= keys[i][t]

    configs(0, k, [0.0] * len(keys))
    res = linprog(c=[-types[key][1] for key in keys], A_ub=rows, b_ub=[1.0] * len(rows), bounds=(0, None), method="highs")
    return math.ceil(-res.fun - 1e-9)


def measured_phase2(n: int, k: int, gpus: list[int], recheck: bool) -> float:
    cover = plan_cover(n, k)
    spent = [localize(SimulatedReplica(n, [GpuFault(g, 2.0)]), cover, method="adaptive", recheck_explained=recheck) for g in gpus]
    assert all(list(loc.faulty_gpus) == [g] for loc, g in zip(spent, gpus)), "a slow GPU was not localized"
    return sum(loc.probes_phase2 for loc in spent) / len(spent)


def row(n: int, k: int, samples: int) -> dict:
    cover = plan_cover(n, k)
    probes = [tuple(p) for p in cover.probes]
    gpus = sorted({round(i * (n - 1) / max(samples - 1, 1)) for i in range(samples)})
    bounds, simple, hidden = [], [], []
    for g in gpus:
        h = hidden_links(probes, g)
        m = densest_k_edges(h, k)
        hidden.append(h.number_of_edges())
        simple.append(math.ceil(h.number_of_edges() / m) if m else 0)
        bounds.append(recheck_bound(h, k))
    replication = defaultdict(int)
    for p in probes:
        for x in p:
            replication[x] += 1
    p1, pairs = len(probes), n * (n - 1) // 2
    bound = sum(bounds) / len(bounds)
    return {
        "n": n, "k": k, "phase1": p1, "hidden_links_per_gpu": sum(hidden) / len(hidden),
        "simple_bound_per_gpu": sum(simple) / len(simple),
        "recheck_bound_per_gpu": bound,
        "ref_(n-1)/(k-1)": math.ceil((n - 1) / (k - 1)),
        "measured_exact_per_gpu": measured_phase2(n, k, gpus, True),
        "measured_norecheck_per_gpu": measured_phase2(n, k, gpus, False),
        "best_reduction_exact_d4": pairs / (p1 + 4 * bound),
        "phase1_needed_for_25x_d4": math.floor(pairs / 25) - 4 * bound,
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=3, help="slow GPUs tried per size")
    args = parser.parse_args()
    start = time.perf_counter()
    rows = [row(n, k, args.samples) for k in (4, 8) for n in range(25, 326, 25)]
    df = pd.DataFrame(rows)
    RESULTS.mkdir(exist_ok=True)
    df.to_csv(RESULTS / "recheck_bound.csv", index=False)
    at = df[(df.n == 300) & (df.k == 8)].iloc[0]
    text = "\n".join([
        "# Exact localization: Phase 2 probes a slow GPU forces, bound vs measured",
        "",
        f"Measured by `bench/bench_recheck_bound.py` in {time.perf_counter() - start:.0f} s; {args.samples} slow GPUs per size "
        "(slowdown 2.0, noise-free). `recheck_bound_per_gpu`: the fewest passing probes that can judge every link "
        "hidden behind g, the LP bound of `recheck_bound` (see the module docstring), mean over the sampled GPUs; "
        "`simple_bound_per_gpu`: the weaker ceil(|H_g| / m). The measured columns count every Phase 2 probe "
        "(confirming g too).",
        "",
        df.round(1).astype(object).to_markdown(index=False),
        "",
        "## n = 300, k = 8",
        "",
        f"- Phase 1 {at.phase1:.0f} probes; a slow GPU hides {at.hidden_links_per_gpu:.0f} links; exact localization needs "
        f">= {at.recheck_bound_per_gpu:.1f} re-check probes per slow GPU (mean over the sampled GPUs; the simple bound "
        f"ceil(|H| / m) says {at.simple_bound_per_gpu:.1f}); the pipeline spends {at.measured_exact_per_gpu:.1f} Phase 2 "
        f"probes in all, confirmation included (re-check) or {at.measured_norecheck_per_gpu:.1f} (no re-check, inexact).",
        f"- With 4 slow GPUs no exact method beats all pairs / (Phase 1 + 4 x bound) = "
        f"{at.best_reduction_exact_d4:.1f}x on this cover; 25x would need a Phase 1 of at most "
        f"{at.phase1_needed_for_25x_d4:.0f} probes (Schonheim bound {plan_cover(300, 8).lower_bound}).",
    ])  # fmt: skip
    (RESULTS / "recheck_bound.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
