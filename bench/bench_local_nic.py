"""Sweeps of the real ``local`` workers with a slow NIC: how often the default drill-down names it.

The setting of ``tests/probe/test_local_shared_fault.py``: ``LocalExecutor(8, 4)`` on 4
"nodes" of 2 GPUs, the NIC of node 1 delaying every transfer between GPUs 2, 3 and the other
nodes by the median latency of a healthy probe, ``localize`` with ``repeats=3``, the default
suspect rule and the default (sequential) drill-down with the topology. Outcomes: exact (only
``nic:node1`` confirmed), wrong (any other component confirmed), missed (nothing confirmed).

Run: ``PYTHONPATH=. .venv/bin/python -m bench.bench_local_nic --sweeps 8``; appends to
bench/results/local_nic.{csv,md}.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time

from bench._append_results import append_results
from faultsense_pipelines.cover import plan_cover
from faultsense_pipelines.localize import localize
from faultsense_pipelines.probe.executors.local import LocalExecutor
from faultsense_pipelines.replica.topology import ReplicaTopology
from faultsense_pipelines.replica.vocabulary import Status

N, K, TOKENS, REPEATS, WANT = 8, 4, 64, 3, "nic:node1"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sweeps", type=int, default=8, help="sweeps to run")
    ap.add_argument("--tag", default="", help="label for this run in the results")
    args = ap.parse_args()
    if args.sweeps < 1:
        ap.error("--sweeps must be >= 1")
    topology = ReplicaTopology(N, gpus_per_node=2)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False).stdout.strip()
    rows = []
    with LocalExecutor(N, K, tokens=TOKENS, timeout_s=120, topology=topology) as ex:
        base = statistics.median(ex.run([0, 1, 4, 5], 5).latencies_ms)
        ex.set_injections([{"nic": 1, "delay_ms": base}])
        for s in range(args.sweeps):
            t0 = time.monotonic()
            loc = localize(ex, plan_cover(N, K), repeats=REPEATS, topology=topology)
            confirmed = sorted(v.component for v in loc.verdicts if v.status == Status.CONFIRMED)
            outcome = "exact" if confirmed == [WANT] else "missed" if not confirmed else "wrong"
            rows.append(
                {
                    "tag": args.tag or commit,
                    "sweep": s,
                    "outcome": outcome,
                    "confirmed": " ".join(confirmed),
                    "phase2_probes": loc.probes_phase2,
                    "load1": round(os.getloadavg()[0], 1),
                    "seconds": round(time.monotonic() - t0, 1),
                }
            )
            print(rows[-1], flush=True)
    _write(rows, args.tag or commit)


def _write(rows: list[dict], tag: str) -> None:
    count = {o: sum(r["outcome"] == o for r in rows) for o in ("exact", "wrong", "missed")}
    n = len(rows)
    text = (
        f"\n## run {tag}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: {n} sweeps, "
        f"load1 {min(r['load1'] for r in rows)}-{max(r['load1'] for r in rows)}\n\n"
        "| exact | wrong | missed | mean s/sweep |\n|---|---|---|---|\n"
        f"| {count['exact']}/{n} | {count['wrong']}/{n} | {count['missed']}/{n} | "
        f"{sum(r['seconds'] for r in rows) / n:.1f} |\n"
    )
    header = (
        "# Local executor sweeps with a slow NIC (bench/bench_local_nic.py)\n\n"
        "8 worker processes on 4 nodes of 2 GPUs, node 1's NIC delayed; repeats 3, default rule and\n"
        "drill-down. exact: only nic:node1 confirmed; wrong: anything else confirmed; missed: nothing.\n"
    )
    append_results("local_nic", rows, text, header)


if __name__ == "__main__":
    main()
