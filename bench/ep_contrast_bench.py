"""Contrast of one slow rank in ``all_ranks`` mode, for several probe token counts.

In a real expert-parallel engine every rank joins every forward, so one slow rank slows
every probe a little (its attention share, the collectives) and the probes that hold its
experts more (its expert FFN). Localization needs the second to dominate. For each token
count this starts a ``LocalExecutor(8, 4, engine="all_ranks")`` with the probe model's
shapes (OLMoE-1B-7B experts: hidden 2048, intermediate 1024, bf16; 64 query heads and 8
KV heads of dimension 32) and measures, interleaved, a probe holding the slow rank
(``member``: GPUs 4-7) and one without it (``other``: GPUs 0-3):

1. healthy, then
2. with GPU 5's worker process throttled from outside (:mod:`bench.outside_throttle`: a cgroup
   v1 CPU quota where writable, else a SIGSTOP/SIGCONT duty cycle).

Reported per token count: median latencies (ms), ``own`` (the slow rank's own slowdown:
its median expert-FFN stage time throttled over healthy), ``contrast`` (member over other
latency while throttled, divided by the same ratio healthy, so a probe-to-probe difference
of the healthy machine cancels) and ``contrast / own`` (goal: >= 0.8). The same is measured
on a ``member_only`` pool (``--baseline``), where a probe without the slow rank never waits
for it: its contrast is what the probe shows of the rank's slowdown without any shared
work, and ``all_ranks / member_only`` says how much of it survives every rank joining every
forward.

Run: ``.venv/bin/python -m bench.ep_contrast_bench [--tokens 32 64 128 256] [--rounds 6]
[--how auto|cgroup|stop] [--cores 0.25]``; writes bench/results/ep_contrast.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from bench.outside_throttle import throttle
from faultsense_pipelines.probe.executors.local import LocalExecutor

N, K, SLOW = 8, 4, 5
MEMBER, OTHER = (4, 5, 6, 7), (0, 1, 2, 3)
RESULTS = Path(__file__).parent / "results"


def _measure(ex: LocalExecutor, rounds: int, repeats: int) -> dict[str, float]:
    """Interleaved medians: member and other latency, the slow rank's FFN stage (ms)."""
    member, other, ffn = [], [], []
    for _ in range(rounds):
        t = ex.run_traced(MEMBER, repeats)
        assert t.measurement.ok, t.measurement.error
        member += t.measurement.latencies_ms
        ffn += t.ffn_ms[SLOW]
        o = ex.run(OTHER, repeats)
        assert o.ok, o.error
        other += o.latencies_ms
    return {"member": statistics.median(member), "other": statistics.median(other), "ffn": statistics.median(ffn)}


def run_one(tokens: int, rounds: int, repeats: int, how: str, cores: float, engine: str = "all_ranks") -> dict:
    """One token count: healthy and throttled measurements of a fresh pool."""
    with LocalExecutor(N, K, engine=engine, tokens=tokens, timeout_s=300, start_timeout_s=600) as ex:
        _measure(ex, 1, repeats)  # settle
        healthy = _measure(ex, rounds, repeats)
        with throttle(ex.worker_pids[SLOW], how, cores=cores) as used:
            slow = _measure(ex, rounds, repeats)
    own = slow["ffn"] / healthy["ffn"]
    contrast = (slow["member"] / slow["other"]) / (healthy["member"] / healthy["other"])
    return {
        "tokens": tokens,
        "engine": engine,
        "throttle": used,
        "healthy_member_ms": healthy["member"],
        "healthy_other_ms": healthy["other"],
        "slow_member_ms": slow["member"],
        "slow_other_ms": slow["other"],
        "own": own,
        "contrast": contrast,
        "ratio": contrast / own,
    }


def _table(rows: list[dict]) -> str:
    head = (
        "| tokens | engine | throttle | healthy member / other (ms) | slow member / other (ms) | own slowdown "
        "| contrast | contrast / own | all_ranks / member_only contrast |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|"]
    base = {r["tokens"]: r["contrast"] for r in rows if r["engine"] == "member_only"}
    for r in rows:
        rel = f"{r['contrast'] / base[r['tokens']]:.2f}" if r["engine"] == "all_ranks" and r["tokens"] in base else "-"
        lines.append(
            f"| {r['tokens']} | {r['engine']} | {r['throttle']} | {r['healthy_member_ms']:.1f} / {r['healthy_other_ms']:.1f} "
            f"| {r['slow_member_ms']:.1f} / {r['slow_other_ms']:.1f} | {r['own']:.2f} | {r['contrast']:.2f} | {r['ratio']:.2f} "
            f"| {rel} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, nargs="+", default=[32, 64, 128, 256])
    ap.add_argument("--rounds", type=int, default=6, help="interleaved member/other pairs per phase")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--how", default="auto", choices=["auto", "cgroup", "stop"])
    ap.add_argument("--cores", type=float, default=0.25, help="cgroup quota of the slow rank, CPUs")
    ap.add_argument("--baseline", action="store_true", help="also measure a member_only pool per token count")
    ap.add_argument("--out", type=Path, default=RESULTS / "ep_contrast.md")
    args = ap.parse_args()
    started, load = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg()[0]
    rows = []
    for tokens in args.tokens:
        for engine in ("member_only", "all_ranks") if args.baseline else ("all_ranks",):
            rows.append(run_one(tokens, args.rounds, args.repeats, args.how, args.cores, engine))
            print(_table(rows).splitlines()[-1], flush=True)
    table = _table(rows)
    print(table)
    args.out.write_text(
        "# Contrast of one throttled rank, `all_ranks` mode (`bench/ep_contrast_bench.py`)\n\n"
        f"Measured {started} on this project's 2-core CPU machine (load average {load:.1f} at the start, "
        f"shared with other work): `LocalExecutor(8, 4, engine='all_ranks')` (and `member_only` with `--baseline`), OLMoE expert shapes, bf16; "
        f"GPU {SLOW}'s worker throttled from outside ({rows[0]['throttle']}"
        + (f", {args.cores:g} CPU" if rows[0]["throttle"] == "cgroup" else ", 10 ms run / 10 ms stopped")
        + f"); {args.rounds} interleaved rounds of {args.repeats} repeats per phase.\n"
        f"Command: `.venv/bin/python -m bench.ep_contrast_bench --tokens {' '.join(map(str, args.tokens))} "
        f"--rounds {args.rounds} --repeats {args.repeats} --how {args.how} --cores {args.cores:g}"
        f"{' --baseline' if args.baseline else ''}`.\n\n"
        "`own`: the slow rank's expert-FFN stage time throttled / healthy; `contrast`: member over other "
        "probe latency throttled, over the same ratio healthy; goal contrast / own >= 0.8.\n\n" + table + "\n"
    )


if __name__ == "__main__":
    main()
