"""Localize a rank throttled from outside, on a real ``all_ranks`` pool, with the sequential drill-down.

The fault is not injected by FaultSense: one worker process of a
``LocalExecutor(8, 4, engine="all_ranks")`` (OLMoE expert shapes, bf16) is held to a CPU
quota by a cgroup v1 ``cpu`` controller (SIGSTOP/SIGCONT duty cycle where no cgroup is
writable; :mod:`bench._outside_throttle`), and every rank joins every probe's forward, as in
vLLM expert parallelism. Each sweep is Phase 1 on the best cover plus the sequential
drill-down (``drilldown_method: sequential``, docs/verdicts.md; the sweep's index seeds its
measurement orders). A sweep is ``named`` when the
throttled GPU is blamed and nothing else, ``wrong`` when any other component is blamed,
``missed`` otherwise (nothing blamed, or only inconclusive verdicts).

The slow rank's own slowdown is measured as in ``bench/bench_ep_contrast.py``: its
expert-FFN stage's wall time per CPU second of its thread, throttled over healthy (probes
holding it); the FFN stage's wall-time ratio is reported beside it. By default the quota is
calibrated so that this own slowdown is ``--target-own`` (2: the rank at ~2x its CPU time);
``--cores`` fixes it instead.

Run: ``.venv/bin/python -m bench.bench_external_fault_sweep [--sweeps 10] [--target-own 2 | --cores 0.1]
[--gpu 5]``; writes bench/results/external_fault.md (``--out``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bench._outside_throttle import throttle
from bench.bench_ep_contrast import calibrate_quota, own_stretch
from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import Localization, localize
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
    own_slowdown: float  # CPU-time based: FFN-stage stretch throttled / healthy
    throttle: str
    blamed: tuple[tuple[str, ...], ...]  # per sweep, the components blamed
    own_wall: float = float("nan")  # FFN-stage wall time throttled / healthy
    cores: float | None = None  # the cgroup quota, CPUs
    own_after: float = float("nan")  # own slowdown measured again after the sweeps
    ends: tuple[str, ...] = ()  # per sweep, what Phase 1 and the verdict on the GPU were (:func:`sweep_end`)


def sweep_end(loc: Localization, gpu: int) -> str:
    """One line on how a sweep ended for ``gpu``: Phase 1's suspects (of the cover's probes,
    and how many of them hold ``gpu``), whether the sweep was judged ``replica_degraded`` or
    anchored, the slowest suspect's latency over the baseline, and the verdict on ``gpu``
    (status, confidence, reason) or ``no verdict``."""
    p1 = loc.phase1
    suspects = [p1.records[i] for i in p1.suspect_probes]
    holding = sum(gpu in r.gpus for r in suspects)
    lat = [r.latency_ms for r in suspects if r.latency_ms is not None]
    worst = f", worst {max(lat) / p1.baseline_ms:.2f}x baseline" if lat and p1.baseline_ms else ""
    flags = "".join([", degraded" if p1.replica_degraded else "", ", anchored" if p1.anchored else ""])
    line = f"phase 1: {len(suspects)} of {len(p1.records)} suspect, {holding} hold gpu:{gpu}{worst}{flags}"
    mine = [v for v in loc.verdicts if v.gpu == gpu and v.peer_gpu is None and v.shared is None]
    if not mine:
        return f"{line}; gpu:{gpu} no verdict"
    v = mine[0]
    conf = "" if v.confidence is None else f" p={v.confidence:.2f}"
    return f"{line}; gpu:{gpu} {v.status}{conf}" + (f" ({v.reason})" if v.reason else "")


def _probe_of(gpu: int) -> tuple[int, ...]:
    return tuple(sorted({gpu, *((gpu + i) % N for i in range(1, K))}))


def _own_ffn_ms(ex: LocalExecutor, gpu: int, rounds: int = 4) -> float:
    probe = _probe_of(gpu)
    ffn: list[float] = []
    for _ in range(rounds):
        t = ex.run_traced(probe, 3)
        if t.measurement.ok:
            ffn += t.ffn_ms[gpu]
    return statistics.median(ffn)


def sweep_counts(
    sweeps: int,
    gpu: int = 5,
    cores: float | None = None,
    how: str = "auto",
    tokens: int | None = None,
    intermediate: int | None = None,
    progress: Callable[[int, tuple[str, ...], str], None] | None = None,
    target_own: float = 2.0,
) -> SweepCounts:
    """Run ``sweeps`` sequential localizations with ``gpu`` throttled from outside
    (quota ``cores``, or calibrated to an own slowdown of ``target_own`` when ``None``);
    ``progress(i, blamed, end)`` is called after each sweep (``end``: :func:`sweep_end`)."""
    layer = {"tokens": tokens, "intermediate": intermediate}  # None: the executor's default
    named = wrong = missed = 0
    blamed: list[tuple[str, ...]] = []
    ends: list[str] = []
    cover = plan_cover(N, K)
    probe = _probe_of(gpu)
    with LocalExecutor(N, K, engine="all_ranks", timeout_s=300, start_timeout_s=600, **layer) as ex:
        if cores is None:
            cores, _, _ = calibrate_quota(ex, gpu, probe, target_own, how)
        healthy_ffn, healthy_stretch = _own_ffn_ms(ex, gpu), own_stretch(ex, gpu, probe)
        with throttle(ex.worker_pids[gpu], how, cores=cores) as used:
            own_wall = _own_ffn_ms(ex, gpu) / healthy_ffn
            own = own_stretch(ex, gpu, probe) / healthy_stretch
            for i in range(sweeps):
                loc = localize(ex, cover, repeats=REPEATS, method="sequential", seed=i)
                names = tuple([f"gpu:{g}" for g in loc.faulty_gpus] + [f"link:{a}-{b}" for a, b in loc.faulty_links])
                blamed.append(names)
                ends.append(sweep_end(loc, gpu))
                if progress is not None:
                    progress(len(blamed), names, ends[-1])
                if names == (f"gpu:{gpu}",):
                    named += 1
                elif names:
                    wrong += 1
                else:
                    missed += 1
            own_after = own_stretch(ex, gpu, probe)
        own_after /= own_stretch(ex, gpu, probe)
    return SweepCounts(sweeps, named, wrong, missed, own, used, tuple(blamed), own_wall, cores, own_after, tuple(ends))


def _commit() -> str:
    """The short hash of this checkout's HEAD, or ``unknown``."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweeps", type=int, default=10)
    ap.add_argument("--gpu", type=int, default=5)
    ap.add_argument("--cores", type=float, default=None, help="fixed cgroup CPU quota of the throttled worker")
    ap.add_argument("--target-own", type=float, default=2.0, help="calibrate the quota to this own slowdown")
    ap.add_argument("--how", default="auto", choices=["auto", "cgroup", "stop"])
    ap.add_argument("--tokens", type=int, default=None, help="tokens per probe (default: the executor's)")
    ap.add_argument("--intermediate", type=int, default=None, help="expert FFN width (default: the executor's)")
    ap.add_argument("--out", type=Path, default=RESULTS / "external_fault.md")
    args = ap.parse_args()
    started, load, t0 = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.getloadavg()[0], time.monotonic()
    c = sweep_counts(
        args.sweeps,
        args.gpu,
        args.cores,
        args.how,
        args.tokens,
        args.intermediate,
        lambda i, b, h: print(f"sweep {i}: {', '.join(b) or '-'} | {h}", flush=True),
        args.target_own,
    )
    minutes = (time.monotonic() - t0) / 60
    rows = "\n".join(f"| {i + 1} | {', '.join(b) or '-'} | {h} |" for i, (b, h) in enumerate(zip(c.blamed, c.ends, strict=True)))
    text = (
        "\n## A rank throttled from outside, `all_ranks` mode, sequential drill-down (`bench/bench_external_fault_sweep.py`)\n\n"
        f"Measured {started} on this project's 2-core CPU machine (load average {load:.1f} at the start, shared "
        f"with other work), {minutes:.1f} min, commit {_commit()}: `LocalExecutor(8, 4, engine='all_ranks')`, "
        f"tokens {args.tokens or 'default'}, expert FFN width {args.intermediate or 'default'} (hidden 2048), bf16; "
        f"GPU {args.gpu}'s "
        f"worker throttled by {c.throttle}"
        + (
            f" (CPU quota {c.cores:.3g} of a core, "
            + ("fixed)" if args.cores else f"calibrated to an own slowdown of {args.target_own:g})")
            if c.throttle == "cgroup"
            else " (10 ms run / 10 ms stopped)"
        )
        + f"; its own slowdown (expert-FFN stage wall per CPU second, throttled / healthy) {c.own_slowdown:.2f}x "
        f"before the sweeps and {c.own_after:.2f}x after them (FFN stage wall time ratio {c.own_wall:.2f}x). "
        f"Each sweep: Phase 1 on the best cover, repeats {REPEATS}, then `drilldown_method: sequential`.\n"
        f"Command: `.venv/bin/python -m bench.bench_external_fault_sweep --sweeps {args.sweeps} --gpu {args.gpu} "
        + (f"--cores {args.cores:g}" if args.cores else f"--target-own {args.target_own:g}")
        + f" --how {args.how}"
        + (f" --tokens {args.tokens}" if args.tokens else "")
        + (f" --intermediate {args.intermediate}" if args.intermediate else "")
        + f"` (niceness {os.nice(0)}).\n\n"
        f"| sweeps | named (gpu:{args.gpu} and nothing else) | wrong (something else blamed) | missed |\n|---|---|---|---|\n"
        f"| {c.sweeps} | {c.named} | {c.wrong} | {c.missed} |\n\n"
        f"| sweep | blamed | how it ended |\n|---|---|---|\n{rows}\n"
    )
    print(text)
    with args.out.open("a") as out:  # earlier runs stay
        out.write(text)


if __name__ == "__main__":
    main()
