"""Full localization sweeps on the real ``local`` executor: old vs new measurement, side by side.

K sweeps (Phase 1 + Phase 2 via ``localize``) of one ``LocalExecutor(8, 4)`` (8 worker
processes, torch.distributed gloo, OLMoE expert shapes) with a 3x straggler on GPU 2, and K
with no fault, with the fleet's settings for ``local-8`` (repeats 5, RobustRule with
min_slowdown 1.5). Each sweep is run twice in a row, once per mode, alternating which goes
first, so both modes see the same machine load:

* ``old``: repeats back to back per probe, Phase 2 judged against the Phase 1 baseline
  (``interleave=False, reference=False``), RobustRule scaled by the spread between probes
  only (``use_repeats=False``): the behaviour before interleaving.
* ``new``: repeats in rounds with round detrending (and one more set of rounds when the
  first judgement is degraded), Phase 2 against an interleaved healthy reference,
  RobustRule also using the noise within probes (the defaults).
* ``sequential``: the new measurement with the default, anytime-valid drill-down, seeded
  per sweep; the two above use the adaptive one. ``--modes`` and ``--cases`` choose what runs; ``--repeats`` the measurements a probe.

Cases: ``straggler`` (GPU 2 3x slow), ``healthy`` (no fault) and ``link`` (link 2-6 delayed
by the median latency of a healthy 4-GPU probe, so each probe over it takes about 3x; the
injection of ``tests/probe/test_local_executor.py``).

``--hog N`` starts N busy-loop processes (one core each) for the whole run to simulate a
loaded machine. Rates: exact (faulty GPUs == [2] and no faulty link, link 2-6 alone for the
link case, or nothing for the healthy case), wrong (some component blamed that is not the injected fault), degraded
(Phase 1 called the replica degraded), missed (no verdict, not degraded).

Run: ``.venv/bin/python -m bench.bench_local_sweep --sweeps 10 --hog 1``; writes
bench/results/local_sweep.{csv,md}.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import signal
import statistics
import sys
import time

from bench._append_results import append_results
from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import localize
from faultsense_pipelines.localize.suspects import RobustRule
from faultsense_pipelines.probe.executors.local import LocalExecutor

N, K, REPEATS, STRAGGLER, LINK = 8, 4, 5, 2, [2, 6]
CASES = ("straggler", "healthy", "link")
MODES = {
    "old": ({"interleave": False, "reference": False, "method": "adaptive"}, {"use_repeats": False}),
    "new": ({"method": "adaptive"}, {}),
    "sequential": ({"method": "sequential"}, {}),  # the default drill-down, with the new measurement
}


def _hog() -> None:
    while True:
        pass


def _classify(loc, want: list[int], want_links: list[list[int]] | None = None) -> str:
    want_links = want_links or []
    if loc.replica_degraded:
        return "degraded"
    if any(link not in want_links for link in loc.faulty_links) or any(g not in want for g in loc.faulty_gpus):
        return "wrong"
    return "exact" if loc.faulty_gpus == want and loc.faulty_links == want_links else "missed"


def _cases(ex: LocalExecutor):
    """(case, injections, faulty GPUs, faulty links) of each case; the link delay is measured
    on the healthy pool (the median of 5 runs of probe 0-1-2-3, ms)."""
    ex.set_injections([])
    base = statistics.median(ex.run([0, 1, 2, 3], REPEATS).latencies_ms)
    yield "straggler", [{"gpu": STRAGGLER, "slowdown": 3.0}], [STRAGGLER], []
    yield "healthy", [], [], []
    yield "link", [{"link": LINK, "delay_ms": base}], [], [LINK]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweeps", type=int, default=10, help="sweeps per case and mode")
    ap.add_argument("--hog", type=int, default=0, help="busy-loop processes to run alongside")
    ap.add_argument("--tag", default="", help="label for this run in the results")
    ap.add_argument("--min-slowdown", type=float, default=1.5, help="RobustRule min_slowdown (fleet: 1.5)")
    ap.add_argument("--modes", default="old,new", help=f"comma-separated, of {', '.join(MODES)}")
    ap.add_argument("--cases", default="straggler,healthy", help=f"comma-separated, of {', '.join(CASES)}")
    ap.add_argument("--repeats", type=int, default=REPEATS, help="measurements a probe (fleet: 5)")
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    cases = [c for c in args.cases.split(",") if c]
    if not modes or any(m not in MODES for m in modes) or not cases or any(c not in CASES for c in cases):
        ap.error(f"--modes must name some of {', '.join(MODES)} and --cases some of {', '.join(CASES)}")
    # SIGTERM (pkill, timeout) must reach the finally below, or the busy loops outlive the run
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    hogs = [mp.get_context("spawn").Process(target=_hog, daemon=True) for _ in range(args.hog)]
    for h in hogs:
        h.start()
    rows = []
    try:
        cover = plan_cover(N, K)
        with LocalExecutor(N, K, timeout_s=120) as ex:
            for case, inject, want, want_links in _cases(ex):
                if case not in cases:
                    continue
                ex.set_injections(inject)
                for s in range(args.sweeps):
                    order = modes if s % 2 == 0 else modes[::-1]
                    for mode in order:
                        t0 = time.monotonic()
                        options, rule = MODES[mode]
                        rule = RobustRule(min_slowdown=args.min_slowdown, **rule)
                        seeded = {"seed": s} if options["method"] == "sequential" else {}
                        loc = localize(ex, cover, repeats=args.repeats, rule=rule, **options, **seeded)
                        p1 = loc.phase1
                        rows.append(
                            {
                                "tag": args.tag,
                                "hog": args.hog,
                                "case": case,
                                "mode": mode,
                                "sweep": s,
                                "outcome": _classify(loc, want, want_links),
                                "faulty_gpus": loc.faulty_gpus,
                                "faulty_links": loc.faulty_links,
                                "phase2_probes": loc.probes_phase2,
                                "p1_ratios": [
                                    round(r.latency_ms / p1.baseline_ms, 2) for r in p1.records if r.latency_ms is not None
                                ],
                                "threshold": round(p1.threshold_ms / p1.baseline_ms, 2),
                                "load1": round(os.getloadavg()[0], 1),
                                "seconds": round(time.monotonic() - t0, 1),
                            }
                        )
                        # and, in the log only, why each verdict not confirmed was left so (gate, budget, ...)
                        print(rows[-1], sorted({v.reason for v in loc.verdicts if v.reason}), flush=True)
    finally:
        for h in hogs:
            h.kill()
            h.join()
        if rows:  # a run stopped early (SIGTERM, Ctrl-C, a dead pool) records what it measured
            _write(rows, args, stopped=sys.exc_info()[0] is not None)


def _write(rows: list[dict], args, stopped: bool = False) -> None:
    lines = [
        f"\n## run {args.tag or time.strftime('%Y-%m-%d %H:%M')}: {args.sweeps} sweeps per cell, "
        f"hog={args.hog}, repeats={args.repeats}, min_slowdown={args.min_slowdown}, load1 {min(r['load1'] for r in rows)}-{max(r['load1'] for r in rows)}"
        + (f" (stopped after {len(rows)} sweeps)" if stopped else "")
        + "\n",
        "| case | mode | exact | wrong | degraded | missed | mean s/sweep |",
        "|---|---|---|---|---|---|---|",
    ]
    for case in CASES:
        for mode in MODES:
            sel = [r for r in rows if r["case"] == case and r["mode"] == mode]
            if not sel:
                continue
            c = {o: sum(r["outcome"] == o for r in sel) for o in ("exact", "wrong", "degraded", "missed")}
            secs = sum(r["seconds"] for r in sel) / len(sel)
            lines.append(
                f"| {case} | {mode} | {c['exact']}/{len(sel)} | {c['wrong']}/{len(sel)} | "
                f"{c['degraded']}/{len(sel)} | {c['missed']}/{len(sel)} | {secs:.1f} |"
            )
    header = (
        "# Local executor sweeps: old vs new measurement (bench/bench_local_sweep.py)\n\n"
        "For the healthy case, exact = nothing blamed and not degraded.\n"
    )
    append_results("local_sweep", rows, "\n".join(lines) + "\n", header)


if __name__ == "__main__":
    main()
