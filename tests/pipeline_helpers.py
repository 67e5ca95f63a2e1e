"""Shared set-up of the pipeline tests: a small simulated fleet, a real Dagster instance, sweeps."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import dagster as dg

from faultsense_pipelines.definitions import SWEEP_JOB, build_definitions

HOUR = "2026-11-30-08:00"
HOURS = ["2026-11-30-05:00", "2026-11-30-06:00", "2026-11-30-07:00"]

#: Two small simulated replicas: one with a slow GPU (5, x2.0) and a slow link (1-9, x1.8),
#: one healthy. The expected verdicts are the injected faults themselves.
SMALL_FLEET = """
ledger: {ledger}
replicas:
  - name: sim-faulty
    gpus: 16
    probe_size: 4
    executor: simulated
    simulated: {{faults: [{{gpu: 5, slowdown: 2.0}}, {{link: [1, 9], slowdown: 1.8}}], noise_sigma: 0.01, seed: 4}}
  - name: sim-healthy
    gpus: 16
    probe_size: 4
    executor: simulated
    simulated: {{noise_sigma: 0.01, seed: 5}}
"""


def write_fleet(tmp_path: Path, text: str = SMALL_FLEET) -> tuple[Path, Path]:
    """Write a fleet file whose ledger is ``tmp_path/ledger``; return (fleet path, ledger path)."""
    ledger = tmp_path / "ledger"
    path = tmp_path / "fleet.yaml"
    path.write_text(text.format(ledger=ledger))
    return path, ledger


def add_replicas(instance: dg.DagsterInstance, defs: dg.Definitions) -> None:
    """Add the fleet's replica partitions (what the fleet sensor does)."""
    fleet = defs.resources["fleet"].load()
    instance.add_dynamic_partitions("replica", fleet.names)


def sweep(
    defs: dg.Definitions, instance: dg.DagsterInstance, replica: str, hour: str = HOUR, **config
) -> dg.ExecuteInProcessResult:
    """One in-process run of the sweep job for (hour, replica)."""
    run_config = {"ops": {op: {"config": config} for op in ("phase1_probe_run", "phase2_drilldown")}} if config else None
    return defs.resolve_job_def(SWEEP_JOB).execute_in_process(
        instance=instance,
        partition_key=dg.MultiPartitionKey({"hour": hour, "replica": replica}),
        run_config=run_config,
        raise_on_error=False,
    )


def skipped_steps(result: dg.ExecuteInProcessResult) -> set[str]:
    return {e.step_key for e in result.all_events if e.is_step_skipped}


def new_defs(tmp_path: Path, text: str = SMALL_FLEET) -> tuple[dg.Definitions, Path]:
    path, ledger = write_fleet(tmp_path, text)
    return build_definitions(path), ledger


def stop_process_group(
    proc: subprocess.Popen,
    *,
    term_s: float = 30,
    kill_s: float = 10,
    interrupt_s: float | None = None,
    poll_s: float = 0.5,
) -> bool:
    """Stop ``proc`` and every process of its process group (started with
    ``start_new_session=True``, so the group id is ``proc.pid``).

    Sends SIGTERM to the group and waits up to ``term_s`` seconds for the whole group to be
    gone, then SIGKILL and up to ``kill_s`` seconds. With ``interrupt_s``, first SIGINT to the
    leader alone (``dagster dev``'s clean shutdown, which stops its own children) and up to
    ``interrupt_s`` seconds. The group counts as gone when ``os.killpg(pgid, 0)`` raises
    :class:`ProcessLookupError`; ``proc`` is polled (reaped) every ``poll_s`` seconds, since a
    zombie leader keeps the group alive.

    Returns whether the group is gone. Raises nothing for a process that already exited.
    """
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        proc.poll()
        return True
    steps: list[tuple[signal.Signals, float]] = [(signal.SIGTERM, term_s), (signal.SIGKILL, kill_s)]
    if interrupt_s is not None:
        steps.insert(0, (signal.SIGINT, interrupt_s))
    for sig, wait_s in steps:
        with contextlib.suppress(ProcessLookupError):
            if sig == signal.SIGINT:
                os.kill(proc.pid, sig)
            else:
                os.killpg(pgid, sig)
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            proc.poll()
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return True
            time.sleep(poll_s)
    return False
