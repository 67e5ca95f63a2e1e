"""Localize a rank throttled from outside, on a real ``all_ranks`` pool, with the evidence decoder.

The fault is not injected by FaultSense: one worker process of a
``LocalExecutor(8, 4, engine="all_ranks")`` (OLMoE expert shapes, bf16) is held to a CPU
quota by a cgroup v1 ``cpu`` controller (SIGSTOP/SIGCONT duty cycle where no cgroup is
writable; :mod:`bench.outside_throttle`), and every rank joins every probe's forward, as in
vLLM expert parallelism. Each sweep is Phase 1 on the best cover plus the evidence-weighted
drill-down (``drilldown_method: evidence``, docs/evidence.md). A sweep is ``named`` when the
throttled GPU is blamed and nothing else, ``wrong`` when any other component is blamed,
``missed`` otherwise (nothing blamed, or only inconclusive verdicts).

The slow rank's own slowdown is measured as its expert-FFN stage time throttled over
healthy (probes holding it), as in ``bench/ep_contrast_bench.py``.

Run: ``.venv/bin/python -m bench.external_fault_sweep [--sweeps 10] [--cores 0.1] [--gpu 5]``;
writes bench/results/external_fault.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench.outside_throttle import throttle
from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import localize
from faultsense_pipelines.probe.executors.local import LocalExecutor

N, K, REPEATS = 8, 4, 5
RESULTS = Path(__file__).parent / "results"


@dataclass(frozen=True)
class SweepCounts:
    """What ``sweeps`` localizations of one throttled GPU found."""

    sweeps: int
    named: int
    wrong: int
    missed: int
    own_slowdown: float
    throttle: str
    blamed: tuple[tuple[str, ...], ...]  # per sweep, the components blamed


def _own_ffn_ms(ex: LocalExecutor, gpu: int, rounds: int = 4) -> float:
    probe = tuple(sorted({gpu, *((gpu + i) % N for i in range(1, K))}))
    ffn: list[float] = []
    for _ in range(rounds):
        t = ex.run_traced(probe, 3)
        if t.measurement.ok:
            ffn += t.ffn_ms[gpu]
    return statistics.median(ffn)


def sweep_counts(
    sweeps: int,
    gpu: int = 5,
    cores: float = 0.1,
    how: str = "auto",
    tokens: int | None = None,
    progress: Callable[[int, tuple[str, ...]], None] | None = None,
) -> SweepCounts:
    """Run ``sweeps`` evidence-weighted localizations with ``gpu`` throttled from outside;
    ``progress(i, blamed)`` is called after each sweep."""
    layer = {} if tokens is None else {"tokens": tokens}
    named = wrong = missed = 0
    blamed: list[tuple[str, ...]] = []
    cover = plan_cover(N, K)
    with LocalExecutor(N, K, engine="all_ranks", timeout_s=300, start_timeout_s=600, **layer) as ex:
        healthy_ffn = _own_ffn_ms(ex, gpu)
        with throttle(ex.worker_pids[gpu], how, cores=cores) as used:
            own = _own_ffn_ms(ex, gpu) / healthy_ffn
            for _ in range(sweeps):
                loc = localize(ex, cover, repeats=REPEATS, method="evidence")
                names = tuple([f"gpu:{g}" for g in loc.faulty_gpus] + [f"link:{a}-{b}" for a, b in loc.faulty_links])
                blamed.append(names)
                if progress is not None:
                    progress(len(blamed), names)
                if names == (f"gpu:{gpu}",):
                    named += 1
                elif names:
                    wrong += 1
                else:
                    missed += 1
    return SweepCounts(sweeps, named, wrong, missed, own, used, tuple(blamed))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweeps", type=int, default=10)
    ap.add_argument("--gpu", type=int, default=5)
    ap.add_argument("--cores", type=float, default=0.1, help="cgroup CPU quota of the throttled worker")
    ap.add_argument("--how", default="auto", choices=["auto", "cgroup", "stop"])
    ap.add_argument("--tokens", type=int, default=None, help="tokens per probe (default: the executor's)")
    ap.add_argument("--out", type=Path, default=RESULTS / "external_fault.md")
    args = ap.parse_args()
    started, load, t0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg()[0], time.monotonic()
    c = sweep_counts(
        args.sweeps,
        args.gpu,
        args.cores,
        args.how,
        args.tokens,
        lambda i, b: print(f"sweep {i}: {', '.join(b) or '-'}", flush=True),
    )
    minutes = (time.monotonic() - t0) / 60
    rows = "\n".join(f"| {i + 1} | {', '.join(b) or '-'} |" for i, b in enumerate(c.blamed))
    text = (
        "# A rank throttled from outside, `all_ranks` mode, evidence drill-down (`bench/external_fault_sweep.py`)\n\n"
        f"Measured {started} on this project's 2-core CPU machine (load average {load:.1f} at the start, shared "
        f"with other work), {minutes:.1f} min: `LocalExecutor(8, 4, engine='all_ranks')`, default tokens"
        f"{'' if args.tokens is None else f' overridden to {args.tokens}'}, OLMoE expert shapes, bf16; GPU {args.gpu}'s "
        f"worker throttled by {c.throttle}"
        + (f" (CPU quota {args.cores:g} of a core)" if c.throttle == "cgroup" else " (10 ms run / 10 ms stopped)")
        + f"; its own slowdown (expert FFN stage, throttled / healthy) {c.own_slowdown:.2f}x. Each sweep: Phase 1 on "
        f"the best cover, repeats {REPEATS}, then `drilldown_method: evidence`.\n"
        f"Command: `.venv/bin/python -m bench.external_fault_sweep --sweeps {args.sweeps} --gpu {args.gpu} "
        f"--cores {args.cores:g} --how {args.how}`.\n\n"
        f"| sweeps | named (gpu:{args.gpu} and nothing else) | wrong (something else blamed) | missed |\n|---|---|---|---|\n"
        f"| {c.sweeps} | {c.named} | {c.wrong} | {c.missed} |\n\n"
        f"| sweep | blamed |\n|---|---|\n{rows}\n"
    )
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
