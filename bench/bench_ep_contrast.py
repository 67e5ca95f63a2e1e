"""Contrast of one slow rank in ``all_ranks`` mode, for probe token counts and FFN widths.

In a real expert-parallel engine every rank joins every forward, so one slow rank slows
every probe a little (its attention share, the collectives) and the probes that hold its
experts more (its expert FFN). Localization needs the second to dominate. For each
configuration this starts a ``LocalExecutor(8, 4, engine="all_ranks")`` with the probe
model's shapes (hidden 2048, bf16; 64 query heads and 8 KV heads of dimension 32; expert
FFN width ``--intermediate``, OLMoE-1B-7B's 1024 by default) and compares a probe holding
the slow rank (``member``: GPUs 4-7) with one without it (``other``: GPUs 0-3).

The measurement is built against the shared, loaded CPU it runs on:

* **blocks**: healthy and throttled phases alternate (``--blocks`` pairs), each block
  giving its own contrast and own slowdown, so a drift of the machine's load between a
  healthy and a throttled phase shows as spread between blocks instead of bias;
* **interleaving**: within a phase, member and other probes alternate, their order flipped
  every round;
* **medians**: every latency and stage time is a median over the phase's repeats; the
  reported figures are medians over blocks, with their range;
* **own slowdown from CPU time**: the slow rank's expert-FFN stage *wall time per CPU second
  of its thread* (``ProbeTrace.ffn_ms / ffn_cpu_ms``), throttled over healthy — how far the
  throttle stretched the rank's own work, independent of how much work the stage did;
* **calibrated throttle**: GPU 5's worker gets a cgroup v1 CPU quota
  (:mod:`bench._outside_throttle`; SIGSTOP/SIGCONT duty cycle where no cgroup is writable)
  chosen so that this own slowdown is ``--target-own`` (default 2: the rank at ~2x its CPU
  time), unless ``--cores`` fixes it.

Reported per configuration: median latencies (ms); ``share``, the slow rank's FFN stage
over the member probe's latency, healthy (the member-only share of a forward); ``own``
(CPU-time based, and the wall-time FFN ratio for comparison); ``contrast`` (member over
other latency throttled, divided by the same ratio healthy in the same block, so a
probe-to-probe difference of the healthy machine cancels); ``contrast / own`` (goal >= 0.8).

Run: ``.venv/bin/python -m bench.bench_ep_contrast [--tokens 128 256] [--intermediate 1024]
[--blocks 5] [--rounds 3] [--target-own 2]``; appends to bench/results/ep_contrast.md
(``--out``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from bench._outside_throttle import throttle
from faultsense_pipelines.probe.executors.common import ProbeTrace
from faultsense_pipelines.probe.executors.local import LocalExecutor

N, K, SLOW = 8, 4, 5
MEMBER, OTHER = (4, 5, 6, 7), (0, 1, 2, 3)
RESULTS = Path(__file__).parent / "results"


def stretches(trace: ProbeTrace, gpu: int) -> list[float]:
    """Wall time over thread CPU time of ``gpu``'s expert-FFN stage, one per repeat (>= ~1)."""
    return [w / c for w, c in zip(trace.ffn_ms[gpu], trace.ffn_cpu_ms[gpu], strict=True) if c > 0]


def own_stretch(ex: LocalExecutor, gpu: int, probe: Sequence[int], rounds: int = 3, repeats: int = 3) -> float:
    """Median FFN-stage stretch of ``gpu`` over ``rounds`` probes ``probe`` (which holds it)."""
    values: list[float] = []
    for _ in range(rounds):
        t = ex.run_traced(probe, repeats)
        if not t.measurement.ok:
            raise RuntimeError(t.measurement.error)
        values += stretches(t, gpu)
    return statistics.median(values)


def calibrate_quota(
    ex: LocalExecutor, gpu: int, probe: Sequence[int], target: float, how: str = "auto", start: float = 0.15, steps: int = 4
) -> tuple[float, float, str]:
    """A CPU quota (cores) under which ``gpu``'s own slowdown (FFN-stage stretch throttled
    over healthy) is about ``target``: a few steps of ``q <- q * own / target`` (the stretch
    under a quota is ~ its unthrottled CPU share over the quota), stopping within 10 %.

    Returns:
        ``(cores, own at those cores, throttle used)``; with the SIGSTOP fallback the duty
        cycle is fixed and ``cores`` is meaningless (returned as ``start``).
    """
    q, best = start, (float("inf"), start, 0.0)  # (|own / target - 1|, cores, own)
    for _ in range(steps):
        healthy = own_stretch(ex, gpu, probe)
        with throttle(ex.worker_pids[gpu], how, cores=q) as used:
            own = own_stretch(ex, gpu, probe) / healthy
        best = min(best, (abs(own / target - 1.0), q, own))
        if used != "cgroup" or best[0] < 0.1:
            break
        q = min(1.0, max(0.02, q * own / target))
    return best[1], best[2], used


@dataclass
class Phase:
    """Medians of one phase (healthy or throttled) of a block."""

    member_ms: float
    other_ms: float
    ffn_ms: float  # the slow rank's FFN stage in member probes
    stretch: float  # its FFN wall / CPU time
    share: float  # its FFN stage over the member probe's latency


def _phase(ex: LocalExecutor, rounds: int, repeats: int) -> Phase:
    member, other, ffn, stretch, share = [], [], [], [], []
    for r in range(rounds):
        for probe in (MEMBER, OTHER) if r % 2 == 0 else (OTHER, MEMBER):
            t = ex.run_traced(probe, repeats)
            if not t.measurement.ok:
                raise RuntimeError(t.measurement.error)
            if probe == MEMBER:
                member += t.measurement.latencies_ms
                ffn += t.ffn_ms[SLOW]
                stretch += stretches(t, SLOW)
                share += [f / lat for f, lat in zip(t.ffn_ms[SLOW], t.measurement.latencies_ms, strict=True)]
            else:
                other += t.measurement.latencies_ms
    med = statistics.median
    return Phase(med(member), med(other), med(ffn), med(stretch), med(share))


def run_one(
    tokens: int,
    intermediate: int,
    blocks: int,
    rounds: int,
    repeats: int,
    how: str,
    target_own: float,
    cores: float | None,
    engine: str = "all_ranks",
) -> dict:
    """One configuration: calibrate the throttle, then ``blocks`` healthy/throttled pairs."""
    layer = {"tokens": tokens, "intermediate": intermediate}
    with LocalExecutor(N, K, engine=engine, timeout_s=300, start_timeout_s=600, **layer) as ex:
        _phase(ex, 1, repeats)  # settle
        used = "none"
        if cores is None:
            cores, _, used = calibrate_quota(ex, SLOW, MEMBER, target_own, how)
        pairs: list[tuple[Phase, Phase]] = []
        for _ in range(blocks):
            healthy = _phase(ex, rounds, repeats)
            with throttle(ex.worker_pids[SLOW], how, cores=cores) as used:
                slow = _phase(ex, rounds, repeats)
            pairs.append((healthy, slow))
    per_block = [
        {
            "contrast": (s.member_ms / s.other_ms) / (h.member_ms / h.other_ms),
            "own_cpu": s.stretch / h.stretch,
            "own_wall": s.ffn_ms / h.ffn_ms,
        }
        for h, s in pairs
    ]
    for b in per_block:
        b["ratio"] = b["contrast"] / b["own_cpu"]
    med = statistics.median

    def summary(key: str) -> tuple[float, float, float]:
        values = [b[key] for b in per_block]
        return med(values), min(values), max(values)

    return {
        "tokens": tokens,
        "intermediate": intermediate,
        "engine": engine,
        "throttle": used,
        "cores": cores,
        "blocks": blocks,
        "healthy_member_ms": med(h.member_ms for h, _ in pairs),
        "healthy_other_ms": med(h.other_ms for h, _ in pairs),
        "slow_member_ms": med(s.member_ms for _, s in pairs),
        "slow_other_ms": med(s.other_ms for _, s in pairs),
        "share": med(h.share for h, _ in pairs),
        "own_cpu": summary("own_cpu"),
        "own_wall": summary("own_wall"),
        "contrast": summary("contrast"),
        "ratio": summary("ratio"),
    }


def _range(v: tuple[float, float, float]) -> str:
    return f"{v[0]:.2f} ({v[1]:.2f}-{v[2]:.2f})"


def table(rows: list[dict]) -> str:
    """The result rows as a Markdown table."""
    head = (
        "| tokens | FFN width | engine | throttle | healthy member / other (ms) | throttled member / other (ms) "
        "| share | own, CPU time | own, FFN wall | contrast | contrast / own |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        quota = f"cgroup {r['cores']:.3g} CPU" if r["throttle"] == "cgroup" else r["throttle"]
        lines.append(
            f"| {r['tokens']} | {r['intermediate']} | {r['engine']} | {quota} "
            f"| {r['healthy_member_ms']:.1f} / {r['healthy_other_ms']:.1f} | {r['slow_member_ms']:.1f} / {r['slow_other_ms']:.1f} "
            f"| {r['share']:.2f} | {_range(r['own_cpu'])} | {_range(r['own_wall'])} | {_range(r['contrast'])} "
            f"| **{_range(r['ratio'])}** |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, nargs="+", default=[128, 256])
    ap.add_argument("--intermediate", type=int, nargs="+", default=[1024], help="expert FFN widths to measure")
    ap.add_argument("--blocks", type=int, default=5, help="healthy/throttled phase pairs per configuration")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved member/other pairs per phase")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--how", default="auto", choices=["auto", "cgroup", "stop"])
    ap.add_argument("--target-own", type=float, default=2.0, help="calibrate the quota to this own slowdown")
    ap.add_argument("--cores", type=float, default=None, help="fixed cgroup quota instead of calibrating, CPUs")
    ap.add_argument("--out", type=Path, default=RESULTS / "ep_contrast.md")
    args = ap.parse_args()
    started, load, t0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg()[0], time.monotonic()
    rows = []
    for intermediate in args.intermediate:
        for tokens in args.tokens:
            rows.append(
                run_one(tokens, intermediate, args.blocks, args.rounds, args.repeats, args.how, args.target_own, args.cores)
            )
            print(table(rows).splitlines()[-1], flush=True)
    text = (
        f"\n## Blocks, medians, CPU-time own slowdown ({started})\n\n"
        f"Measured {started} on this project's 2-core CPU machine (load average {load:.1f} at the start, "
        f"{os.getloadavg()[0]:.1f} at the end, shared with other work), {(time.monotonic() - t0) / 60:.1f} min: "
        f"`LocalExecutor(8, 4, engine='all_ranks')`, hidden 2048, bf16; GPU {SLOW}'s worker throttled from outside, "
        + (f"quota fixed at {args.cores:g} CPU" if args.cores else f"quota calibrated to an own slowdown of {args.target_own:g}")
        + f"; {args.blocks} blocks of (healthy, throttled) phases, {args.rounds} interleaved member/other rounds of "
        f"{args.repeats} repeats per phase.\n"
        f"Command: `.venv/bin/python -m bench.bench_ep_contrast --tokens {' '.join(map(str, args.tokens))} "
        f"--intermediate {' '.join(map(str, args.intermediate))} --blocks {args.blocks} --rounds {args.rounds} "
        f"--repeats {args.repeats} --how {args.how} "
        + (f"--cores {args.cores:g}" if args.cores else f"--target-own {args.target_own:g}")
        + "`.\n\n"
        "`share`: the slow rank's FFN stage over the member probe's latency, healthy. `own, CPU time`: its FFN "
        "stage's wall time per CPU second of its thread, throttled over healthy (the goal's denominator); `own, FFN "
        "wall`: the stage's wall time ratio. `contrast`: member over other latency throttled, over the same ratio "
        "healthy in the same block. Figures: median over blocks (min-max). Goal: contrast / own >= 0.8.\n\n" + table(rows) + "\n"
    )
    print(text)
    with args.out.open("a") as out:
        out.write(text)


if __name__ == "__main__":
    main()
