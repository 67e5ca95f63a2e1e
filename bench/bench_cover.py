"""Phase 1 cover benchmark: greedy (paper's Algorithm 1) vs best, against Schönheim's bound.

For n = 25..325 step 25 and k in {4, 8}, measured side by side in one run: probes of each
method, the bound L(n, k), ratios, all pairs n(n-1)/2 over probes, rounds against
ceil((n-1)/(k-1)) and against the cover's own floor (the most probes one GPU is in, or the
probes over the most that fit side by side), and cold planning time (every cache cleared;
fastest of 2). A second sweep plans every n (k=4: 25..325, k=8: 100..325) with warm caches
and reports the worst best/L ratio and the planned rounds.

    .venv/bin/python -m bench.bench_cover            # table + sweep (~10 minutes on 2 cores)
    .venv/bin/python -m bench.bench_cover --no-sweep # the step-25 table only

Writes bench/results/cover.csv, bench/results/cover_every.csv and bench/results/cover.md.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import pandas as pd

from faultsense_pipelines.cover import CoverMethod, best, designs, fields, plan_cover, schonheim_bound
from faultsense_pipelines.cover.best import best_cover_source
from faultsense_pipelines.cover.rounds import rounds_lower_bound

RESULTS = Path(__file__).resolve().parent / "results"
TARGET = {4: 1.05, 8: 1.10}


def _clear_caches() -> None:
    plan_cover.cache_clear()
    best.clear_caches()
    for f in (
        designs.projective_geometry,
        designs.affine_geometry,
        designs.denniston_design,
        designs.transversal_design,
        fields.galois_field,
        fields.macneish_ring,
    ):
        f.cache_clear()


def _timed_plan(n: int, k: int, method: CoverMethod, repeats: int = 2):
    """Plan cold ``repeats`` times; the fastest time (the machine is shared, so noise only adds)."""
    best_time = float("inf")
    for _ in range(repeats):
        _clear_caches()
        start = time.perf_counter()
        cover = plan_cover(n, k, method)
        best_time = min(best_time, time.perf_counter() - start)
    return cover, best_time


def step_table(ns: range, ks: tuple[int, ...]) -> pd.DataFrame:
    rows = []
    for k in ks:
        for n in ns:
            greedy, t_greedy = _timed_plan(n, k, CoverMethod.GREEDY)
            bestc, t_best = _timed_plan(n, k, CoverMethod.BEST)
            bound = schonheim_bound(n, k)
            rounds_ref = -(-(n - 1) // (k - 1))
            rows.append(
                {
                    "n": n,
                    "k": k,
                    "greedy": len(greedy.probes),
                    "best": len(bestc.probes),
                    "schonheim": bound,
                    "greedy_over_L": len(greedy.probes) / bound,
                    "best_over_L": len(bestc.probes) / bound,
                    "all_pairs": bestc.all_pairs,
                    "all_pairs_over_greedy": bestc.all_pairs / len(greedy.probes),
                    "all_pairs_over_best": bestc.all_pairs / len(bestc.probes),
                    "rounds_greedy": len(greedy.rounds),
                    "rounds_best": len(bestc.rounds),
                    "rounds_floor": rounds_lower_bound(bestc.probes, n),
                    "rounds_ref": rounds_ref,
                    "rounds_best_over_ref": len(bestc.rounds) / rounds_ref,
                    "short_probes_best": sum(len(p) < k for p in bestc.probes),
                    "plan_s_greedy": t_greedy,
                    "plan_s_best": t_best,
                    "best_source": best_cover_source(n, k),
                }
            )
            r = rows[-1]
            print(
                f"n={n:3d} k={k}: greedy {r['greedy']:5d}  best {r['best']:5d}  L {bound:5d}  "
                f"best/L {r['best_over_L']:.3f}  rounds {r['rounds_best']:3d} (floor {r['rounds_floor']:3d}, "
                f"1.5 x ref {1.5 * rounds_ref:5.1f})  "
                f"plan {t_best:.2f}s  [{r['best_source']}]",
                flush=True,
            )
    return pd.DataFrame(rows)


def every_n(k: int, lo: int, hi: int) -> pd.DataFrame:
    """Probes and planned rounds of ``best`` for every n (warm caches)."""
    _clear_caches()
    rows = []
    for n in range(lo, hi + 1):
        cover = plan_cover(n, k, CoverMethod.BEST)
        bound = schonheim_bound(n, k)
        rows.append(
            {
                "n": n,
                "k": k,
                "best": len(cover.probes),
                "schonheim": bound,
                "best_over_L": len(cover.probes) / bound,
                "rounds": len(cover.rounds),
                "rounds_floor": rounds_lower_bound(cover.probes, n),
                "rounds_ref": -(-(n - 1) // (k - 1)),
                "best_source": best_cover_source(n, k),
            }
        )
        print(
            f"every n: k={k} n={n:3d} best {rows[-1]['best']:5d} rounds {rows[-1]['rounds']:3d} "
            f"(floor {rows[-1]['rounds_floor']:3d}, ref {rows[-1]['rounds_ref']:3d})",
            flush=True,
        )
    return pd.DataFrame(rows)


def _markdown(table: pd.DataFrame, sweep: pd.DataFrame | None) -> str:
    cols = [
        "n",
        "k",
        "greedy",
        "best",
        "schonheim",
        "greedy_over_L",
        "best_over_L",
        "all_pairs_over_greedy",
        "all_pairs_over_best",
        "rounds_greedy",
        "rounds_best",
        "rounds_floor",
        "rounds_ref",
        "rounds_best_over_ref",
        "plan_s_best",
        "best_source",
    ]
    lines = [
        "# Phase 1 cover benchmark",
        "",
        f"Measured in one run by `bench/bench_cover.py` on {platform.machine()} / Python {platform.python_version()}.",
        "Plan times are cold (all caches cleared before each plan), the faster of 2 runs. `rounds_ref` = ceil((n-1)/(k-1));",
        "`rounds_floor` = the cover's own lower bound on rounds (the most probes one GPU is in, or the probes over the",
        "most that fit side by side); the target is rounds <= 1.5 x rounds_ref.",
        "",
        table[cols].to_markdown(index=False, floatfmt=".3f"),
        "",
        "## Targets (issue 2)",
        "",
    ]
    for k in sorted(table.k.unique()):
        t = table[table.k == k]
        big = t[t.n >= 100] if k == 8 else t
        lines.append(
            f"- k={k}: worst best/L {big.best_over_L.max():.3f} at n={int(big.loc[big.best_over_L.idxmax(), 'n'])}"
            f"{' (n >= 100)' if k == 8 else ''}, target <= {TARGET[k]}; "
            f"worst rounds/ref {t.rounds_best_over_ref.max():.2f}, target <= 1.5"
            + (
                f" (missed at n={', '.join(str(int(x)) for x in t.n[t.rounds_best_over_ref > 1.5])})"
                if (t.rounds_best_over_ref > 1.5).any()
                else ""
            )
            + "; "
            f"best < greedy wherever greedy > L: {bool(((t.greedy > t.schonheim) <= (t.best < t.greedy)).all())}"
        )
    n300 = table[(table.n == 300) & (table.k == 8)]
    if len(n300):
        lines.append(
            f"- n=300, k=8: all pairs / greedy = {n300.all_pairs_over_greedy.iloc[0]:.1f}x (paper ~22x), "
            f"all pairs / best = {n300.all_pairs_over_best.iloc[0]:.1f}x"
        )
    n325 = table[(table.n == 325) & (table.k == 8)]
    if len(n325):
        lines.append(f"- plan n=325, k=8 (best, cold): {n325.plan_s_best.iloc[0]:.2f} s (target < 2 s)")
    if sweep is not None:
        lines += ["", "## Every n", ""]
        for k in sorted(sweep.k.unique()):
            s = sweep[sweep.k == k]
            worst = s.loc[s.best_over_L.idxmax()]
            over = s[s.best_over_L > TARGET[k]]
            lines.append(
                f"- k={k}, n={s.n.min()}..{s.n.max()}: worst best/L {worst.best_over_L:.3f} at n={int(worst.n)}; "
                f"{len(over)} of {len(s)} sizes above {TARGET[k]}"
                + (f": {', '.join(str(int(x)) for x in over.n)}" if len(over) else "")
            )
            ratio = s.rounds / s.rounds_ref
            floor_over = s.rounds_floor / s.rounds_ref > 1.5
            lines.append(
                f"  rounds (planned): worst {ratio.max():.2f} x ref at n={int(s.n[ratio.idxmax()])}; "
                f"{int((ratio > 1.5).sum())} of {len(s)} sizes above 1.5, of which {int(floor_over.sum())} "
                f"have a cover whose own floor is above 1.5 x ref"
            )
    lines += [
        "",
        "## Notes",
        "",
        "- `best_source` names the winning construction: `TD(k,m)+e` is a transversal design on k groups of",
        "  at most m GPUs plus e infinite GPUs, each group covered recursively; `table` is a small cover found",
        "  offline by simulated annealing (`faultsense_pipelines/cover/data/small.json`); `TD(k,m)+e holey`",
        "  covers each group with the infinite GPUs by a holey cover (pairs among the infinite GPUs left out,",
        "  `faultsense_pipelines/cover/data/holey.json`) and the infinite GPUs once; `D+e` is the Steiner",
        "  system D extended by e GPUs that share ceil(v/(k-e)) new probes.",
        "- `resolvable` is a small cover annealed in fixed rounds (`faultsense_pipelines/cover/data/resolvable.json`);",
        "  `AG(2,7)+1` is the affine plane plus one GPU on the lines through a point (8 parallel classes = 8 rounds).",
        "- `cyclic` is one base round of disjoint probes on Z_m x {0..c-1} developed over Z_m into m rounds",
        "  (`faultsense_pipelines/cover/data/cyclic.json`; n=75, k=8: Z_15 x 5, 135 probes in 15 rounds).",
        "- `table` for k=8 at n >= 100 is a stored large cover (`faultsense_pipelines/cover/data/large.json`,",
        "  docs/cover_large.md); at n=175 and 275, and at the 8-GPU-node sizes 144, 160, 176, 192, 264, 304",
        "  and 312, it is a transversal-design cover whose probes were changed offline with the rounds fixed",
        "  (`tools/cover_search/schedule_anneal.py`; n=175: 601 probes in 37 rounds, n=275: 1512 in 60).",
        "- Rounds above 1.5x come from transversal designs with infinite GPUs (e > 0): those GPUs sit in every",
        "  group's sub-cover (a high floor when e is large), and their probes cannot share a round with a full",
        "  parallel class of the TD, which leaves no GPU of a group idle; tabu search breaks up some classes but",
        "  stays well above the floor. Where the floor itself is above 1.5x, only another cover can help",
        "  (as at n=175, 275 and the node sizes above, where a squeezed cover replaced it).",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--no-sweep", action="store_true", help="skip the every-n sweep")
    args = parser.parse_args()
    RESULTS.mkdir(parents=True, exist_ok=True)
    table = step_table(range(25, 326, 25), (4, 8))
    table.to_csv(RESULTS / "cover.csv", index=False)
    sweep = None
    if not args.no_sweep:
        sweep = pd.concat([every_n(4, 25, 325), every_n(8, 100, 325)], ignore_index=True)
        sweep.to_csv(RESULTS / "cover_every.csv", index=False)
    md = _markdown(table, sweep)
    (RESULTS / "cover.md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
